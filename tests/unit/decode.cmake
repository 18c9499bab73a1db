# Unit tests for src/decode: the model-free parts (arena, admission, eviction,
# fits, sampler, batch choice) and, on the committed default decoder, token
# identity of the arena path against the present-feedback reference,
# identity under preemption and recompute, and the scheduler's bounds.
at_unit_test(test_decode_parts tests/unit/test_decode_parts.c)
at_unit_test(test_decode_model tests/unit/test_decode_model.c)
at_unit_test(test_decoder_reference tests/unit/test_decoder_reference.c)
