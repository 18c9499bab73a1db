#!/usr/bin/env bash
# bench/decode_compare.sh — the generation lane's decode at a realistic size
# against the physical limit and the peer, on the same graph:
#   lane: build/bench/bench_decode --only steady (anytime's at_decoder_step
#         over the KV arena, the past carried between steps, greedy pick);
#   gen:  build/bench/bench_decode --only generator (the same point through
#         the whole generator: scheduler thread, prefix cache holding the
#         shared prompt, sampling, callbacks);
#   bare: build/bench/bare_decode (plain ONNX Runtime with IO binding, the
#         presents bound as the next pasts; shares no code with anytime);
#   node: bench/decode/node_decode.js (onnxruntime-node 1.30, presents fed
#         back, as a Node user writes it);
#   gqa:  (qwen2-0.5b only) build/bench/bare_decode --gqa over the same
#         shape written with ONNX Runtime's fused GroupQueryAttention and
#         one past/present buffer per layer (tools/testmodels/
#         make_gqa_decoder.py, random weights of its own): what the plain
#         ORT loop reaches when the graph is in that form;
#   gen GQA: the whole generator on that GQA graph (bench_decode --only
#         generator; the decoder runs the form with the buffer shared).
# The model: tools/testmodels/decoder_sizes.sh SIZE (random weights at the
# real shape, built once into a cache). Per (batch, cached) point the loops
# run one after the other, each with its own warm-up and PASSES passes of
# STEPS steps; tokens/s = batch / median step. Ratios are within the point.
# Writes OUT.csv (every point, medians and ranges) and, with gnuplot,
# OUT.png (tokens/s against batch, one panel per cached length).
#
#   bench/decode_compare.sh [SIZE (qwen2-0.5b)] [VARIANT (int8)]
#   env: BATCHES ("1 4 8 16"), CACHED ("16 256 1024"), STEPS (8), PASSES (3),
#        THREADS (1: ORT intra-op threads in all),
#        GQA (1 for qwen2-0.5b, else 0: the gqa column),
#        OUT (results/decode_compare_SIZE_VARIANT)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
size=${1:-qwen2-0.5b} variant=${2:-int8}
batches=${BATCHES:-1 4 8 16} cached=${CACHED:-16 256 1024}
steps=${STEPS:-8} passes=${PASSES:-3} threads=${THREADS:-1}
out=${OUT:-$here/results/decode_compare_${size}_$variant}
lane=$here/build/bench/bench_decode bare=$here/build/bench/bare_decode
for b in "$lane" "$bare"; do [ -x "$b" ] || { echo "decode_compare: no $b (build with -DAT_BUILD_BENCH=ON)" >&2; exit 1; }; done
. "$here/tests/node/ensure_modules.sh"
ensure_node_modules fail
dir=$("$here/tools/testmodels/decoder_sizes.sh" "$size")
onnx=$dir/onnx/model.onnx
[ "$variant" = int8 ] && onnx=$dir/onnx/model_quantized.onnx
gqa=${GQA:-$([ "$size" = qwen2-0.5b ] && echo 1 || echo 0)} gqa_onnx=
if [ "$gqa" = 1 ]; then
  gdir=$("${PYTHON:-/usr/bin/python3}" "$here/tools/testmodels/make_gqa_decoder.py" --size "$size" | tail -1)
  gqa_onnx=$gdir/onnx/model.onnx
  [ "$variant" = int8 ] && gqa_onnx=$gdir/onnx/model_quantized.onnx
  # the lane opens it as a model directory: the stand-in's config and
  # tokenizer (the same shape) beside the GQA graphs
  for f in config.json generation_config.json tokenizer.json tokenizer_config.json; do
    [ -f "$gdir/$f" ] || cp "$dir/$f" "$gdir/$f"
  done
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# decode_compare: $(date -u '+%Y-%m-%d %H:%M') UTC, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx_vnni|amx_int8)$' | tr '\n' ' ')"
echo "# $size $variant ($onnx), $steps steps x $passes passes, $threads ORT thread(s), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "batch,cached,lane,lane_lo,lane_hi,gen,gen_lo,gen_hi,bare,bare_lo,bare_hi,node,node_lo,node_hi,gqa,gqa_lo,gqa_hi,gengqa,gengqa_lo,gengqa_hi" > "$out.csv"
csv() { grep '^csv,' | tail -1; }
printf '| batch | cached | lane tokens/s | generator tokens/s | bare tokens/s | node tokens/s | bare GQA tokens/s | generator GQA tokens/s | lane / bare | generator / bare | generator / node | bare GQA / bare | generator GQA / bare GQA | generator GQA / node |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n' > "$tmp/table"
# the model's positions (config.json): a point past them is skipped, said
positions=$(grep -oE '"(n_positions|max_position_embeddings)": *[0-9]+' "$dir/config.json" | head -1 | grep -oE '[0-9]+$' || echo 0)
for c in $cached; do
  if [ "$positions" -gt 0 ] && [ $((c + steps + 2)) -gt "$positions" ]; then
    echo "# skipped: cached $c + $steps steps passes the model's $positions positions" | tee -a "$tmp/table"
    continue
  fi
  for b in $batches; do
    l=$("$lane" "$dir" --variant "$variant" --threads "$threads" --passes "$passes" --only steady \
          --batch "$b" --cached "$c" --steps "$steps" | csv)
    g=$("$lane" "$dir" --variant "$variant" --threads "$threads" --passes "$passes" --only generator \
          --batch "$b" --cached "$c" --steps "$steps" | csv)
    r=$("$bare" --model "$onnx" --batch "$b" --cached "$c" --steps "$steps" --passes "$passes" \
          --threads "$threads" | csv)
    n=$(node "$here/bench/decode/node_decode.js" "$onnx" "$b" "$c" "$steps" "$passes" "$threads" | csv)
    q=csv,$b,$c,0,0,0,0 gg=csv,$b,$c,0,0,0,0
    if [ -n "$gqa_onnx" ]; then
      q=$("$bare" --model "$gqa_onnx" --gqa $((c + steps + 8)) --batch "$b" --cached "$c" \
            --steps "$steps" --passes "$passes" --threads "$threads" | csv)
      gg=$("$lane" "$gdir" --variant "$variant" --threads "$threads" --passes "$passes" --only generator \
            --batch "$b" --cached "$c" --steps "$steps" | csv)
    fi
    echo "lane $l"; echo "gen $g"; echo "bare $r"; echo "node $n"; echo "gqa $q"; echo "gen-gqa $gg"
    echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
    awk -v l="$l" -v g="$g" -v r="$r" -v n="$n" -v q="$q" -v gg="$gg" -v table="$tmp/table" 'BEGIN {
      split(l, L, ","); split(g, G, ","); split(r, R, ","); split(n, N, ","); split(q, Q, ",");
      split(gg, X, ",");
      printf "%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", L[2], L[3], L[5], L[6], L[7],
        G[5], G[6], G[7], R[5], R[6], R[7], N[5], N[6], N[7], Q[5], Q[6], Q[7], X[5], X[6], X[7];
      printf "| %d | %d | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %s | %s | %.2f | %.2f | %.2f | %s | %s | %s |\n",
        L[2], L[3], L[5], L[6], L[7], G[5], G[6], G[7], R[5], R[6], R[7], N[5], N[6], N[7],
        (Q[5] > 0 ? sprintf("%.1f (%.1f–%.1f)", Q[5], Q[6], Q[7]) : "—"),
        (X[5] > 0 ? sprintf("%.1f (%.1f–%.1f)", X[5], X[6], X[7]) : "—"),
        L[5] / R[5], G[5] / R[5], G[5] / N[5], (Q[5] > 0 ? sprintf("%.2f", Q[5] / R[5]) : "—"),
        (X[5] > 0 && Q[5] > 0 ? sprintf("%.2f", X[5] / Q[5]) : "—"),
        (X[5] > 0 ? sprintf("%.2f", X[5] / N[5]) : "—") >> table }' >> "$out.csv"
  done
