#!/usr/bin/env bash
# bench/fairness.sh — client populations side by side against one real
# server (issue 41), each an `anytime loadgen` process, at LOAD x the
# server's capacity; every pass runs each mode on a fresh server:
#   ids         half the closed-loop clients resend every 429 at once, half
#               wait the retry-after-ms they are told; every client names
#               itself (--client-ids): its return slot is kept for it
#   anonymous   the same without names (the old rule: all come from one
#               address, so only a connection's own repeat is held)
#   greedy      the polite half beside a tenth as many greedy clients, each
#               sending ten times as often and resending at once: the same
#               demand from 10x fewer clients; all named
#   greedy-old  the same against a server without fair sharing or the queue
#               horizon (--set planner.fair_fill=1, queue_horizon_ms=10000)
#   ids-old     ids against that server (client slots without fair sharing)
# For each population: answers within the deadline per second and over its
# max-min fair share of what the server answered in that run (demands
# N x 1000 / think per population, filled from the smallest per-client
# demand up).
# PASS when the polite population gets >= 0.8 of its fair share (ids,
# greedy). Then, through nginx (deploy/nginx/anytime.conf, one replica via
# scripts/cluster.sh, keep-alive upstream): one fixed body in an open loop at
# 2x capacity, the answered p99 against the deadline (PASS when within).
# A benchmark, not a timed test: exits 0.
# usage: bench/fairness.sh [PASSES] [SECONDS] [LOAD]     defaults: 3 10 3
# env: ANYTIME_BIN (default build/anytime), CONFIG (configs/serving.yaml),
#      ANYTIME_DATA_DIR (pang-lee/test.csv for the texts), DEADLINE_MS (20),
#      THINK_MS (50), MODES ("ids anonymous greedy greedy-old"), NGINX (1),
#      SERVE_ARGS (more `anytime serve` arguments for every server, e.g.
#      "--set planner.fair_fill=0.5")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$root/build/anytime}
cfg=${CONFIG:-$root/configs/serving.yaml}
passes=${1:-3} secs=${2:-10} load=${3:-3}
dl=${DEADLINE_MS:-20} think=${THINK_MS:-50}
modes=${MODES:-ids anonymous greedy greedy-old}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -x "$bin" ] || { echo "fairness.sh: $bin not built (set ANYTIME_BIN)" >&2; exit 2; }
[ -f "$data" ] || { echo "fairness.sh: $data missing (tools/train/fetch_data.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; bash "$root/scripts/cluster.sh" stop --dir "$tmp/cluster" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
start() { # extra serve arguments...
  rm -f "$tmp/port"
  # shellcheck disable=SC2086
  ANYTIME_CACHE_DIR="$tmp/cache" "$bin" serve --config "$cfg" --port 0 --port-file "$tmp/port" \
    ${SERVE_ARGS:-} "$@" >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || { tail -5 "$tmp/log" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")/predict"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=""; }
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
echo "# bench/fairness.sh $(date -u +%FT%TZ): $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
echo "# binary $bin (git $(git -C "$root" rev-parse --short HEAD 2>/dev/null)), config $cfg, deadline $dl ms, think $think ms, load ${load}x, ${secs} s x $passes passes, modes: $modes"
start
cap=$("$bin" loadgen --url "$url" --data "$data" --clients 4 --duration 2 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["answered_rps"])')
stop
# closed loop: N clients thinking Z offer about N / Z requests per second
half=$(python3 -c "import math; print(max(1, math.ceil($load * $cap * $think / 1000 / 2)))")
tenth=$(( (half + 9) / 10 ))
gthink=$(python3 -c "print($think / 10)")
echo "# capacity $cap req/s (4 clients back to back); $half clients per population ($tenth greedy at think $gthink ms)"
for p in $(seq 1 "$passes"); do
  for mode in $modes; do
    case "$mode" in
      *-old) start --set planner.fair_fill=1 --set planner.queue_horizon_ms=10000 ;;
      *) start ;;
    esac
    common=(--url "$url" --data "$data" --deadline-ms "$dl" --duration "$secs" --json)
    a_ids=() b_ids=()
    [ "$mode" != anonymous ] && a_ids=(--client-ids other) b_ids=(--client-ids polite)
    if [ "${mode#greedy}" != "$mode" ]; then
      a_name=greedy a_n=$tenth a_think=$gthink
    else
      a_name=at-once a_n=$half a_think=$think
    fi
    "$bin" loadgen "${common[@]}" --clients "$a_n" --think-ms "$a_think" --retry now \
      --seed $((p * 2)) "${a_ids[@]}" >"$tmp/a.json" &
    a=$!
    "$bin" loadgen "${common[@]}" --clients "$half" --think-ms "$think" --retry after \
      --seed $((p * 2 + 1)) "${b_ids[@]}" >"$tmp/b.json"
    wait "$a"
    stop
    ga=$(jget "$tmp/a.json" goodput_rps) gb=$(jget "$tmp/b.json" goodput_rps)
    python3 - "$mode" "$p" "$cap" "$a_name" "$a_n" "$a_think" "$ga" "$half" "$think" "$gb" <<'PY' | tee -a "$tmp/rows"
