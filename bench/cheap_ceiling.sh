#!/usr/bin/env bash
# bench/cheap_ceiling.sh — the empirical ceiling behind the sweep's oracle.
# The sweep's oracle, min(offered, C_cheap), takes C_cheap from 4 closed-loop
# connections sending back to back; at thousands of open-loop requests per
# second the load generator and the refusals share this host's two cores, so
# no planner can reach it. This script measures, at the same offered rates,
# what a server holding ONLY the cheapest frontier variant answers within
# the deadline (same admission rule: the best any choice of variants could
# do) beside the shipped configuration (adaptive over both), 3 passes each,
# alternating, with the server's and the load generator's CPU seconds from
# /proc and time(1).
#
#   bench/cheap_ceiling.sh [RATE...]        (default: 4098 6830, the sweep's
#                                            rho = 3 and 5 of C = 1366)
#   env: ANYTIME_BIN (default build/anytime), PASSES (default 3), SECONDS_PER (8)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$here/build/anytime}
case "$bin" in /*) ;; *) bin="$here/$bin" ;; esac
passes=${PASSES:-3}; dur=${SECONDS_PER:-8}
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(4098 6830)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the shipped config with absolute model paths, and the same without large-int8
. "$here/bench/lib.sh"
bench_cheap_config "$here" "$tmp"
echo "# bench/cheap_ceiling.sh $(date -u +%FT%TZ): $(nproc) cores, binary $bin (git $(git -C "$here" rev-parse --short HEAD))"
for rate in "${rates[@]}"; do
  for pass in $(seq 1 "$passes"); do
    for cfg in both cheap; do
      bench_start_server "$bin" "$tmp/$cfg.yaml" "$tmp" || exit 1
      sp=$BENCH_PID; port=$BENCH_PORT
      c0=$(awk '{print $14 + $15}' "/proc/$sp/stat")
      /usr/bin/time -f "%U %S" -o "$tmp/lgtime" "$bin" loadgen --url "http://127.0.0.1:$port/predict" \
          --rate "$rate" --duration "$dur" --deadline-ms 20 --json >"$tmp/lg.json" 2>/dev/null
      c1=$(awk '{print $14 + $15}' "/proc/$sp/stat")
      kill "$sp"; wait "$sp" 2>/dev/null || true
      python3 - "$rate" "$pass" "$cfg" "$c0" "$c1" "$tmp" "$(getconf CLK_TCK)" <<'PY'
import json, sys
rate, pas, cfg, c0, c1, tmp, hz = sys.argv[1:]
d = json.load(open(f"{tmp}/lg.json"))
u, s = open(f"{tmp}/lgtime").read().split()[-2:]
print(f"rate {rate} pass {pas} {cfg:5s} goodput {d['goodput_rps']:7.1f} req/s  answered {d['answered_rps']:7.1f} req/s"
      f"  server CPU {(int(c1) - int(c0)) / int(hz):5.2f} s  load generator CPU {float(u) + float(s):4.2f} s")
PY
    done
  done
done
