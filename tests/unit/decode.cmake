# Unit tests for src/decode: the model-free parts (arena, admission, eviction,
# fits, sampler, batch choice) and, on the committed default decoder, token
# identity of the arena path against the present-feedback reference,
# identity under preemption and recompute, and the scheduler's bounds.
at_unit_test(test_decode_parts tests/unit/test_decode_parts.c)
at_unit_test(test_decode_model tests/unit/test_decode_model.c)
at_unit_test(test_decoder_reference tests/unit/test_decoder_reference.c)
# The same test on the default chat model (models/chat, tools/train/train_chat.sh):
# its reference_outputs.json holds rendered ChatML prompts and their recorded
# greedy continuations; the test takes the model directory as a parameter.
add_test(NAME test_chat_reference COMMAND test_decoder_reference)
set_tests_properties(test_chat_reference PROPERTIES
                     ENVIRONMENT "${AT_TEST_ENV};ANYTIME_DECODER_MODEL=${PROJECT_SOURCE_DIR}/models/chat"
                     LABELS unit)
# Decoders in the layouts of users' exports (tests/data/models/decoders,
# tools/testmodels/make_decoder_standins.py): GPT-2 without position_ids,
# Qwen2 with grouped-query attention and rotary positions, each against
# numpy's logits and greedy tokens.
at_unit_test(test_decoder_standins tests/unit/test_decoder_standins.c)
