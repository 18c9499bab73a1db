# Unit tests for src/model: resolution (hub cache, local paths, listing) and
# the compiled-artifact cache (SHA-256, keys, atomicity, corruption, identity).
at_unit_test(test_model_resolve tests/unit/test_model_resolve.c)
at_unit_test(test_model_cache tests/unit/test_model_cache.c)
# What the export files say: pooling, token limits, problem type, Dense.
at_unit_test(test_model_export tests/unit/test_model_export.c)
# The same SHA-256 vectors through nettle's plain x86-64 code (the default
# run uses SHA-NI where the CPU has it; an empty NETTLE_FAT_OVERRIDE turns
# every optional CPU feature off in Debian's "fat" nettle).
add_test(NAME test_model_sha256_portable COMMAND test_model_cache test_sha256_vectors)
set_tests_properties(test_model_sha256_portable PROPERTIES
  ENVIRONMENT "${AT_TEST_ENV};NETTLE_FAT_OVERRIDE=;NETTLE_FAT_VERBOSE=1" LABELS unit
  FAIL_REGULAR_EXPRESSION "libnettle: using sha_ni")
# config.json, refs and sidecars from buffers, with the regressions their
# fuzz drivers found.
at_unit_test(test_model_parsers tests/unit/test_model_parsers.c)
