# Unit tests for src/core (with onnx_meta), src/ort and src/engine (with profile.c).
at_unit_test(test_status tests/unit/test_status.c)
at_unit_test(test_onnx_meta tests/unit/test_onnx_meta.c)
at_unit_test(test_session tests/unit/test_session.c)
at_unit_test(test_engine tests/unit/test_engine.c)
at_unit_test(test_batcher tests/unit/test_batcher.c)
at_unit_test(test_batch_bucket tests/unit/test_batch_bucket.c)
at_unit_test(test_profile tests/unit/test_profile.c)
