#!/usr/bin/env bash
# bench/prefix_cache.sh — time to first token with and without the prefix
# cache (generator.prefix_cache) when every request starts with the same
# ~200-token system prompt: CONC streaming chat clients in closed loop
# (bench/prefix/clients.js), each request the system prompt and a question
# of its own, temperature 0. Passes alternate cache on / off against one
# fresh `anytime serve` each (the generator of configs/serving.yaml:
# models/chat int8 unless MODEL/VARIANT say otherwise). Per pass: TTFT p50
# and p90 at the client, and the lane's prefix hit rate from /metrics; then
# per pair the off/on ratio of the p50s, the median over pairs with its
# range, and whether every answer was the same text with the cache on and
# off.
#
#   bench/prefix_cache.sh [CONC (8)] [REQUESTS per client (12)] [PAIRS (3)]
#   env: BIN (build/anytime), MODEL (models/chat), VARIANT (int8),
#        MAX_TOKENS (16)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/anytime}
conc=${1:-8} per=${2:-12} pairs=${3:-3}
model=${MODEL:-$here/models/chat} variant=${VARIANT:-int8} ntok=${MAX_TOKENS:-16}
[ -x "$bin" ] || { echo "prefix_cache: no binary at $bin (set BIN)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

run_pass() { # on|off pass_no
  local on=$1 k=$2 cache=true
  [ "$on" = off ] && cache=false
  cat > "$tmp/cfg.yaml" <<YAML
server:
  http_threads: 2
generator:
  name: chat
  model: $model
  variant: $variant
  threads: 1
  prefix_cache: $cache
YAML
  "$bin" serve --config "$tmp/cfg.yaml" --port 0 --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || { cat "$tmp/server.log" >&2; exit 1; }
  local base="http://127.0.0.1:$(cat "$tmp/port")"
  node "$here/bench/prefix/clients.js" "$base" chat 1 2 "$ntok" "$tmp/warm.json" # warm the sessions
  node "$here/bench/prefix/clients.js" "$base" chat "$conc" "$per" "$ntok" "$tmp/$on$k.json"
  curl -s "$base/metrics" | awk '/^anytime_gen_prefix_tokens_total/ { v[$1] = $2 }
    END { for (k in v) if (k ~ /queried/) q = v[k]; else h = v[k]; printf "%s %s\n", h + 0, q + 0 }' \
    > "$tmp/$on$k.hits"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$tmp/port"
}

echo "# prefix_cache: $(date -u '+%Y-%m-%d %H:%M') UTC, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# model $model ($variant), $conc clients x $per requests, max_tokens $ntok, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $(seq 1 "$pairs"); do
  run_pass on "$k"
  run_pass off "$k"
done
node - "$tmp" "$pairs" <<'JS'
const fs = require('fs');
const [dir, pairs] = [process.argv[2], Number(process.argv[3])];
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const med = (a) => q(a, 0.5);
const ratios = [], diffs = [];
for (let k = 1; k <= pairs; k++) {
  const row = {};
  for (const on of ['on', 'off']) {
    const r = JSON.parse(fs.readFileSync(`${dir}/${on}${k}.json`));
    const [hit, queried] = fs.readFileSync(`${dir}/${on}${k}.hits`, 'utf8').trim().split(' ').map(Number);
    const t = r.map((x) => x.ttft_ms);
    row[on] = { r, p50: med(t), p90: q(t, 0.9), hit, queried };
    console.log(`pass ${k} cache ${on.padEnd(3)}: ${r.length} requests, prompt ${r[0].prompt_tokens} tokens, TTFT p50 ${row[on].p50.toFixed(1)} ms, p90 ${row[on].p90.toFixed(1)} ms, prefix hits ${hit} of ${queried} positions`);
  }
  ratios.push(row.off.p50 / row.on.p50);
  const byKey = new Map(row.off.r.map((x) => [x.key, x.text]));
  for (const x of row.on.r) if (byKey.get(x.key) !== x.text) diffs.push(`${k}:${x.key}`);
}
console.log(`TTFT p50, cache off / on: median ${med(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) over ${pairs} pairs`);
console.log(diffs.length ? `answers that differ with the cache on: ${diffs.length} (${diffs.slice(0, 5).join(', ')})` : 'every answer the same text with the cache on and off');
JS
