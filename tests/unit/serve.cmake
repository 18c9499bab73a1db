# Unit tests for src/serve's pieces that need no running server: the
# configuration's one writer against its parser, and the held-refusal rule.
at_unit_test(test_serve_config tests/unit/test_serve_config.c)
at_unit_test(test_serve_hold tests/unit/test_serve_hold.c)
# The pure request-body parsers (TEI, OpenAI, V2) and base64, with the
# regressions their fuzz drivers found.
at_unit_test(test_serve_parsers tests/unit/test_serve_parsers.c)
# Incremental detokenisation of generated ids against decoding them at once.
at_unit_test(test_serve_detok tests/unit/test_serve_detok.c)
# The Prometheus renderer: protocol labels, extra lines of any length.
at_unit_test(test_serve_metrics tests/unit/test_serve_metrics.c)
# The error bodies of each protocol, read back with jansson.
at_unit_test(test_serve_errors tests/unit/test_serve_errors.c)
# API keys and the Bearer check.
at_unit_test(test_serve_auth tests/unit/test_serve_auth.c)
# The route table against docs/api.md, both ways; which routes need no key.
at_unit_test(test_serve_routes tests/unit/test_serve_routes.c)
# The KServe V2 binary tensor data extension's parsing (v2_req.c).
at_unit_test(test_serve_v2_binary tests/unit/test_serve_v2_binary.c)
