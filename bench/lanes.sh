#!/usr/bin/env bash
# bench/lanes.sh — do the two lanes starve each other? One `anytime serve` on
# configs/serving.yaml (encoder lane: engine.workers; generation lane: its own
# scheduler thread with generator.threads ORT threads). The encoder lane gets
# open-loop Poisson /predict load at rho x capacity under the adaptive planner
# (anytime loadgen, 10 ms deadline), first alone, then while
# G clients keep streaming generations (64 tokens each, back to back).
# Reports, per repeat: encoder goodput, attainment, p95 and the share sent to
# the most accurate variant, and the generation lane's tokens/s.
#
#   bench/lanes.sh [RHO (0.8)] [REPEATS (3)] [DURATION_S (8)] [GEN_CLIENTS (2)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/anytime
rho=${1:-0.8} repeats=${2:-3} dur=${3:-8} gens=${4:-2}
cfg=$here/configs/serving.yaml
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT  # never leave a server behind; exit 0 when none is left
serve() { # serve POLICY NAME: start a server, wait for its port file; sets server
  "$bin" serve --config "$cfg" --policy "$1" --port 0 --port-file "$tmp/$2.port" >"$tmp/$2.log" 2>&1 &
  server=$!
  for _ in $(seq 1 600); do [ -s "$tmp/$2.port" ] && return; sleep 0.05; done
  echo "lanes: server did not start ($(tail -1 "$tmp/$2.log"))" >&2; exit 1
}
# capacity as `anytime sweep` measures it: what a server without admission
# control answers with the most accurate variant while 2 x workers
# connections send back to back for 2 s
serve none cap
workers=$(awk '/^engine:/{e=1} e&&/workers:/{print $2; exit}' "$cfg")
"$bin" loadgen --url "http://127.0.0.1:$(cat "$tmp/cap.port")/predict" --rate 20000 --duration 2 \
    --connections $((2 * workers)) --late-ms 1000000 --drain-s 0.5 --json > "$tmp/cap.json"
kill -TERM "$server"; wait "$server" || true
cap=$(sed -E 's/.*"answered_rps":([0-9.e+-]+).*/\1/' "$tmp/cap.json")
serve adaptive main
base=http://127.0.0.1:$(cat "$tmp/main.port")
echo "lanes: rho $rho x capacity $cap req/s, $dur s, $repeats repeats, $gens generation clients"
gen_loop() { # keep one streaming generation going until told to stop
  local n=0
  while [ ! -e "$tmp/stop" ]; do
    curl -sN "$base/v1/completions" -d '{"prompt":"the film is","max_tokens":64,"temperature":0.8,"stream":true}' >/dev/null
    n=$((n + 1))
  done
  echo $n > "$tmp/gen.$1"
}
metric() { curl -s "$base/metrics" | awk -v k="$1" '$1==k{print $2}'; }
printf '%-10s %6s %10s %10s %8s %12s %12s\n' mode rep goodput attain p95ms large_share gen_tok_s
for r in $(seq 1 "$repeats"); do
  for mode in alone with_gen; do
    rm -f "$tmp/stop" "$tmp"/gen.*
    tok0=$(metric 'anytime_gen_tokens_total{model="decoder"}')
    pids=()
    if [ $mode = with_gen ]; then
      for g in $(seq 1 "$gens"); do gen_loop "$g" & pids+=($!); done
      sleep 1
      tok0=$(metric 'anytime_gen_tokens_total{model="decoder"}')
    fi
    t0=$(date +%s.%N)
    "$bin" loadgen --url "$base/predict" --rho "$rho" --capacity "$cap" --duration "$dur" \
        --seed "$r" --deadline-ms 10 --json > "$tmp/lg.json"
    t1=$(date +%s.%N)
    tok1=$(metric 'anytime_gen_tokens_total{model="decoder"}')
    touch "$tmp/stop"
    for p in "${pids[@]}"; do wait "$p" || true; done
    gp=$(sed -E 's/.*"goodput_rps":([0-9.e+-]+).*/\1/' "$tmp/lg.json")
    at=$(sed -E 's/.*"attainment":([0-9.e+-]+).*/\1/' "$tmp/lg.json")
    p95=$(sed -E 's/.*"p95":([0-9.e+-]+).*/\1/' "$tmp/lg.json" | awk '{printf "%.2f", $1 * 1000}')
    lg=$(grep -oE '"large-int8":[0-9]+' "$tmp/lg.json" | cut -d: -f2 || echo 0)
    ans=$(sed -E 's/.*"answered":([0-9]+).*/\1/' "$tmp/lg.json")
    share=$(awk -v a="${lg:-0}" -v b="$ans" 'BEGIN{printf "%.3f", b ? a / b : 0}')
    toks=$(awk -v a="$tok0" -v b="$tok1" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.0f", (b - a) / (t1 - t0)}')
    printf '%-10s %6s %10.1f %10.3f %8.2f %12s %12s\n' $mode "$r" "$gp" "$at" "$p95" "$share" "$toks"
  done
done
kill -TERM "$server"; wait "$server" || true
