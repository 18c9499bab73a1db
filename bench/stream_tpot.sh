#!/usr/bin/env bash
# bench/stream_tpot.sh — what a streaming client sees: time to first token
# and time per output token of POST /v1/completions with "stream": true,
# CONC streams at once, measured at the client (curl's --trace-time stamps
# on every received chunk), so work moved between the generator's
# scheduler thread and the HTTP threads shows up here whichever side pays.
#
# One `anytime serve` on configs/serving.yaml with the plain decoder
# (models/decoder, which writes until max_tokens) as the generator. CONC
# shell loops each send streamed requests back to back for SECS seconds
# (MAX_TOKENS tokens, temperature 0.7, stream_options.include_usage);
# every request's trace is kept and read after the run, so the clients do
# no parsing while the server works. Per request:
#   ttft = first body chunk - request sent
#   tpot = (last body chunk - first body chunk) / (completion_tokens - 1)
# (chunks that arrive together are no problem: only the first and last
# count). Per pass it prints requests, tokens/s, median and p90 TTFT, median
# and p90 TPOT, and the server's CPU time (utime + stime from /proc) per
# generated token — the clients share the cores, so that, not throughput,
# is the fair measure of the server's cost; then the median over passes
# with the range.
#
#   bench/stream_tpot.sh [CONC (8)] [SECS (10)] [PASSES (3)]
#   env: BIN (build/anytime), MAX_TOKENS (64), STOP (a stop sequence to send
#        in every request, default none), CFG (a configuration instead of
#        configs/serving.yaml, e.g. for an older binary that does not know
#        every key of today's; with the same generator model line),
#        PLAIN=1 (not streamed: one `hey` run of CONC connections per pass;
#        per pass requests/s, tokens/s, hey's p50 and p90 of the whole
#        request, and the server's CPU per generated token)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/anytime}
conc=${1:-8} secs=${2:-10} passes=${3:-3}
ntok=${MAX_TOKENS:-64}
[ -x "$bin" ] || { echo "stream_tpot: no binary at $bin (set BIN)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
stop=""
[ -n "${STOP:-}" ] && stop=",\"stop\":[\"$STOP\"]"
body="{\"prompt\":\"the film is a masterpiece of quiet observation , and\",\"max_tokens\":$ntok,\"temperature\":0.7,\"stream\":true,\"stream_options\":{\"include_usage\":true}$stop}"
sed -e "s|^  model: \.\./models/chat$|  model: $here/models/decoder|" -e "s|\.\./models/|$here/models/|g" \
  "${CFG:-$here/configs/serving.yaml}" > "$tmp/cfg.yaml"
grep -q "^  model: $here/models/decoder\$" "$tmp/cfg.yaml" ||
  { echo "stream_tpot: configs/serving.yaml has no generator 'model: ../models/chat' line" >&2; exit 1; }

"$bin" serve --config "$tmp/cfg.yaml" --port 0 --port-file "$tmp/port" --no-cache >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { cat "$tmp/server.log"; exit 1; }
url="http://127.0.0.1:$(cat "$tmp/port")/v1/completions"
for _ in 1 2 3; do curl -sN "$url" -d "$body" >/dev/null; done # warm

server_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
server_tokens() { curl -s "${url%/v1/completions}/metrics" | awk '/^anytime_gen_tokens_total/ { printf "%d", $2 }'; }

client() { # dir
  local end=$(( $(date +%s) + secs )) k=0
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -sN --trace-ascii "$1/t$k" --trace-time -o "$1/b$k" "$url" -d "$body" || true
    k=$((k + 1))
  done
}

if [ "${PLAIN:-0}" = 1 ]; then # not streamed: the whole answer at once
  command -v hey >/dev/null || { echo "stream_tpot: PLAIN=1 needs hey" >&2; exit 1; }
  cut=',"stream":true,"stream_options":{"include_usage":true}'
  plain=${body/"$cut"/}
  rows=()
  for p in $(seq 1 "$passes"); do
    cpu0=$(server_cpu_ticks) tok0=$(server_tokens)
    hey -z "${secs}s" -c "$conc" -m POST -T application/json -d "$plain" "$url" > "$tmp/hey" 2>&1
    cpu1=$(server_cpu_ticks) tok1=$(server_tokens)
    row=$(awk -v c="$((cpu1 - cpu0))" -v t="$((tok1 - tok0))" -v hz="$(getconf CLK_TCK)" -v secs="$secs" '
      /Requests\/sec/ { rps = $2 } /\[200\]/ { ok = $2 }
      / 50% in / { p50 = $3 * 1000 } / 90% in / { p90 = $3 * 1000 }
      END { printf "%.1f %.0f %.1f %.1f %.0f %d\n", rps, t / secs, p50, p90, (t > 0 ? c / hz * 1e6 / t : 0), ok }' "$tmp/hey")
    set -- $row
    printf 'pass %d (plain): %s requests/s (%s answered 200), %s tokens/s, latency p50 %s ms p90 %s ms, server CPU %s us/token\n' \
      "$p" "$1" "$6" "$2" "$3" "$4" "$5"
    rows+=("$row")
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  printf '%s\n' "${rows[@]}" | awk -v c="$conc" -v m="$ntok" '
    { for (k = 1; k <= 5; k++) v[k, NR] = $k }
    function med(k,  i, j, x, b) { for (i = 1; i <= NR; i++) b[i] = v[k, i]
      for (i = 2; i <= NR; i++) { x = b[i]; for (j = i - 1; j > 0 && b[j] > x; j--) b[j + 1] = b[j]; b[j + 1] = x }
      return sprintf("%s (%s-%s)", b[int((NR + 1) / 2)], b[1], b[NR]) }
    END { printf "%d plain clients x %d tokens, median of %d passes (range): requests/s %s, tokens/s %s, latency p50 %s ms, p90 %s ms, server CPU %s us/token\n",
      c, m, NR, med(1), med(2), med(3), med(4), med(5) }'
  exit 0
fi

summary=()
for p in $(seq 1 "$passes"); do
  rm -rf "$tmp/run"; mkdir -p "$tmp/run"
  cpu0=$(server_cpu_ticks) tok0=$(server_tokens)
  for c in $(seq 1 "$conc"); do mkdir -p "$tmp/run/$c"; client "$tmp/run/$c" & done
  wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null || true
  cpu1=$(server_cpu_ticks) tok1=$(server_tokens)
  # the server's own CPU (utime + stime) per generated token: the fair
  # measure of its cost when the clients share the cores
  us_tok=$(awk -v c="$((cpu1 - cpu0))" -v t="$((tok1 - tok0))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.0f", (t > 0 ? c / hz * 1e6 / t : 0) }')
  # one line per request: ttft_ms tpot_ms tokens
  for t in "$tmp"/run/*/t*; do
    b=${t%/t*}/b${t##*/t}
    n=$(grep -o '"completion_tokens":[0-9]*' "$b" | tail -n 1 | cut -d: -f2)
    [ -n "$n" ] || continue
    awk -v n="$n" '
      function secs(s,  a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
      /=> Send data/ && !sent { sent = secs($1) }
      /<= Recv data/ { if (!first) first = secs($1); last = secs($1) }
      END { if (sent && first && n > 1) printf "%.3f %.4f %d\n", (first - sent) * 1e3, (last - first) * 1e3 / (n - 1), n }' "$t"
  done > "$tmp/req"
  line=$(awk -v secs="$secs" -v us="$us_tok" '
    { ttft[NR] = $1; tpot[NR] = $2; tok += $3 }
    function q(a, n, f,  i, j, x, b) { for (i = 1; i <= n; i++) b[i] = a[i]
      for (i = 2; i <= n; i++) { x = b[i]; for (j = i - 1; j > 0 && b[j] > x; j--) b[j + 1] = b[j]; b[j + 1] = x }
      return b[int((n - 1) * f) + 1] }
    END { if (NR == 0) { print "0 0 0 0 0 0 0"; exit }
      printf "%d %.0f %.2f %.2f %.3f %.3f %s\n", NR, tok / secs, q(ttft, NR, 0.5), q(ttft, NR, 0.9), q(tpot, NR, 0.5), q(tpot, NR, 0.9), us }' "$tmp/req")
  set -- $line
  printf 'pass %d: %d requests, %s tokens/s, TTFT p50 %s ms p90 %s ms, TPOT p50 %s ms p90 %s ms, server CPU %s us/token\n' \
    "$p" "$1" "$2" "$3" "$4" "$5" "$6" "$7"
  summary+=("$line")
done
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
printf '%s\n' "${summary[@]}" | awk -v c="$conc" -v m="$ntok" '
  { for (k = 1; k <= 7; k++) v[k, NR] = $k }
  function med(k,  i, j, x, b, lo, hi) { for (i = 1; i <= NR; i++) b[i] = v[k, i]
    for (i = 2; i <= NR; i++) { x = b[i]; for (j = i - 1; j > 0 && b[j] > x; j--) b[j + 1] = b[j]; b[j + 1] = x }
    return sprintf("%s (%s-%s)", b[int((NR + 1) / 2)], b[1], b[NR]) }
  END { printf "%d streams x %d tokens, median of %d passes (range): tokens/s %s, TTFT p50 %s ms, TPOT p50 %s ms, TPOT p90 %s ms, server CPU %s us/token\n",
    c, m, NR, med(2), med(3), med(5), med(6), med(7) }'
