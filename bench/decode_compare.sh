#!/usr/bin/env bash
# bench/decode_compare.sh — the generation lane's decode step at a realistic
# size against the physical limit and the peer, on the same graph:
#   lane: build/bench/bench_decode --only steady (anytime's at_decoder_step
#         over the KV arena, the past carried between steps, greedy pick);
#   bare: build/bench/bare_decode (plain ONNX Runtime with IO binding, the
#         presents bound as the next pasts; shares no code with anytime);
#   node: bench/decode/node_decode.js (onnxruntime-node 1.30, presents fed
#         back, as a Node user writes it).
# The model: tools/testmodels/decoder_sizes.sh SIZE (random weights at the
# real shape, built once into a cache). Per (batch, cached) point the three
# run one after the other, each with its own warm-up and PASSES passes of
# STEPS steps; tokens/s = batch / median step. Ratios are within the point.
#
#   bench/decode_compare.sh [SIZE (qwen2-0.5b)] [VARIANT (int8)]
#   env: BATCHES ("1 8"), CACHED ("256 1024"), STEPS (8), PASSES (3),
#        THREADS (1: ORT intra-op threads in all three)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
size=${1:-qwen2-0.5b} variant=${2:-int8}
batches=${BATCHES:-1 8} cached=${CACHED:-256 1024}
steps=${STEPS:-8} passes=${PASSES:-3} threads=${THREADS:-1}
lane=$here/build/bench/bench_decode bare=$here/build/bench/bare_decode
for b in "$lane" "$bare"; do [ -x "$b" ] || { echo "decode_compare: no $b (build with -DAT_BUILD_BENCH=ON)" >&2; exit 1; }; done
. "$here/tests/node/ensure_modules.sh"
ensure_node_modules fail
dir=$("$here/tools/testmodels/decoder_sizes.sh" "$size")
onnx=$dir/onnx/model.onnx
[ "$variant" = int8 ] && onnx=$dir/onnx/model_quantized.onnx
echo "# decode_compare: $(date -u '+%Y-%m-%d %H:%M') UTC, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# $size $variant ($onnx), $steps steps x $passes passes, $threads ORT thread(s), load: $(cut -d' ' -f1-3 /proc/loadavg)"
csv() { grep '^csv,' | tail -1; }
printf '| batch | cached | lane tokens/s | bare tokens/s | node tokens/s | lane / bare | lane / node |\n|---|---|---|---|---|---|---|\n' > /tmp/decode_compare.$$
for c in $cached; do
  for b in $batches; do
    l=$("$lane" "$dir" --variant "$variant" --threads "$threads" --passes "$passes" --only steady \
          --batch "$b" --cached "$c" --steps "$steps" | csv)
    r=$("$bare" --model "$onnx" --batch "$b" --cached "$c" --steps "$steps" --passes "$passes" \
          --threads "$threads" | csv)
    n=$(node "$here/bench/decode/node_decode.js" "$onnx" "$b" "$c" "$steps" "$passes" "$threads" | csv)
    echo "lane $l"; echo "bare $r"; echo "node $n"
    awk -F, -v l="$l" -v r="$r" -v n="$n" 'BEGIN {
      split(l, L, ","); split(r, R, ","); split(n, N, ",");
      printf "| %d | %d | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f | %.2f |\n",
        L[2], L[3], L[5], L[6], L[7], R[5], R[6], R[7], N[5], N[6], N[7], L[5] / R[5], L[5] / N[5] }' \
      >> /tmp/decode_compare.$$
  done
done
cat /tmp/decode_compare.$$
rm -f /tmp/decode_compare.$$
