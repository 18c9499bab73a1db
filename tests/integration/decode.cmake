# Generation (src/decode) against independent references.
# decoder_exports: decoders made by torch.onnx.export in the layouts of
# Llama, Mistral, Qwen2, GPT-2 and Phi exports (tests/data/models/
# decoder-exports) token for token against onnxruntime-node's present-fed
# loop and a float64 recompute, through `anytime generate` and served.
# Needs Node and npm; fails (never skips) when the reference cannot run.
at_script_test(decode_exports tests/integration/decoder_exports.sh)
set_tests_properties(decode_exports PROPERTIES TIMEOUT 600 LABELS "integration;reference")
