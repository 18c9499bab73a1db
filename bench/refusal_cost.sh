#!/usr/bin/env bash
# bench/refusal_cost.sh — what a 429 costs the server (issue 14): server CPU
# per refused request against server CPU per answered one, and the request
# rate the server sustains at 100 % refusal against its rate of 200s.
#
# One `anytime serve` on configs/serving.yaml. Two closed-loop wrk loads,
# PASSES passes each, every pass a fixed number of answers (N; the script
# polls the server's count and stops wrk there):
#   429: requests of K texts with x-deadline-ms D, chosen so that the idle
#        server refuses every one of them by deadline: K texts on c workers
#        need ceil(K/c) Runs of the cheapest variant one after another, more
#        than D ms, while one text alone would fit (so the reason is
#        "deadline", not "infeasible"). No inference runs at all, so the
#        server's CPU in the pass is the refusal path alone — no background
#        load to subtract. The script checks every answer was a refusal:
#        429, or 422 where the request's own age (time spent reading and
#        parsing it on a saturated host) left less than one Run of its
#        deadline — the same path; the count of 422s is printed.
#   200: one-text requests with x-deadline-ms 1000: eight in flight fit it
#        whatever the planner's overrun allowance (at most the default
#        deadline), so every one is admitted and runs.
# Server CPU = utime + stime of the server process from /proc/PID/stat
# (clock ticks of 1/CLK_TCK s) over the pass; per request = that / the
# answers the server counted in the pass (anytime_requests_total).
# Prints each pass, then the median of the passes and their range.
#
#   bench/refusal_cost.sh [PASSES (3)] [N_429 (200000)] [N_200 (40000)]
#   env: ANYTIME_BIN (build/anytime), CONNS (8), K (8), WORDS (6 per text),
#        DEADLINE_MS (1),
#        PERF=1 records a perf profile of the server during the first 429 pass
#        into $PERF_OUT (/tmp/perf-refusal.data)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$here/build/anytime}
passes=${1:-3} n429=${2:-200000} n200=${3:-40000}
conns=${CONNS:-8} K=${K:-8} dl=${DEADLINE_MS:-1}
cfg=$here/configs/serving.yaml
command -v wrk >/dev/null || { echo "refusal_cost: needs wrk (apt-get install wrk)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT  # never leave a server behind
"$bin" serve --config "$cfg" --no-cache --port 0 --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "refusal_cost: server did not start: $(tail -2 "$tmp/server.log")" >&2; exit 1; }
base=http://127.0.0.1:$(cat "$tmp/port")
# wrk's request generator: POST /predict with $BODY (and x-deadline-ms:
# $DEADLINE when set).
cat >"$tmp/pass.lua" <<'LUA'
local body, deadline = os.getenv("BODY"), os.getenv("DEADLINE") or ""
local req
function init(args)
  local h = { ["Content-Type"] = "application/json" }
  if deadline ~= "" then h["x-deadline-ms"] = deadline end
  req = wrk.format("POST", "/predict", h, body)
end
function request() return req end
LUA
tck=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14, $15}' "/proc/$server/stat"; }  # utime stime
answers() { # answers on /predict whose status starts with $1 ("" = any), as the server counts them
  curl -s "$base/metrics" | awk -v s="status=\"$1" 'index($0, "anytime_requests_total{route=\"/predict\"") == 1 && index($0, s) {t += $NF} END {printf "%d\n", t}'
}
words=${WORDS:-6}   # words per text of the refused requests
text=$(printf 'the film was a good one %.0s' $(seq 1 $(((words + 5) / 6))) | cut -d' ' -f1-"$words")
texts=""; for _ in $(seq 1 "$K"); do texts+="\"$text\","; done
body429="{\"inputs\":[${texts%,}]}"
body200='{"inputs":"the film was a good one"}'

# check the workload: one 429 by deadline, one 200
s=$(curl -s -o "$tmp/b" -w '%{http_code}' "$base/predict" -H "x-deadline-ms: $dl" -d "$body429")
[ "$s" = 429 ] && grep -q 'cannot finish within' "$tmp/b" || {
  echo "refusal_cost: the $K-text request with a $dl ms deadline got $s, not a 429 by deadline: $(cat "$tmp/b")" >&2; exit 1; }
