# Integration tests for model resolution and the compiled-artifact cache:
# `anytime ls`, `anytime run` and `anytime cache` on a test hub cache.
at_script_test(model_cli tests/integration/model_cli.sh)
# No test writes into the user's caches (HOME pointed at an empty directory).
at_script_test(cache_isolation tests/integration/cache_isolation.sh)
# The realistic-size stand-in maker (tools/testmodels/size_standins.sh) on
# its tiny size, in the export layout.
at_script_test(size_standins tests/integration/size_standins.sh)
