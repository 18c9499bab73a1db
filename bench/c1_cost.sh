#!/usr/bin/env bash
# bench/c1_cost.sh — what one request alone (concurrency 1) costs: the Run
# the server reports (x-inference-time) against the independent bare loop
# (bench/bare_ort) run back to back AND paced like the server's Runs, for
# several server settings side by side.
#
#   bench/c1_cost.sh
#   env: LENS ("11 30"), ROUNDS (5), N (300 sequential requests per pass),
#        CONFIGS (see below), ANYTIME_BIN,
#        BARE_BIN, MODEL (models/sentiment-large), VARIANT
#        (onnx/model_quantized.onnx)
#
# Why paced: on a virtual machine a Run whose core halted since the last one
# is slower than a Run back to back (bench/bare_ort --gap-us vs --gap-spin).
# A server at concurrency 1 waits for each request, so its Runs are paced by
# the client's round trip; the bare loop is run three ways each round:
#   bare        back to back (the figure issue 45's acceptance names)
#   bare sleep  sleeping G µs before each Run, G = the first server's median
#               time per request minus its median Run (the round trip)
#   bare spin   spinning G µs before each Run (the core kept busy)
# Servers: the run-cost configuration (bench/lib.sh bench_one_variant_config:
# one int8 variant, 2 workers, 2 HTTP threads, 1 intra-op thread, batch 1,
# policy none), one process per entry of CONFIGS, lines "name|serve flags";
# default: "default|" (as shipped) and "batch_sched_off|--set
# server.http_batch_sched=false" (HTTP threads of the normal class). The first
# is the one whose round trip paces the bare loop. Each pass sends N
# requests in sequence on one kept-alive connection (curl) and takes the
# median x-inference-time, the median time per request at the client, and
# the server's CPU (utime + stime, /proc) per answer. Everything of a round
# runs in turn, so the host's drift (2x within minutes here) hits all alike;
# reported are medians over rounds with their range, ratios taken within a
# round.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. bench/lib.sh
bin=${ANYTIME_BIN:-$here/build/anytime}
bare=${BARE_BIN:-$here/build/bench/bare_ort}
model=$(cd "${MODEL:-models/sentiment-large}" && pwd); variant=${VARIANT:-onnx/model_quantized.onnx}
lens=${LENS:-11 30}; rounds=${ROUNDS:-5}; n=${N:-300}
configs=${CONFIGS:-"default|
batch_sched_off|--set server.http_batch_sched=false"}
for t in curl node awk; do
  command -v $t >/dev/null || { echo "c1_cost: needs $t (scripts/install-deps.sh test bench)" >&2; exit 1; }
done
[ -x "$bin" ] && [ -x "$bare" ] || { echo "c1_cost: build $bin and $bare first" >&2; exit 1; }
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)
# shellcheck disable=SC2086
bench_length_texts "$model/tokenizer.json" "$tmp" $lens
ids_of() { awk -F'\t' -v l="$1" '$1 == l {print $2; exit}' "$tmp/texts"; }
bench_one_variant_config "$tmp/serve.yaml" "$model" "$variant" 1 ""

names=()
while IFS='|' read -r name flags; do
  [ -n "$name" ] || continue
  names+=("$name")
  # shellcheck disable=SC2086
  "$bin" serve --config "$tmp/serve.yaml" --port-file "$tmp/port_$name" $flags 2>"$tmp/log_$name" &
  echo $! > "$tmp/pid_$name"; echo "$flags" > "$tmp/flags_$name"
done <<< "$configs"
for name in "${names[@]}"; do
  for _ in $(seq 1 300); do [ -s "$tmp/port_$name" ] && break; sleep 0.1; done
  [ -s "$tmp/port_$name" ] || { echo "c1_cost: server '$name' did not start: $(tail -2 "$tmp/log_$name")" >&2; exit 1; }
done

