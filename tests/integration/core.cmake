# Integration tests for the foundation: the ONNX Runtime version lock and the
# CLI seed, against the real binary.
at_script_test(ort_version_lock tests/integration/ort_version_lock.sh)
at_script_test(cli_seed tests/integration/cli_seed.sh)
