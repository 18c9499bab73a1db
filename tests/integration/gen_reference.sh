#!/usr/bin/env bash
# tests/integration/gen_reference.sh — the generation routes' tokens and
# log-probabilities against an independent path (tests/reference/
# gen_reference.js: npm tokenizers, @huggingface/jinja for chat templates,
# onnxruntime-node running the same ONNX graph with its own KV cache):
#   - /v1/completions on the default decoder, fp32 graph: every logprob and
#     top-5 alternative within 1e-4; int8 graph: the same tokens, within 1e-2
#     (the two ONNX Runtime releases' int8 kernels differ by ~3e-3);
#   - /v1/chat/completions on the default chat model (models/chat), the
#     prompt rendered by @huggingface/jinja: fp32 within 1e-4, int8 the same
#     tokens within 1e-2.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
. "$ANYTIME_SOURCE_DIR/tests/node/ensure_modules.sh"
ensure_node_modules fail
ref="$ANYTIME_SOURCE_DIR/tests/reference/gen_reference.js"
models="$ANYTIME_SOURCE_DIR/models"

CFG_DIR=$(mktemp -d)
lane_config() { # model_dir variant -> a config with only the generation lane
  cat > "$CFG_DIR/gen-$2.yaml" <<YAML
generator:
  name: gen
  model: $1
  variant: $2
  threads: 1
  chunk_tokens: 64
YAML
  echo "$CFG_DIR/gen-$2.yaml"
}

start_server "$(lane_config "$models/decoder" fp32)"
node "$ref" "$BASE" gen "$models/decoder" "$models/decoder/onnx/model.onnx" completions 1e-4 ||
  fail "decoder fp32: /v1/completions differs from the reference"
stop_server
start_server "$(lane_config "$models/decoder" int8)"
node "$ref" "$BASE" gen "$models/decoder" "$models/decoder/onnx/model_quantized.onnx" completions 1e-2 ||
  fail "decoder int8: /v1/completions differs from the reference"
stop_server
start_server "$(lane_config "$models/chat" fp32)"
node "$ref" "$BASE" gen "$models/chat" "$models/chat/onnx/model.onnx" chat 1e-4 ||
  fail "chat fp32: /v1/chat/completions differs from the reference"
stop_server
start_server "$(lane_config "$models/chat" int8)"
node "$ref" "$BASE" gen "$models/chat" "$models/chat/onnx/model_quantized.onnx" chat 1e-2 ||
  fail "chat int8: /v1/chat/completions differs from the reference"
stop_server
rm -rf "$CFG_DIR"
echo "gen_reference: PASS"
