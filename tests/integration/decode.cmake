# Generation (src/decode) against independent references.
# decoder_exports: decoders made by torch.onnx.export in the layouts of
# Llama, Mistral, Qwen2, GPT-2 and Phi exports (tests/data/models/
# decoder-exports) token for token against onnxruntime-node's present-fed
# loop and a float64 recompute, through `anytime generate` and served.
# Needs Node and npm; fails (never skips) when the reference cannot run.
at_script_test(decode_exports tests/integration/decoder_exports.sh)
set_tests_properties(decode_exports PROPERTIES TIMEOUT 600 LABELS "integration;reference")
# The generation routes and commands against the real server and binary:
# /v1/completions (streaming, cancellation, choices), the fp32/int8 lanes,
# EOS handling, and tokens and log-probabilities against onnxruntime-node.
at_script_test(serve_completions tests/integration/serve_completions.sh)
at_script_test(serve_gen_variants tests/integration/serve_gen_variants.sh)
at_script_test(generate_eos tests/integration/generate_eos.sh)
at_script_test(gen_reference tests/integration/gen_reference.sh)
set_tests_properties(gen_reference PROPERTIES LABELS "integration;reference")
