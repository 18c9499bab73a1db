#!/usr/bin/env bash
# bench/cpu_breakdown.sh — where a served answer's CPU goes (issue 18): the
# server's CPU per answer split by stage (ONNX Runtime's Run, HTTP, JSON,
# tokenising, batcher/engine, planner, kernel, libc), set against the bare
# ORT loop's CPU per text on the same held-out sentences.
#
#   bench/cpu_breakdown.sh [MODEL_DIR [VARIANT.onnx]]
#       default: models/sentiment-large onnx/model_quantized.onnx
#   env: ANYTIME_BIN (build/anytime), BARE_BIN (build/bench/bare_ort),
#        CONC (8), SECS (8), PASSES (3)
#
# Per pass: `anytime serve` (2 workers, 2 HTTP threads, max_batch_size 1,
# policy none) under wrk at CONC connections posting held-out sentences to
# /predict; the server's utime + stime from /proc/PID/stat over the pass /
# the 2xx answers wrk counted = CPU per answer. An extra pass before them,
# not counted, runs under `perf record -e cpu-clock` (self time, no call
# graph; sampling itself costs CPU, so it only gives the shares); each
# sample is put in a stage by the shared object and symbol it landed in
# (the rules are in stage() below), and a stage's µs per answer = its share
# of the samples x the median CPU per answer. The bare loop (bench/bare_ort:
# no code of anytime's; 2 threads, batch 1, the same sentences tokenised by
# the Hugging Face tokenizers library) gives the CPU per text a Run costs
# with nothing around it; one unsampled pass of it runs right before each
# counted server pass, and the ratio is the median of the rounds' ratios. wrk shares the cores; only the server's own CPU is
# counted. Prints one markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. bench/lib.sh
model=${1:-models/sentiment-large}; variant=${2:-onnx/model_quantized.onnx}
model=$(cd "$model" && pwd)
bin=${ANYTIME_BIN:-$here/build/anytime}
bare=${BARE_BIN:-$here/build/bench/bare_ort}
conc=${CONC:-8}; secs=${SECS:-8}; passes=${PASSES:-3}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
for t in wrk perf node; do
  command -v $t >/dev/null || { echo "cpu_breakdown: needs $t" >&2; exit 1; }
done
[ -x "$bin" ] && [ -x "$bare" ] || { echo "cpu_breakdown: build $bin and $bare first" >&2; exit 1; }
[ -f "$data" ] || bash tools/train/fetch_data.sh >/dev/null
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
node bench/peers/node-ort/make_bodies.js "$data" > "$tmp/bodies.jsonl"
(cd bench/peers/node-ort && [ -d node_modules/tokenizers ] || npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
node bench/bare_ort/ids.js bodies "$model/tokenizer.json" < "$tmp/bodies.jsonl" > "$tmp/ids"
tck=$(getconf CLK_TCK)
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD)"
echo "# load before: $(uptime)"

# the bare loop's shares, from a run under perf (sampling costs the sampled
# process 20-35 % more CPU on this VM, so no CPU figure is taken from it)
perf record -q -e cpu-clock -F 999 -o "$tmp/bare.data" -- \
    "$bare" --model "$model/$variant" --ids-file "$tmp/ids" --threads 2 --seconds "$secs" \
    --passes 1 > /dev/null 2>&1
bare_pass() { # one unsampled pass of the bare loop: its CPU per text (csv field 9)
  "$bare" --model "$model/$variant" --ids-file "$tmp/ids" --threads 2 --seconds "$secs" \
    --passes 1 --csv 2>/dev/null | awk -F, '/^csv,/ {printf "%.0f\n", $9}'
}

bench_one_variant_config "$tmp/serve.yaml" "$model" "$variant" 1
"$bin" serve --config "$tmp/serve.yaml" --no-cache --port-file "$tmp/port" 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "cpu_breakdown: server did not start: $(tail -3 "$tmp/serve.log")" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$tmp/port")/predict"
for _ in 1 2 3 4 5; do curl -sf "$url" -d '{"inputs":"warm up"}' >/dev/null; done

: > "$tmp/cpu"; : > "$tmp/bare_cpu"; : > "$tmp/ratio"
for p in $(seq 0 "$passes"); do
  if [ "$p" = 0 ]; then # a sampled pass for the shares, not counted
    perf record -q -e cpu-clock -F 999 -p "$spid" -o "$tmp/perf.data" -- sleep "$secs" \
      >/dev/null 2>&1 &
    perfpid=$!
  fi
  # this host's speed swings within seconds: each counted server pass
  # follows a bare pass, and the ratio is taken within the round
  [ "$p" = 0 ] || b_us=$(bare_pass)
  c0=$(awk '{print $14 + $15}' "/proc/$spid/stat")
  ok=$(wrk -t"$(( conc < 2 ? conc : 2 ))" -c"$conc" -d"${secs}s" -s bench/wrk_predict.lua "$url" -- "$tmp/bodies.jsonl" 2>/dev/null |
       awk '/requests in/ {n=$1} /Non-2xx/ {bad=$NF} END {print n - bad}')
  c1=$(awk '{print $14 + $15}' "/proc/$spid/stat")
  cpu_p=$(awk -v d=$((c1 - c0)) -v t="$tck" -v n="$ok" 'BEGIN {printf "%.0f", d / t * 1e6 / n}')
  if [ "$p" = 0 ]; then
    wait "$perfpid" 2>/dev/null || true
    echo "# pass 0 (sampled, not counted): $ok answers, $cpu_p us CPU per answer" >&2
  else
    echo "$cpu_p" >> "$tmp/cpu"; echo "$b_us" >> "$tmp/bare_cpu"
    awk -v a="$cpu_p" -v b="$b_us" 'BEGIN {printf "%.3f\n", a / b}' >> "$tmp/ratio"
    echo "# round $p: bare loop $b_us us per text, server $ok answers, $cpu_p us CPU per answer" >&2
  fi
