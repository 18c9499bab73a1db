# Integration tests for the encoder server (src/serve) over real HTTP and
# gRPC: routes, conformance, clients, limits, faults, drain, soak.
at_script_test(serve_routes tests/integration/serve_routes.sh)
# docs/api.md's conformance tables against the real server: unknown members refused
at_script_test(api_conformance tests/integration/api_conformance.sh)
at_script_test(serve_tei tests/integration/serve_tei.sh)
add_executable(http_concurrency "${PROJECT_SOURCE_DIR}/tests/integration/http_concurrency.c")
target_link_libraries(http_concurrency PRIVATE PkgConfig::JANSSON Threads::Threads m)
at_script_test(serve_concurrency tests/integration/serve_concurrency.sh)
set_property(TEST serve_concurrency APPEND PROPERTY ENVIRONMENT
             "HTTP_CONCURRENCY_BIN=$<TARGET_FILE:http_concurrency>")
# A wave of requests ready at once on one HTTP thread's keep-alive connections.
add_executable(conn_wave "${PROJECT_SOURCE_DIR}/tests/integration/conn_wave.c")
at_script_test(serve_conn_wave tests/integration/serve_conn_wave.sh)
set_property(TEST serve_conn_wave APPEND PROPERTY ENVIRONMENT "CONN_WAVE_BIN=$<TARGET_FILE:conn_wave>")
at_script_test(clients tests/integration/clients.sh)
# KServe V2 binary tensor data + versions routes, by an encoder written from the spec.
at_script_test(serve_v2_binary tests/integration/serve_v2_binary.sh)
# The KServe V2 gRPC service through @grpc/grpc-js (tests/clients/grpc_v2.mjs).
at_script_test(serve_grpc tests/integration/serve_grpc.sh)
at_script_test(serve_model tests/integration/serve_model.sh)
at_script_test(serve_drain tests/integration/serve_drain.sh)
at_script_test(serve_export tests/integration/serve_export.sh)
# The server's numbers on every route against an independent reference
# (npm tokenizers + onnxruntime-node, tests/reference/http_reference.js).
at_script_test(http_reference tests/integration/http_reference.sh)
set_tests_properties(http_reference PROPERTIES LABELS "integration;reference")
at_script_test(serve_auth tests/integration/serve_auth.sh)
at_script_test(serve_accesslog tests/integration/serve_accesslog.sh)
at_script_test(serve_limits tests/integration/serve_limits.sh)
at_script_test(serve_flags tests/integration/serve_flags.sh)
at_script_test(serve_faults tests/integration/serve_faults.sh)
# Bounded soak: 3x capacity open loop + retrying closed loop, exactly-once accounting, RSS bound.
at_script_test(serve_soak tests/integration/serve_soak.sh)
# Hostile input (docs/security.md): each request gets its documented status and the server keeps serving.
at_script_test(serve_hostile tests/integration/serve_hostile.sh)
at_script_test(serve_bad_files tests/integration/serve_bad_files.sh)
