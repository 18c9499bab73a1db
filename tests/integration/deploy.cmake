# Integration tests for deployment (deploy/): nginx in front of several
# servers, the Kubernetes/KServe manifests, a real Prometheus scraping.
at_script_test(cluster_nginx tests/integration/cluster_nginx.sh)
add_executable(yaml2json "${PROJECT_SOURCE_DIR}/tests/integration/yaml2json.c")
target_link_libraries(yaml2json PRIVATE PkgConfig::JANSSON PkgConfig::YAML)
at_script_test(deploy_manifests tests/integration/deploy_manifests.sh)
set_property(TEST deploy_manifests APPEND PROPERTY ENVIRONMENT "YAML2JSON_BIN=$<TARGET_FILE:yaml2json>")
# A real Prometheus scraping the server: promtool on the exposition and the shipped rules, counters read back.
at_script_test(prometheus tests/integration/prometheus.sh)
