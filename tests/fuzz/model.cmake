# libFuzzer drivers for what model resolution and the artifact cache read
# besides graphs: config.json, hub refs files, the cache's sidecars.
at_fuzz_driver(fuzz_model_config tests/fuzz/fuzz_model_config.c)
at_fuzz_driver(fuzz_artifact_sidecar tests/fuzz/fuzz_artifact_sidecar.c)
