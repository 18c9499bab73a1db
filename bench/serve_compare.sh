#!/usr/bin/env bash
# bench/serve_compare.sh — the three-way throughput comparison of issue 5, on
# one model and host, in one run:
#   (a) the limit: a bare ONNX Runtime Run loop at its best batch size
#       (build/bench/bench_bare_throughput);
#   (b) `anytime serve` (one variant, dynamic batching) under wrk, closed
#       loop, at several concurrencies;
#   (c) the peer: a minimal Node.js server on onnxruntime-node
#       (bench/peers/node-ort) under the same wrk load.
# Each point is the median of PASSES passes of SECS seconds, with the range.
#
#   bench/serve_compare.sh [MODEL_DIR] [VARIANT.onnx]
#   (defaults: models/sentiment-large onnx/model_quantized.onnx; PASSES=3 SECS=5
#    CONC="1 8 32 64")
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
model=${1:-models/sentiment-large}
variant=${2:-onnx/model_quantized.onnx}
PASSES=${PASSES:-3}; SECS=${SECS:-5}; CONC=${CONC:-"1 8 32 64"}
BATCH=${BATCH:-1}   # max_batch_size for anytime; 1 = what profile picks on this host
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -f "$data" ] || bash tools/train/fetch_data.sh >/dev/null
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
cmake --build build --target anytime_cli bench_bare_throughput >/dev/null
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd bench/peers/node-ort && [ -d node_modules/onnxruntime-node ] || npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
node bench/peers/node-ort/make_bodies.js "$data" > "$tmp/bodies.jsonl"

echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; model $model/$variant; $(date -u +%F)"
echo "## (a) bare ORT Run loop"
build/bench/bench_bare_throughput "$model" "$variant" "$data" 2 "$PASSES" "$SECS" 1,4,8,16,32 | tee "$tmp/bare.txt"
bare=$(sed -n 's/^best: batch [0-9]*, \([0-9]*\) texts.s/\1/p' "$tmp/bare.txt")

cat > "$tmp/serve.yaml" <<YAML
server: {host: 127.0.0.1, port: 0, http_threads: 2, max_inputs: 64, max_queued: 65536}
engine: {workers: 2, intra_op_threads: 1}
batching: {max_batch_size: $BATCH, max_queue_delay_us: 0}
planner: {policy: none, deadline_ms: 100000, max_deadline_ms: 100000}
models:
  - name: bench
    task: classify
    tokenizer: $here/$model/tokenizer.json
    config: $here/$model/config.json
    variants:
      - {name: v, path: $here/$model/$variant, accuracy: 1}
YAML

wrk_point() { # url conc -> "ok_rps p50ms p99ms" (only 2xx answers count)
  local t=2; [ "$2" -lt 2 ] && t=1
  wrk -t$t -c"$2" -d"${SECS}s" --latency -s bench/wrk_predict.lua "$1" -- "$tmp/bodies.jsonl" 2>/dev/null |
    awk '/Requests\/sec/ {r=$2} /requests in/ {n=$1; d=$4} /Non-2xx/ {bad=$NF} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
         function ms(x) { if (x ~ /us$/) return x/1000; if (x ~ /ms$/) return x+0; if (x ~ /s$/) return x*1000; return x }
         function secs(x) { if (x ~ /ms$/) return x/1000; if (x ~ /m$/) return x*60; return x+0 }
         END {ok = (n - bad) / secs(d); printf "%.0f %.2f %.2f\n", ok, ms(p50), ms(p99)}'
}
median_of() { sort -n | awk '{a[NR]=$1} END {printf "%s (%s..%s)", a[int((NR+1)/2)], a[1], a[NR]}'; }

run_target() { # name url
  echo "## $1"
  echo "| concurrency | throughput (req/s, median (range)) | p50 ms | p99 ms |"
  echo "|---|---|---|---|"
  for c in $CONC; do
    : > "$tmp/r"; : > "$tmp/p50"; : > "$tmp/p99"
    for p in $(seq 1 "$PASSES"); do
      read -r rps p50 p99 < <(wrk_point "$2" "$c")
      echo "$rps" >> "$tmp/r"; echo "$p50" >> "$tmp/p50"; echo "$p99" >> "$tmp/p99"
    done
    echo "| $c | $(median_of < "$tmp/r") | $(median_of < "$tmp/p50") | $(median_of < "$tmp/p99") |"
    sort -n "$tmp/r" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}' >> "$tmp/best_$3"
  done
}

build/anytime serve --config "$tmp/serve.yaml" --port-file "$tmp/port" 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 200); do [ -s "$tmp/port" ] && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$(cat "$tmp/port")/predict" -d '{"inputs":"warm up"}' >/dev/null
run_target "(b) anytime serve (max batch $BATCH, 2 workers, 2 HTTP threads, no admission control)" "http://127.0.0.1:$(cat "$tmp/port")/predict" anytime
kill -TERM $spid; wait $spid || true

node bench/peers/node-ort/server.js "$model" "$variant" 18199 2>"$tmp/peer.log" &
ppid=$!
for _ in $(seq 1 100); do curl -sf localhost:18199/predict -d '{"inputs":"warm up"}' >/dev/null 2>&1 && break; sleep 0.1; done
run_target "(c) Node.js peer (onnxruntime-node 1.30.0, tokenizers 0.23.2, no batching)" "http://127.0.0.1:18199/predict" peer
kill $ppid; wait $ppid 2>/dev/null || true

a=$(sort -n "$tmp/best_anytime" | tail -1); n=$(sort -n "$tmp/best_peer" | tail -1)
echo "## ratios (best concurrency of each)"
echo "- anytime / bare limit: $a / $bare = $(awk -v a="$a" -v b="$bare" 'BEGIN{printf "%.2f", a/b}')"
echo "- anytime / Node peer: $a / $n = $(awk -v a="$a" -v b="$n" 'BEGIN{printf "%.2f", a/b}')x"
