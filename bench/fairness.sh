#!/usr/bin/env bash
# bench/fairness.sh — two client populations at once against one server
# (issue 41): half the closed-loop clients resend every 429 at once, half
# wait the retry-after-ms they are told (anytime loadgen --retry now /
# --retry after, two processes side by side), at LOAD x the server's
# capacity. Each pass is run twice on a fresh server: with every client
# naming itself (--client-ids: the server keeps each one's return slot, an
# early request is refused before the planner) and anonymous (the old rule:
# only a connection's own repeat is held). Prints per-client goodput of each
# population and polite / at-once (1 = a fair share); PASS when it is
# >= 0.8 with client ids. A benchmark, not a timed test: exits 0.
# usage: bench/fairness.sh [PASSES] [SECONDS] [LOAD]     defaults: 3 10 3
# env: ANYTIME_BIN (default build/anytime), CONFIG (configs/serving.yaml),
#      ANYTIME_DATA_DIR (pang-lee/test.csv for the texts), DEADLINE_MS (20),
#      THINK_MS (50)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$root/build/anytime}
cfg=${CONFIG:-$root/configs/serving.yaml}
passes=${1:-3} secs=${2:-10} load=${3:-3}
dl=${DEADLINE_MS:-20} think=${THINK_MS:-50}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -x "$bin" ] || { echo "fairness.sh: $bin not built (set ANYTIME_BIN)" >&2; exit 2; }
[ -f "$data" ] || { echo "fairness.sh: $data missing (tools/train/fetch_data.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
start() {
  rm -f "$tmp/port"
  ANYTIME_CACHE_DIR="$tmp/cache" "$bin" serve --config "$cfg" --port 0 --port-file "$tmp/port" \
    >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || { tail -5 "$tmp/log" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")/predict"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=""; }
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
echo "# bench/fairness.sh $(date -u +%FT%TZ): $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
echo "# binary $bin (git $(git -C "$root" rev-parse --short HEAD 2>/dev/null)), config $cfg, deadline $dl ms, think $think ms, load ${load}x, ${secs} s x $passes passes"
start
cap=$("$bin" loadgen --url "$url" --data "$data" --clients 4 --duration 2 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["answered_rps"])')
stop
# closed loop: N clients thinking Z offer about N / Z requests per second
half=$(python3 -c "import math; print(max(1, math.ceil($load * $cap * $think / 1000 / 2)))")
echo "# capacity $cap req/s (4 clients back to back); $half clients per population"
for p in $(seq 1 "$passes"); do
  for mode in ids anonymous; do
    start
    ids_now=() ids_ra=()
    [ "$mode" = ids ] && ids_now=(--client-ids now) ids_ra=(--client-ids polite)
    common=(--url "$url" --data "$data" --clients "$half" --think-ms "$think" --deadline-ms "$dl" --duration "$secs" --json)
    "$bin" loadgen "${common[@]}" --retry now --seed $((p * 2)) "${ids_now[@]}" >"$tmp/now.json" &
    a=$!
    "$bin" loadgen "${common[@]}" --retry after --seed $((p * 2 + 1)) "${ids_ra[@]}" >"$tmp/ra.json"
    wait "$a"
    stop
    gn=$(jget "$tmp/now.json" goodput_rps) gr=$(jget "$tmp/ra.json" goodput_rps)
    python3 - "$mode" "$p" "$gn" "$gr" "$half" "$cap" <<'PY' | tee -a "$tmp/rows"
import sys
mode, p, gn, gr, half, cap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
ratio = gr / gn if gn > 0 else float("nan")
verdict = ("PASS" if ratio >= 0.8 else "FAIL") if mode == "ids" else "    "
print(f"{verdict}  pass {p} {mode:9}: per client at once {gn / half:.2f} req/s, polite {gr / half:.2f} req/s, polite/at-once {ratio:.3f}; total goodput {gn + gr:.0f} req/s ({(gn + gr) / cap:.2f} x capacity)")
PY
  done
done
