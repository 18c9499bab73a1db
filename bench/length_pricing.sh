#!/usr/bin/env bash
# bench/length_pricing.sh — does pricing texts by their length (the
# variants' length model, docs/planner.md "Pricing a text by its length")
# pay on the real server? The BERT-base-size stand-in serves traffic in
# which a fifth of the requests are documents (LONG held-out sentences run
# together) and the rest single sentences; the same server configuration
# runs twice per load, with the length model the profile fitted ("told")
# and with it switched off ("blind": every text priced at the table),
# alternating, open loop, through `anytime loadgen`.
#
#   bench/length_pricing.sh [MODEL_DIR]
#       default: the bertbase-cls stand-in (tools/testmodels/size_standins.sh)
#   env: ANYTIME_BIN (build/anytime), PROFILE (a serving YAML with a length
#        model; default: profile MODEL_DIR now on the same mix, with
#        --length-buckets 4, as a user would profile on data like their
#        traffic),
#        LOADS ("0.8 1.5 3": multiples of the capacity measured first),
#        SECS (15), REPEATS (2), DEADLINE_MS (500), LONG (10 sentences),
#        SHARE (0.2: the share of documents), KEEP (a directory: the profile's
#        YAML and JSON and the per-repeat rows are copied there)
#
# Capacity: what the server answers with 4 closed-loop clients back to back
# on the same mix with no admission control (policy none). Prints one
# markdown table: per load and arm the median over repeats (range) of
# goodput (answers within the deadline per second), attainment (those /
# sent), the share admitted, the admitted p99, the planner's correction
# factor at the end (observed Run / priced Run: 1 = priced right, on a
# quiet host) and the bytes per token the server learnt.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bin=${ANYTIME_BIN:-$here/build/anytime}
model=${1:-$(tools/testmodels/size_standins.sh bertbase | head -1)}
secs=${SECS:-15}; repeats=${REPEATS:-2}; dl=${DEADLINE_MS:-500}
long=${LONG:-10}; share=${SHARE:-0.2}; loads=${LOADS:-0.8 1.5 3}
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
[ -x "$bin" ] || { echo "length_pricing: build $bin first" >&2; exit 1; }
[ -f "$data" ] || bash tools/train/fetch_data.sh >/dev/null
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD)"
echo "# model: $model; deadline $dl ms; $secs s per point; $repeats repeats; documents of $long sentences, share $share"

# the mix: label,text rows; a document is LONG consecutive sentences
awk -v long="$long" -v share="$share" 'BEGIN {srand(7); n = 0} NR == 1 {print; next}
  { t = substr($0, 3); if (t ~ /^".*"$/) t = substr(t, 2, length(t) - 2)
    lab[n] = substr($0, 1, 1); txt[n++] = t }
  END { for (i = 0; i < n; i++) {
          if (rand() < share) { d = txt[i]; for (k = 1; k < long; k++) d = d " " txt[(i + k) % n]
                                printf "%s,\"%s\"\n", lab[i], d }
          else printf "%s,\"%s\"\n", lab[i], txt[i] } }' "$data" > "$tmp/mix.csv"

if [ -n "${PROFILE:-}" ]; then
  cp "$PROFILE" "$tmp/told.yaml"
else
  echo "# profiling $model on the mix (--length-buckets 4) ..." >&2
  "$bin" profile --model "$model" --data "$tmp/mix.csv" --batch-sizes 1 --iters 10 --length-buckets 4 \
      --agreement-tolerance 0.5 --out-config "$tmp/told.yaml" --out-json "$tmp/profile.json" >&2
fi
grep -q 'len_cost_per_token' "$tmp/told.yaml" ||
  { echo "length_pricing: the profile has no length model" >&2; exit 1; }
sed 's/len_cost_per_token: *[0-9.eE+-]*/len_cost_per_token: 0/' "$tmp/told.yaml" > "$tmp/blind.yaml"
sed 's/^\( *policy:\).*/\1 none/' "$tmp/told.yaml" > "$tmp/none.yaml"
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp/told.yaml" "$KEEP/" &&
  { [ -f "$tmp/profile.json" ] && cp "$tmp/profile.json" "$KEEP/" || true; }
grep -E 'name:|service_ms|len_' "$tmp/told.yaml" | sed 's/^/#   /'

start() { # CONFIG -> sets url, spid
  rm -f "$tmp/port"
  "$bin" serve --config "$1" --port 0 --port-file "$tmp/port" 2>"$tmp/serve.log" &
  spid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "length_pricing: server did not start: $(tail -3 "$tmp/serve.log")" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")"
  for _ in 1 2 3; do curl -sf "$url/predict" -d '{"inputs":"warm up"}' >/dev/null; done
}
stop() { kill "$spid"; wait "$spid" 2>/dev/null || true; }
# jget KEYS: fields of the JSON on stdin (a.b for nested), space-separated
jget() { node -e 'const o=JSON.parse(require("fs").readFileSync(0,"utf8"));console.log(process.argv[1].split(",").map(k=>k.split(".").reduce((x,y)=>x==null?x:x[y],o)).join(" "))' "$1"; }

start "$tmp/none.yaml"
cap=$("$bin" loadgen --url "$url/predict" --clients 4 --duration 8 --data "$tmp/mix.csv" --json 2>/dev/null | jget answered_rps)
stop
echo "# capacity on the mix (4 clients back to back, no admission control): $cap answers/s"

: > "$tmp/rows"
for load in $loads; do
  rate=$(awk -v c="$cap" -v l="$load" 'BEGIN {printf "%.1f", c * l}')
  for r in $(seq 1 "$repeats"); do
    for arm in told blind; do
      start "$tmp/$arm.yaml"
      out=$("$bin" loadgen --url "$url/predict" --rate "$rate" --duration "$secs" --seed "$r" \
                --data "$tmp/mix.csv" --deadline-ms "$dl" --json 2>/dev/null)
      m=$(curl -s "$url/metrics")
      bpt=$(echo "$m" | awk '/^anytime_planner_bytes_per_token/ {print $NF; exit}')
      scale=$(echo "$m" | awk '/^anytime_planner_service_scale\{/ {print $NF; exit}')
      stop
      echo "$load $arm $(echo "$out" | jget goodput_rps,attainment,admitted_share,latency_s.p99 |
                         awk '{printf "%s %s %s %.1f", $1, $2, $3, $4 * 1000}') $scale $bpt" >> "$tmp/rows"
      echo "# load $load ($rate/s) repeat $r $arm: $(tail -1 "$tmp/rows")" >&2
    done
  done
done
[ -n "${KEEP:-}" ] && cp "$tmp/rows" "$KEEP/rows.txt"
echo
echo "| load (x capacity) | planner | goodput (answers/s within $dl ms) | attainment | admitted share | admitted p99 (ms) | correction factor | bytes per token learnt |"
echo "|---|---|---|---|---|---|---|---|"
for load in $loads; do for arm in told blind; do
  awk -v l="$load" -v a="$arm" '$1 == l && $2 == a' "$tmp/rows" | awk '
    function med(col,   n, i, j, t, v) { n = 0; for (i = 1; i <= NR; i++) v[++n] = x[i, col]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return sprintf("%.4g (%.4g–%.4g)", v[int((n + 1) / 2)], v[1], v[n]) }
    { for (c = 1; c <= NF; c++) x[NR, c] = $c; load = $1; arm = $2 }
    END { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", load, arm, med(3), med(4), med(5), med(6), med(7), med(8) }'
done; done
