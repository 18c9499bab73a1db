#!/usr/bin/env bash
# bench/grpc_storm.sh — issue 14's retry-storm check over gRPC, beside the
# same sequence over HTTP with the same Node client (bench/grpc/grpc_storm.mjs):
# 200 clients resending every refusal at once for 2 s, 8 clients on to 32 s,
# one-text requests with a 20 ms deadline (gRPC: the call's deadline; HTTP:
# x-deadline-ms) to the default family's sentiment model. The check: of the
# requests sent from 3 s on, >= 99 % answered. PASSES alternating passes,
# each on a fresh server (configs/serving.yaml, --grpc-port).
# A benchmark, not a timed test: it prints PASS/FAIL per pass and exits 0.
# usage: bench/grpc_storm.sh [PASSES] [TOTAL_S]     defaults: 3 32
# env: ANYTIME_BIN (default build/anytime), ANYTIME_DATA_DIR (the texts:
#      pang-lee/test.csv), CONFIG (default configs/serving.yaml), MODEL.
# Needs tests/clients' node_modules (@grpc/grpc-js, @grpc/proto-loader).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$root/build/anytime}
cfg=${CONFIG:-$root/configs/serving.yaml} model=${MODEL:-sentiment}
passes=${1:-3} total=${2:-32}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -f "$data" ] || data=""
[ -x "$bin" ] || { echo "grpc_storm.sh: $bin not built (set ANYTIME_BIN)" >&2; exit 2; }
[ -d "$root/tests/clients/node_modules/@grpc/grpc-js" ] ||
  { echo "grpc_storm.sh: npm ci in tests/clients first" >&2; exit 2; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
echo "# bench/grpc_storm.sh $(date -u +%FT%TZ): $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
echo "# binary $bin (git $(git -C "$root" rev-parse --short HEAD 2>/dev/null)), config $cfg, model $model, texts ${data:-built-in}"
for p in $(seq 1 "$passes"); do
  for proto in grpc http; do
    gp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rm -f "$tmp/port"
    ANYTIME_CACHE_DIR="$tmp/cache" "$bin" serve --config "$cfg" --port 0 --port-file "$tmp/port" \
      --grpc-port "$gp" >"$tmp/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
    [ -s "$tmp/port" ] || { tail -5 "$tmp/log" >&2; exit 1; }
    node "$root/bench/grpc/grpc_storm.mjs" "$proto" "http://127.0.0.1:$(cat "$tmp/port")" \
      "127.0.0.1:$gp" "$model" 2 "$total" 200 20 $data | tee -a "$tmp/runs.jsonl"
    kill -TERM "$pid"; wait "$pid" || true; pid=""
  done
done
python3 - "$tmp/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for proto in ("grpc", "http"):
    shares = [r["after_burst"]["ok_share"] for r in runs if r["proto"] == proto]
    for i, r in enumerate([r for r in runs if r["proto"] == proto]):
        a = r["after_burst"]
        v = "PASS" if a["sent"] and a["ok_share"] >= 0.99 else "FAIL"
        print(f"{v}  {proto} pass {i + 1}: {a['ok']} of {a['sent']} sent from {a['from_s']} s on answered (share {a['ok_share']}); whole run {r['counts']}")
    print(f"{proto}: median share {statistics.median(shares):.4f}, range {min(shares):.4f}-{max(shares):.4f}")
PY