import sys
mode, p, cap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
pops = [(sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])),
        ("polite", int(sys.argv[8]), float(sys.argv[9]), float(sys.argv[10]))]
# max-min fair shares of what the server answered in this run (the two
# populations' goodput together: with hundreds of connections and the load
# generator on the same cores it is below the 4-client capacity), per-client
# demand 1000/think, filled from the smallest demand up
total = pops[0][3] + pops[1][3]
fair, left, n_left = {}, total, sum(n for _, n, _, _ in pops)
for name, n, th, _ in sorted(pops, key=lambda q: 1000 / q[2]):
    each = min(1000 / th, left / n_left)
    fair[name] = each * n
    left -= fair[name]
    n_left -= n
parts = []
for name, n, th, g in pops:
    parts.append(f"{name} {n} x {g / n:.2f} req/s = {g:.0f} ({g / fair[name]:.3f} of its fair {fair[name]:.0f})")
ratio = pops[1][3] / fair["polite"]
verdict = ("PASS" if ratio >= 0.8 else "FAIL") if mode in ("ids", "greedy") else "    "
print(f"{verdict}  pass {p} {mode:10}: {'; '.join(parts)}; total {total:.0f} req/s ({total / cap:.2f} x the 4-client capacity)")
PY
  done
done
if [ "${NGINX:-1}" = 1 ] && command -v nginx >/dev/null; then
  # one fixed body from many clients through nginx's pooled keep-alive
  # upstream connections (X-Forwarded-For, proxy not trusted): the replica
  # must not hold such requests as one client's early retries
  port=
  for _ in $(seq 1 50); do
    c=$(( 20000 + (RANDOM % 20000) ))
    (exec 3<>"/dev/tcp/127.0.0.1/$c") 2>/dev/null || { port=$c; break; }
  done
  for p in $(seq 1 "$passes"); do
    bash "$root/scripts/cluster.sh" start 1 --port "$port" --config "$cfg" --dir "$tmp/cluster" >/dev/null
    "$bin" loadgen --url "http://127.0.0.1:$port/predict" --text "the movie was good" \
      --rate "$(python3 -c "print(2 * $cap)")" --deadline-ms "$dl" --duration "$secs" --json >"$tmp/n.json"
    bash "$root/scripts/cluster.sh" stop --dir "$tmp/cluster" >/dev/null
    python3 - "$tmp/n.json" "$p" "$dl" <<'PY'
import json, sys
j, p, dl = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3])
p99 = j["latency_s"]["p99"] * 1e3 if j["latency_s"]["p99"] is not None else float("nan")
v = "PASS" if p99 <= dl else "FAIL"
print(f"{v}  pass {p} nginx fixed body at 2x: sent {j['sent']}, answered {j['answered']}, refused {j['rejected']}, errors {j['errors']}, answered p99 {p99:.2f} ms (deadline {dl:g}), goodput {j['goodput_rps']:.0f} req/s")
PY
  done
fi