bare_run() { # L [bare flags] -> median wall µs per Run
  local l=$1; shift
  "$bare" --model "$model/$variant" --ids "$(ids_of "$l")" --threads 1 --seconds 1 --passes 1 \
    --csv "$@" | awk -F, '/^csv,/ {printf "%.0f\n", $7}'
}
c1_pass() { # NAME L -> "run_us request_us cpu_us" (medians; CPU per answer)
  local pid port args=() i c0 c1
  pid=$(cat "$tmp/pid_$1"); port=$(cat "$tmp/port_$1")
  for ((i = 0; i < n; i++)); do args+=("http://127.0.0.1:$port/predict" -o /dev/null); done
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  curl -s -H 'content-type: application/json' -d @"$tmp/body_$2.json" \
    -w '%header{x-inference-time} %{time_total}\n' "${args[@]}" > "$tmp/c1"
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  [ "$(awk 'NF == 2' "$tmp/c1" | wc -l)" -eq "$n" ] ||
    { echo "c1_cost: server '$1' did not answer all $n requests" >&2; exit 1; }
  local run req
  run=$(awk '{print $1 * 1000}' "$tmp/c1" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}')
  req=$(awk '{print $2 * 1e6}' "$tmp/c1" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}')
  echo "$run $req $(( (c1 - c0) * 1000000 / tck / n ))"
}
n_full=$n; n=50 # warm every server up on every text
for name in "${names[@]}"; do for l in $lens; do c1_pass "$name" "$l" >/dev/null; done; done
n=$n_full

echo "# bench/c1_cost.sh: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD); N=$n, $rounds rounds"
echo "# anytime's malloc: $("$bin" version 2>/dev/null | sed -n 's/^malloc: *//p'); the bare loop's: glibc"
for name in "${names[@]}"; do echo "# server '$name': flags '$(cat "$tmp/flags_$name")'"; done
: > "$tmp/rows"
for r in $(seq 1 "$rounds"); do for l in $lens; do
  b=$(bare_run "$l")
  row="$r $l bare $b"
  first=1
  for name in "${names[@]}"; do
    read -r run req cpu < <(c1_pass "$name" "$l")
    row="$row $name $run $req $cpu"
    if [ $first = 1 ]; then gap=$((req - run)); [ "$gap" -gt 0 ] || gap=1; first=0; fi
  done
  bs=$(bare_run "$l" --gap-us "$gap"); bp=$(bare_run "$l" --gap-us "$gap" --gap-spin)
  row="$row gap $gap sleep $bs spin $bp"
  echo "$row" >> "$tmp/rows"
  echo "# $row" >&2
done; done

# med FIELD_EXPR L: median (min–max) over rounds of an awk expression on a row
med() { awk -v l="$2" "\$2 == l {print $1}" "$tmp/rows" | sort -g |
  awk -v f="${3:-%.0f}" '{a[NR]=$1} END {m = (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2; printf f " (" f "–" f ")", m, a[1], a[NR]}'; }
echo
echo "| L (ids) | bare back to back µs | round trip G µs | bare, sleep G µs | bare, spin G µs |"
echo "|---|---|---|---|---|"
k=$(( 5 + 4 * ${#names[@]} ))
for l in $lens; do
  echo "| $l | $(med '$4' "$l") | $(med "\$$((k + 1))" "$l") | $(med "\$$((k + 3))" "$l") | $(med "\$$((k + 5))" "$l") |"
done
echo
echo "| L | server | Run (x-inference-time) µs | / bare back to back | / bare sleep G | / bare spin G | time per request µs | CPU per answer µs |"
echo "|---|---|---|---|---|---|---|---|"
for l in $lens; do
  i=0
  for name in "${names[@]}"; do
    f=$(( 6 + 4 * i ))
    echo "| $l | $name | $(med "\$$f" "$l") | $(med "\$$f / \$4" "$l" %.2fx) | $(med "\$$f / \$$((k + 3))" "$l" %.2fx) | $(med "\$$f / \$$((k + 5))" "$l" %.2fx) | $(med "\$$((f + 1))" "$l") | $(med "\$$((f + 2))" "$l") |"
    i=$((i + 1))
  done
done
echo
echo "(medians over $rounds rounds, ranges in brackets; each ratio is taken within its round)"
