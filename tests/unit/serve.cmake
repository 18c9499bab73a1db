# Unit tests for src/serve's pieces that need no running server: the
# configuration's one writer against its parser.
at_unit_test(test_serve_config tests/unit/test_serve_config.c)
