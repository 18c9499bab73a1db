#!/usr/bin/env bash
# tests/integration/gqa_decoder.sh BARE_DECODE — the GroupQueryAttention
# form bench/decode_compare.sh measures (tools/testmodels/make_gqa_decoder.py)
# computes a decoder, and the bare loop drives it:
#   - the tiny size, fp32, prefilled and decoded 8 steps at batch 2 through
#     onnxruntime-node with one past/present buffer per layer shared in
#     place (tools/testmodels/check_gqa_decoder.js): every step's logits
#     within 1e-3 relative of a float64 numpy decoder recomputing the whole
#     sequence (tools/testmodels/check_gqa_reference.py), the same greedy
#     tokens, the new keys written into the shared buffer and nothing past
#     them;
#   - `bare_decode --gqa` runs it (int8) and prints its csv line (not a
#     timing).
set -euo pipefail
bare=${1:?usage: gqa_decoder.sh BARE_DECODE}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/node/ensure_modules.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
ensure_node_modules fail
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"${PYTHON:-/usr/bin/python3}" "$root/tools/testmodels/make_gqa_decoder.py" --size tiny --out "$W/tiny" >/dev/null ||
  fail "make_gqa_decoder.py --size tiny"
node "$root/tools/testmodels/check_gqa_decoder.js" "$W/tiny" > "$W/check.txt" 2>&1 ||
  { cat "$W/check.txt" >&2; fail "the GQA graph against the float64 decoder"; }
tail -1 "$W/check.txt"
"$bare" --model "$W/tiny/onnx/model_quantized.onnx" --gqa 24 --batch 2 --cached 5 --steps 4 --passes 2 \
  > "$W/bare.txt" 2>&1 || { cat "$W/bare.txt" >&2; fail "bare_decode --gqa"; }
grep -qE '^csv,2,5,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+$' "$W/bare.txt" || { cat "$W/bare.txt" >&2; fail "no csv line"; }
echo "PASS: GQA form checked; bare_decode --gqa: $(grep '^csv,' "$W/bare.txt")"
