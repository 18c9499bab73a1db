#!/usr/bin/env bash
# bench/handoffs.sh — what a request's thread hand-offs cost, read from
# /proc: context switches and server CPU time per answer, for one or more
# anytime binaries side by side (e.g. before and after a change to the
# request path). Each binary serves the shipped configuration reduced to
# its cheapest frontier variant (so every answer costs the same), and for
# each pass is driven for 8 s by
#   open:   open-loop Poisson at RATE req/s (default 4098, the sweep's ρ = 3)
#   closed: 4 closed-loop clients sending back to back
# The figures cover the 5 s in the middle of each run. Binaries alternate
# within a pass, so the host's drift hits them alike.
#
#   bench/handoffs.sh BIN [BIN...]      env: PASSES (default 3), RATE
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bench/handoffs.sh BIN [BIN...]" >&2; exit 2; }
passes=${PASSES:-3}; rate=${RATE:-4098}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$here/bench/lib.sh"
bench_cheap_config "$here" "$tmp"
# context switches (voluntary + involuntary) of every thread of pid $1
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n }'; }
cpu() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }
hz=$(getconf CLK_TCK)
echo "# bench/handoffs.sh $(date -u +%FT%TZ), $(nproc) cores, git $(git -C "$here" rev-parse --short HEAD)"
for pass in $(seq 1 "$passes"); do
  for bin in "$@"; do
    bench_start_server "$bin" "$tmp/cheap.yaml" "$tmp" || exit 1
    sp=$BENCH_PID; port=$BENCH_PORT
    for mode in open closed; do
      if [ $mode = open ]; then load=(--rate "$rate"); else load=(--clients 4 --think-ms 0); fi
      "$bin" loadgen --url "http://127.0.0.1:$port/predict" "${load[@]}" --duration 8 \
          --deadline-ms 20 --json >"$tmp/lg.json" 2>/dev/null &
      lp=$!
      sleep 1.5
      s0=$(switches "$sp"); c0=$(cpu "$sp"); t0=$(date +%s.%N)
      a0=$(curl -s "127.0.0.1:$port/metrics" | awk '/^anytime_requests_total/ && /status="200"/ { n += $2 } END { print n + 0 }')
      sleep 5
      s1=$(switches "$sp"); c1=$(cpu "$sp"); t1=$(date +%s.%N)
      a1=$(curl -s "127.0.0.1:$port/metrics" | awk '/^anytime_requests_total/ && /status="200"/ { n += $2 } END { print n + 0 }')
      wait "$lp"
      awk -v p="$pass" -v b="$bin" -v m="$mode" -v s="$((s1 - s0))" -v c="$((c1 - c0))" -v hz="$hz" \
          -v a="$((a1 - a0))" -v t0="$t0" -v t1="$t1" -v g="$(grep -o '"goodput_rps": *[0-9.]*' "$tmp/lg.json" | grep -o '[0-9.]*$')" \
          'BEGIN { if (a < 1) a = 1; printf "pass %d %-40s %-6s goodput %7.1f req/s  answered %7.1f/s  CPU/answer %6.1f us  switches/answer %5.2f\n",
                   p, b, m, g, a / (t1 - t0), c / hz / a * 1e6, s / a }'
    done
    kill "$sp"; wait "$sp" 2>/dev/null || true
  done
done
