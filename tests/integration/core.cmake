# Integration tests for the foundation: the ONNX Runtime version lock and the
# CLI seed, against the real binary.
at_script_test(ort_version_lock tests/integration/ort_version_lock.sh)
at_script_test(cli_seed tests/integration/cli_seed.sh)
at_script_test(serve_routes tests/integration/serve_routes.sh)
# docs/api.md's conformance tables against the real server: unknown members refused
at_script_test(api_conformance tests/integration/api_conformance.sh)
at_script_test(serve_tei tests/integration/serve_tei.sh)
add_executable(http_concurrency "${PROJECT_SOURCE_DIR}/tests/integration/http_concurrency.c")
target_link_libraries(http_concurrency PRIVATE PkgConfig::JANSSON Threads::Threads m)
at_script_test(serve_concurrency tests/integration/serve_concurrency.sh)
set_property(TEST serve_concurrency APPEND PROPERTY ENVIRONMENT
             "HTTP_CONCURRENCY_BIN=$<TARGET_FILE:http_concurrency>")
at_script_test(clients tests/integration/clients.sh)
# KServe V2 binary tensor data + versions routes, by an encoder written from the spec.
at_script_test(serve_v2_binary tests/integration/serve_v2_binary.sh)
# The KServe V2 gRPC service through @grpc/grpc-js (tests/clients/grpc_v2.mjs).
at_script_test(serve_grpc tests/integration/serve_grpc.sh)
at_script_test(profile tests/integration/profile.sh)
at_script_test(serve_model tests/integration/serve_model.sh)
at_script_test(serve_completions tests/integration/serve_completions.sh)
at_script_test(serve_gen_variants tests/integration/serve_gen_variants.sh)
at_script_test(sweep tests/integration/sweep.sh)
at_script_test(layering tests/integration/layering.sh)
at_script_test(serve_drain tests/integration/serve_drain.sh)
at_script_test(serve_export tests/integration/serve_export.sh)
# The server's numbers on every route against an independent reference
# (npm tokenizers + onnxruntime-node, tests/reference/http_reference.js).
at_script_test(http_reference tests/integration/http_reference.sh)
set_tests_properties(http_reference PROPERTIES LABELS "integration;reference")
# The installed Debian packages are the versions scripts/deps.txt pins.
at_script_test(deps_pinned tests/integration/deps_pinned.sh)
at_script_test(serve_auth tests/integration/serve_auth.sh)
at_script_test(cluster_nginx tests/integration/cluster_nginx.sh)
at_script_test(serve_accesslog tests/integration/serve_accesslog.sh)
add_executable(yaml2json "${PROJECT_SOURCE_DIR}/tests/integration/yaml2json.c")
target_link_libraries(yaml2json PRIVATE PkgConfig::JANSSON PkgConfig::YAML)
at_script_test(deploy_manifests tests/integration/deploy_manifests.sh)
set_property(TEST deploy_manifests APPEND PROPERTY ENVIRONMENT "YAML2JSON_BIN=$<TARGET_FILE:yaml2json>")
at_script_test(serve_limits tests/integration/serve_limits.sh)
at_script_test(serve_flags tests/integration/serve_flags.sh)
at_script_test(serve_faults tests/integration/serve_faults.sh)
at_script_test(generate_eos tests/integration/generate_eos.sh)
# The generation routes' tokens and log-probabilities against onnxruntime-node.
at_script_test(gen_reference tests/integration/gen_reference.sh)
set_tests_properties(gen_reference PROPERTIES LABELS "integration;reference")
# Bounded soak: 3x capacity open loop + retrying closed loop, exactly-once accounting, RSS bound.
at_script_test(serve_soak tests/integration/serve_soak.sh)
at_script_test(size_standins tests/integration/size_standins.sh)
# Hostile input (docs/security.md): each request gets its documented status and the server keeps serving.
at_script_test(serve_hostile tests/integration/serve_hostile.sh)
at_script_test(serve_bad_files tests/integration/serve_bad_files.sh)
# A real Prometheus scraping the server: promtool on the exposition and the shipped rules, counters read back.
at_script_test(prometheus tests/integration/prometheus.sh)
