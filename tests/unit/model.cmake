# Unit tests for src/model: resolution (hub cache, local paths, listing) and
# the compiled-artifact cache (SHA-256, keys, atomicity, corruption, identity).
at_unit_test(test_model_resolve tests/unit/test_model_resolve.c)
at_unit_test(test_model_cache tests/unit/test_model_cache.c)
