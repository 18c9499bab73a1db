#!/usr/bin/env bash
# bench/serve_compare.sh — the three-way serving comparison (issues 5 and 18),
# on several model sizes and one host, in one run, with one load tool:
#   (a) the limit: a bare ONNX Runtime Run loop at its best batch size
#       (build/bench/bare_ort, no code of anytime's, 2 threads sharing one session,
#       held-out sentences tokenised beforehand; no HTTP);
#   (b) `anytime serve` (one variant, 2 workers, 2 HTTP threads, dynamic
#       batching up to the bare loop's best batch, no admission control)
#       under wrk, closed loop;
#   (c) the peer: a minimal Node.js server on onnxruntime-node
#       (bench/peers/node-ort) under the same wrk load.
# For (b) and (c) at each concurrency: throughput (2xx answers/s), p50, p99
# (wrk), CPU per answer = the server process's utime + stime
# (/proc/PID/stat) over the pass / the 2xx answers wrk counted, and the
# server's RSS (VmRSS from /proc/PID/status after the point's passes). For
# (a): texts/s, CPU per text (getrusage over a pass / texts run) and peak
# RSS at its best batch. Each figure is the median of PASSES passes of SECS
# seconds, with the range in brackets. wrk runs on the same cores as the
# servers: the CPU per answer, not the throughput, is the fair measure of a
# server's own overhead.
#
#   bench/serve_compare.sh                 # the three default models below
#   bench/serve_compare.sh DIR VARIANT     # one model, the old way
#   env: PASSES (3), SECS (5), CONC ("1 8 32"), BATCHES ("1,2,4,8,16"),
#        MODELS: lines "label|dir|variant|passes|secs" (passes/secs may be
#        empty = PASSES/SECS), BATCH (anytime's max batch; default the bare
#        loop's best), OUT (also write the final table to this file),
#        IDLE (anytime's engine.idle_intra_op_threads; default 0 = off),
#        ANYTIME_BIN (the anytime binary; default build/anytime: another build's
#        binary, for a side-by-side of two commits)
# Default models: models/sentiment-large int8, and the MiniLM-size and
# BERT-base-size int8 stand-ins (tools/testmodels/size_standins.sh builds
# them on first use, minutes; BERT-base with passes of 4 s).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. bench/lib.sh
PASSES=${PASSES:-3}; SECS=${SECS:-5}; CONC=${CONC:-"1 8 32"}; BATCHES=${BATCHES:-1,2,4,8,16}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -f "$data" ] || bash tools/train/fetch_data.sh >/dev/null
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
if [ $# -ge 1 ]; then
  MODELS="$(basename "$1") ${2:-onnx/model_quantized.onnx}|$1|${2:-onnx/model_quantized.onnx}||"
elif [ -z "${MODELS:-}" ]; then
  mapfile -t sd < <(tools/testmodels/size_standins.sh minilm bertbase)
  MODELS="sentiment-large int8|models/sentiment-large|onnx/model_quantized.onnx||
MiniLM-L6-size int8|${sd[0]}|onnx/model_quantized.onnx||
BERT-base-size int8|${sd[2]}|onnx/model_quantized.onnx|3|4"
fi
cmake --build build --target anytime_cli bare_ort >/dev/null
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd bench/peers/node-ort && [ -d node_modules/onnxruntime-node ] || npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
node bench/peers/node-ort/make_bodies.js "$data" > "$tmp/bodies.jsonl"
tck=$(getconf CLK_TCK)

echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC')"
echo "# load before: $(uptime)"

wrk_point() { # url conc secs -> "ok_rps p50ms p99ms ok_answers" (only 2xx answers count)
  local t=2; [ "$2" -lt 2 ] && t=1
  wrk -t$t -c"$2" -d"${3}s" --latency -s bench/wrk_predict.lua "$1" -- "$tmp/bodies.jsonl" 2>/dev/null |
    awk '/Requests\/sec/ {r=$2} /requests in/ {n=$1; d=$4} /Non-2xx/ {bad=$NF} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
         function ms(x) { if (x ~ /us$/) return x/1000; if (x ~ /ms$/) return x+0; if (x ~ /s$/) return x*1000; return x }
         function secs(x) { if (x ~ /ms$/) return x/1000; if (x ~ /m$/) return x*60; return x+0 }
         END {ok = (n - bad) / secs(d); printf "%.0f %.2f %.2f %d\n", ok, ms(p50), ms(p99), n - bad}'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }            # utime + stime
rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
# median_of FMT: "median (min–max)" of the numbers on stdin (an even count:
# the mean of the middle two)
median_of() { sort -g | awk -v f="$1" '{a[NR]=$1} END {m = (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2
  printf f " (" f "–" f ")", m, a[1], a[NR]}'; }
med() { sort -g | awk '{a[NR]=$1} END {print (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}'; }

# point NAME PID URL CONC PASSES SECS: the passes of one concurrency; appends a table row
point() {
  local name=$1 pid=$2 url=$3 c=$4 np=$5 secs=$6
  : > "$tmp/r"; : > "$tmp/p50"; : > "$tmp/p99"; : > "$tmp/cpu"
  for _ in $(seq 1 "$np"); do
    local c0; c0=$(cpu_ticks "$pid")
    read -r rps p50 p99 ok < <(wrk_point "$url" "$c" "$secs")
    local c1; c1=$(cpu_ticks "$pid")
    echo "$rps" >> "$tmp/r"; echo "$p50" >> "$tmp/p50"; echo "$p99" >> "$tmp/p99"
    awk -v d=$((c1 - c0)) -v t="$tck" -v n="$ok" 'BEGIN {printf "%.0f\n", n ? d / t * 1e6 / n : 0}' >> "$tmp/cpu"
  done
  echo "| $model_label | $name | $c | $(median_of %.0f < "$tmp/r") | $(median_of %.2f < "$tmp/p50") | $(median_of %.2f < "$tmp/p99") | $(median_of %.0f < "$tmp/cpu") | $(rss_mib "$pid") |" >> "$tmp/table"
  echo "$(med < "$tmp/r") $name" >> "$tmp/best"
}

echo "| model | server | concurrency | throughput (answers/s) | p50 ms | p99 ms | CPU per answer (µs) | RSS (MiB) |" > "$tmp/table"
echo "|---|---|---|---|---|---|---|---|" >> "$tmp/table"
: > "$tmp/ratios"
while IFS="|" read -r model_label model variant mp ms_ <&3; do
  [ -n "$model_label" ] || continue
  np=${mp:-$PASSES}; secs=${ms_:-$SECS}
  echo "## $model_label: $model/$variant ($np passes of $secs s)"
  : > "$tmp/best"
  echo "### (a) bare ORT Run loop"
  # the texts' ids from the Hugging Face tokenizers library, not anytime's
  node bench/bare_ort/ids.js bodies "$model/tokenizer.json" < "$tmp/bodies.jsonl" > "$tmp/ids"
  : > "$tmp/bare.csv"
  for b in ${BATCHES//,/ }; do # csv: ...,batch(4),...,texts/s(6),...,cpu/text(9),lo(10),hi(11),texts lo(12),hi(13),rss(14)
    build/bench/bare_ort --model "$model/$variant" --ids-file "$tmp/ids" --threads 2 --batch "$b" \
      --passes "$np" --seconds "$secs" --csv | tee -a "$tmp/bare.txt" | grep '^csv,' >> "$tmp/bare.csv"
  done
  read -r bb brate brange bcpu brss < <(sort -t, -k6 -gr "$tmp/bare.csv" | head -1 |
    awk -F, '{printf "%d %.0f %.0f–%.0f %.0f_(%.0f–%.0f) %d\n", $4, $6, $12, $13, $9, $10, $11, $14}')
  bcpu=${bcpu//_/ }
  echo "| $model_label | bare loop, batch $bb (2 threads) | — | $brate ($brange) | — | — | $bcpu per text | $brss (peak) |" >> "$tmp/table"
  batch=${BATCH:-$bb}

  bench_one_variant_config "$tmp/serve.yaml" "$(cd "$model" && pwd)" "$variant" "$batch" \
    "idle_intra_op_threads: ${IDLE:-0}"
  rm -f "$tmp/port"
  "${ANYTIME_BIN:-build/anytime}" serve --config "$tmp/serve.yaml" --port-file "$tmp/port" 2>"$tmp/serve.log" &
  spid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "anytime serve did not start: $(tail -3 "$tmp/serve.log")" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")/predict"
  curl -sf "$url" -d '{"inputs":"warm up"}' >/dev/null
  echo "### (b) anytime serve (max batch $batch, 2 workers, 2 HTTP threads, policy none, idle-pool threads ${IDLE:-0})"
  aname="anytime (max batch $batch)"
  [ "${IDLE:-0}" = 0 ] || aname="anytime (max batch $batch, idle-pool threads $IDLE)"
  for c in $CONC; do point "$aname" "$spid" "$url" "$c" "$np" "$secs"; tail -1 "$tmp/table"; done
  kill -TERM $spid; wait $spid || true

  node bench/peers/node-ort/server.js "$model" "$variant" 18199 2>"$tmp/peer.log" &
  ppid=$!
  for _ in $(seq 1 300); do curl -sf localhost:18199/predict -d '{"inputs":"warm up"}' >/dev/null 2>&1 && break; sleep 0.1; done
  echo "### (c) Node.js peer (onnxruntime-node 1.30.0, tokenizers 0.23.2, no batching)"
  for c in $CONC; do point "Node peer" "$ppid" "http://127.0.0.1:18199/predict" "$c" "$np" "$secs"; tail -1 "$tmp/table"; done
  kill $ppid; wait $ppid 2>/dev/null || true

  a=$(awk '$2 == "anytime" && $1 > m {m = $1} END {print m + 0}' "$tmp/best")
  n=$(awk '$2 == "Node" && $1 > m {m = $1} END {print m + 0}' "$tmp/best")
  awk -v l="$model_label" -v a="$a" -v b="$brate" -v n="$n" 'BEGIN {
    printf "- %s: anytime / bare loop = %d / %d = %.2f; anytime / Node peer = %d / %d = %.2fx (each at its best concurrency)\n",
      l, a, b, a / b, a, n, a / n }' >> "$tmp/ratios"
done 3<<< "$MODELS"

echo "# load after: $(uptime)"
echo "## table"
cat "$tmp/table" "$tmp/ratios"
[ -z "${OUT:-}" ] || cat "$tmp/table" "$tmp/ratios" > "$OUT"