s=$(curl -s -o /dev/null -w '%{http_code}' "$base/predict" -H 'x-deadline-ms: 1000' -d "$body200")
[ "$s" = 200 ] || { echo "refusal_cost: the one-text request got $s" >&2; exit 1; }

# pass KIND N BODY [DEADLINE]: one closed-loop wrk pass until the server
# has answered N requests with status KIND (polled on /metrics every 0.1 s;
# wrk cannot stop itself early), then wrk is stopped; prints
# "req_per_s cpu_us_per_request answers"
pass() {
  local kind=$1 n=$2 body=$3 hdr=${4:-}
  local a0 a1 u0 u1 s0 s1 t0 t1 w all0
  all0=$(answers ""); a0=$(answers "$kind"); read -r u0 s0 < <(cpu_ticks); t0=$(date +%s.%N)
  BODY=$body DEADLINE=$hdr wrk -t1 -c"$conns" -d600s -s "$tmp/pass.lua" "$base/predict" \
      >"$tmp/wrk.out" 2>&1 &
  w=$!
  while [ $(($(answers "$kind") - a0)) -lt "$n" ]; do
    kill -0 "$w" 2>/dev/null || { echo "refusal_cost: wrk ended early: $(cat "$tmp/wrk.out")" >&2; exit 1; }
    sleep 0.1
  done
  kill -INT "$w"; wait "$w" || true
  t1=$(date +%s.%N); sleep 0.2   # the last answers in flight
  read -r u1 s1 < <(cpu_ticks); a1=$(answers "$kind")
  local all1
  all1=$(answers "")
  [ $((all1 - all0)) = $((a1 - a0)) ] || {
    echo "refusal_cost: $((all1 - all0 - a1 + a0)) of the pass's answers were not ${kind}x" >&2; exit 1; }
  awk -v a=$((a1 - a0)) -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$tck" -v t0="$t0" -v t1="$t1" \
    'BEGIN {printf "%.0f %.2f %.2f %.2f %d\n", a / (t1 - t0), (u + s) / t / a * 1e6, u / t / a * 1e6, s / t / a * 1e6, a}'
}
med() { sort -n | awk '{v[NR] = $1} END {printf "%s [%s..%s]", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]}'; }

echo "# refusal_cost: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(date -u +%FT%TZ)"
echo "# server: $cfg; wrk -t1 -c$conns closed loop; 429: $K texts of $words words (${#body429}-byte body), x-deadline-ms $dl; 200: 1 text, x-deadline-ms 1000"
printf '%-5s %4s %10s %10s %8s %8s %10s\n' kind pass req_per_s cpu_us_req user_us sys_us answers
: >"$tmp/r429"; : >"$tmp/r200"
for p in $(seq 1 "$passes"); do
  if [ "${PERF:-0}" = 1 ] && [ "$p" = 1 ]; then
    perf record -e cpu-clock --call-graph dwarf -p "$server" -o "${PERF_OUT:-/tmp/perf-refusal.data}" \
        -- sleep 3 >/dev/null 2>&1 &
  fi
  read -r rps us uu su got < <(pass 42 "$n429" "$body429" "$dl")
  printf '%-5s %4d %10s %10s %8s %8s %10s\n' 4xx "$p" "$rps" "$us" "$uu" "$su" "$got"
  echo "$rps $us $uu $su" >>"$tmp/r429"
  read -r rps us uu su got < <(pass 200 "$n200" "$body200" 1000)
  printf '%-5s %4d %10s %10s %8s %8s %10s\n' 200 "$p" "$rps" "$us" "$uu" "$su" "$got"
  echo "$rps $us $uu $su" >>"$tmp/r200"
done
wait_perf=$(jobs -p | grep -v "^$server$" || true); [ -n "$wait_perf" ] && wait $wait_perf 2>/dev/null || true
echo "median [range] of $passes passes:"
for k in 429 200; do
  echo "  $k: $(awk '{print $1}' "$tmp/r$k" | med) req/s; server CPU per $k: $(awk '{print $2}' "$tmp/r$k" | med) us (user $(awk '{print $3}' "$tmp/r$k" | med), system $(awk '{print $4}' "$tmp/r$k" | med))"
done
echo "  (refusals: $(answers 429) x 429, $(answers 422) x 422)"
kill -TERM "$server"; wait "$server" || true