done
kill "$spid"; wait "$spid" 2>/dev/null || true
med() { sort -g "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rng() { sort -g "$1" | awk '{a[NR]=$1} END {print a[1] "–" a[NR]}'; }
cpu=$(med "$tmp/cpu"); cpu_range=$(rng "$tmp/cpu")
bare_us=$(med "$tmp/bare_cpu"); bare_range=$(rng "$tmp/bare_cpu")

# Each sample goes to a stage by the shared object and symbol it landed in
# (first rule that matches wins); a stage's µs = its share x CPU per answer.
report() { perf report -i "$1" --no-children --sort dso,sym -F overhead,dso,sym \
             --stdio 2>/dev/null | grep -v '^#' | grep '%' | sort -t% -k1 -rn || true; }
report "$tmp/perf.data" > "$tmp/report"
report "$tmp/bare.data" > "$tmp/bare_report"
stages() { # REPORT CPU_US -> "stage<TAB>share<TAB>us" lines
  awk -v cpu="$2" '
  function stage(dso, sym) {
    if (dso ~ /onnxruntime/) return "ONNX Runtime (inside Run)"
    if (dso ~ /microhttpd/ || sym ~ /^MHD_|^route|^serve_|^conn_|^on_request|^answer/) return "HTTP (libmicrohttpd, routes)"
    if (dso ~ /jansson/ || sym ~ /^json_|^rj_|^req_parse|^request_json/) return "JSON (jansson, request parsing)"
    if (dso ~ /utf8proc|pcre2/ || sym ~ /^tk_|^at_tokenizer|^at_encod|^wp_|^bpe_|^ug_|^norm|^pretok|^utf8/) return "tokenising"
    if (sym ~ /^at_batcher|^at_engine|^batcher|^engine|^worker|^dispatch/) return "batcher and engine"
    if (sym ~ /^at_plan|^plan|^at_rate|^erlang/) return "planner"
    if (sym ~ /^metrics|^at_metric/) return "metrics"
    if (dso ~ /kernel/) return "kernel (network, futex, scheduling, faults)"
    if (dso ~ /libc|ld-linux|libm/) return "libc (malloc, memcpy, locks)"
    if (dso ~ /anytime|bare_ort/) return "our code, other"
    return "other"
  }
  { pct = $1; sub(/%/, "", pct); dso = $2; sym = ""; for (i = 4; i <= NF; i++) sym = sym (i > 4 ? " " : "") $i
    s = stage(dso, sym); share[s] += pct; tot += pct }
  END { for (s in share) printf "%s\t%.1f\t%.0f\n", s, share[s] * 100 / tot, share[s] / tot * cpu }' "$1"
}
stages "$tmp/report" "$cpu" | sort -t$'\t' -k3 -rn > "$tmp/st_server"
stages "$tmp/bare_report" "$bare_us" > "$tmp/st_bare"
echo "| stage | server: share | server: µs per answer | bare loop: share | bare loop: µs per text | server − bare (µs) |"
echo "|---|---|---|---|---|---|"
awk -F'\t' 'NR == FNR {bs[$1] = $2; bu[$1] = $3; next}
  {printf "| %s | %.1f %% | %d | %s | %s | %+d |\n", $1, $2, $3, ($1 in bs) ? bs[$1] " %" : "—", ($1 in bu) ? bu[$1] : "—", $3 - bu[$1]; seen[$1] = 1}
  END {for (s in bs) if (!(s in seen)) printf "| %s | — | — | %s %% | %s | %+d |\n", s, bs[s], bu[s], -bu[s]}' \
  "$tmp/st_bare" "$tmp/st_server"
echo "| **all** | 100 % | **$cpu** ($cpu_range) | 100 % | **$bare_us** ($bare_range) | $(( cpu - bare_us )) |"
echo
echo "server CPU per answer / bare loop's CPU per text, within each round: median $(med "$tmp/ratio")x ($(rng "$tmp/ratio"))"
echo "# top symbols of the server outside ONNX Runtime:"
grep -v onnxruntime "$tmp/report" | head -25 | sed 's/^/#   /'
echo "# load after: $(uptime)"
