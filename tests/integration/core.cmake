# Integration tests for the foundation, against the real binary: the ONNX
# Runtime version lock, the CLI seed, the layering of the tree and the
# pinned Debian packages.
at_script_test(ort_version_lock tests/integration/ort_version_lock.sh)
at_script_test(cli_seed tests/integration/cli_seed.sh)
at_script_test(layering tests/integration/layering.sh)
# The installed Debian packages are the versions scripts/deps.txt pins.
at_script_test(deps_pinned tests/integration/deps_pinned.sh)
# libanytime.so exports exactly the public API (AT_API in include/anytime).
at_script_test(exports tests/integration/exports.sh $<TARGET_FILE:anytime_shared>)
# The executable's malloc: mimalloc when linked (AT_MIMALLOC, not with
# sanitizers), and ONNX Runtime's allocations go through it.
at_script_test(malloc tests/integration/malloc.sh ${AT_MIMALLOC_LINKED})