done
cat "$tmp/table"
echo "# csv: $out.csv"
if command -v gnuplot >/dev/null; then
  set -- $cached
  np=$#
  {
    echo "set terminal pngcairo size $((380 * np)),400 font ',10'"
    echo "set output '$out.png'"
    echo "set datafile separator ','"
    echo "set multiplot layout 1,$np title \"$size $variant, $threads ORT thread, tokens/s by batch (median, bars: range of $passes passes)\""
    echo "set xlabel 'batch'; set ylabel 'tokens/s'; set key top left; set grid; set logscale x 2"
    for c in $cached; do
      echo "set title 'cached $c'"
      f="'$out.csv' u (\$2 == $c ? \$1 : 1/0)"
      g=
      [ -n "$gqa_onnx" ] && g=", $f:15:16:17 w yerrorlines dt 2 lc rgb 'black' t 'bare ORT, GQA graph', $f:18:19:20 w yerrorlines dt 3 lc rgb 'red' t 'generator, GQA graph'"
      echo "plot $f:3:4:5 w yerrorlines t 'lane step', $f:6:7:8 w yerrorlines t 'generator', $f:9:10:11 w yerrorlines t 'bare ORT (IO binding)', $f:12:13:14 w yerrorlines t 'onnxruntime-node'$g"
    done
    echo "unset multiplot"
  } > "$tmp/plot.gp"
  gnuplot "$tmp/plot.gp" && echo "# figure: $out.png"
fi
