#!/usr/bin/env bash
# bench/grpc_vs_http.sh — encoder throughput over gRPC vs HTTP (KServe V2,
# one text per request, closed loop) at c=8 and c=32: PASSES alternating
# passes of each, median and range of answered requests per second and of
# the server's own CPU per answer (/proc/PID/stat user + system). A
# benchmark, not a timed test: run by hand on an idle host.
# usage: bench/grpc_vs_http.sh [CONFIG] [MODEL] [SECONDS] [PASSES]
#   defaults: tests/data/serve/tiny.yaml tiny-classifier 5 3
# Needs a build (ANYTIME_BIN, default build/anytime) and tests/clients'
# node_modules (@grpc/grpc-js, @grpc/proto-loader).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$root/build/anytime}
cfg=${1:-$root/tests/data/serve/tiny.yaml} model=${2:-tiny-classifier} secs=${3:-5} passes=${4:-3}
tmp=$(mktemp -d)
gp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ANYTIME_CACHE_DIR="$tmp/cache" "$bin" serve --config "$cfg" --port 0 --port-file "$tmp/port" \
  --grpc-port "$gp" --policy none >"$tmp/log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
base="http://127.0.0.1:$(cat "$tmp/port")"
echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); config $cfg; model $model; ${secs}s x $passes passes; policy none"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
for c in 8 32; do
  for p in $(seq 1 "$passes"); do
    for proto in http grpc; do
      t0=$(cpu_ticks)
      line=$(node "$root/bench/grpc/grpc_vs_http.mjs" "$proto" "$base" "127.0.0.1:$gp" "$model" "$c" "$secs")
      t1=$(cpu_ticks)
      # the server's own CPU per answer (user + system, /proc): what the
      # protocol costs the server, apart from what each client costs
      python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["server_cpu_us_per_answer"]=round((int(sys.argv[3])-int(sys.argv[2]))/int(sys.argv[4])*1e6/max(r["ok"],1),1); print(json.dumps(r))' \
        "$line" "$t0" "$t1" "$(getconf CLK_TCK)"
    done
  done
done | tee "$tmp/runs.jsonl"
python3 - "$tmp/runs.jsonl" <<'PY'
import json, sys, statistics
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for c in sorted({r["c"] for r in runs}):
    med = {}
    for proto in ("http", "grpc"):
        v = [r["rps"] for r in runs if r["c"] == c and r["proto"] == proto]
        med[proto] = statistics.median(v)
        cpu = [r["server_cpu_us_per_answer"] for r in runs if r["c"] == c and r["proto"] == proto]
        print(f"c={c:<3} {proto:5} median {med[proto]:8.1f} rps  range {min(v):.1f}-{max(v):.1f}  ({len(v)} passes); "
              f"server CPU per answer median {statistics.median(cpu):.1f} us, range {min(cpu):.1f}-{max(cpu):.1f}")
    print(f"c={c:<3} grpc/http = {med['grpc'] / med['http']:.2f}x")
PY
kill -TERM "$pid"; wait "$pid" || true
