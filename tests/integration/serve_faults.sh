#!/usr/bin/env bash
# tests/integration/serve_faults.sh — faults injected into the engine's Runs
# (ANYTIME_FAULTS, src/core/fault.h; issue #17 item 4):
#   1. every 4th Run fails: exactly those requests get 500 naming the
#      injected fault, the others 200; under 8 concurrent clients every
#      request still gets exactly one answer, and afterwards the planner
#      holds no text and refused no release;
#   1b. every 4th request's job allocation fails: exactly those get 500
#      "out of memory" (text and V2 requests alike), the others 200, and
#      the planner's books are left empty;
#   2. Runs that stall (40 ms each, the first 40 only): the planner's
#      correction factor for the variant rises above 2 while they stall and
#      is back at 1 after 3 s of fast ones;
#   3. the model file truncated under a running server: it keeps answering
#      (the session is in memory); a restart refuses the file by name.
# Seen to fail (2026-12-01): with at_fault_engine_run()'s result ignored in
# src/engine/engine.c, part 1 stops at "0 of 40 failed, want 10"; with
# serve_job_alloc()'s fault hook removed, part 1b at "failing allocations:
# 0 of 40 failed, want 10".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v hey >/dev/null || fail "hey is not installed (scripts/install-deps.sh test)"
cfg="$ANYTIME_TEST_DATA/serve/tiny.yaml"
P='{"inputs": "the movie was good"}'
metric() { # the value of the first line starting with $1 (awk reads all: no SIGPIPE for curl)
  curl -s "$BASE/metrics" | awk -v k="$1" 'index($0, k) == 1 && v == "" { v = $NF } END { print v }'
}

# send40 WORDS [ALT_PATH ALT_BODY]: 40 requests one after another (every
# second one to ALT_PATH with ALT_BODY when given); counts 200s in oks and
# 500s in fails; a 500 must contain WORDS, any other status fails the test
send40() {
  local words=$1 path=/predict body=$P st
  fails=0 oks=0
  for i in $(seq 1 40); do
    if [ $# -gt 1 ] && [ $((i % 2)) = 1 ]; then path=$2 body=$3; else path=/predict body=$P; fi
    st=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' -X POST "$BASE$path" -d "$body")
    case "$st" in
      200) oks=$((oks + 1)) ;;
      500) fails=$((fails + 1)); grep -q "$words" "$SERVE_TMP/b" || fail "a 500 without '$words': $(cat "$SERVE_TMP/b")" ;;
      *) fail "status $st: $(cat "$SERVE_TMP/b")" ;;
    esac
  done
}

# 1. failing Runs
export ANYTIME_FAULTS=run_fail_every=4
start_server "$cfg"
unset ANYTIME_FAULTS
send40 "injected fault"
[ "$fails" -eq 10 ] && [ "$oks" -eq 30 ] || fail "$fails of 40 failed, want 10 ($oks answered)"
hey -n 400 -c 8 -m POST -T application/json -d "$P" "$BASE/predict" > "$SERVE_TMP/hey.txt"
n200=$(awk '$1 == "[200]" { print $2 }' "$SERVE_TMP/hey.txt"); n500=$(awk '$1 == "[500]" { print $2 }' "$SERVE_TMP/hey.txt")
[ $(( ${n200:-0} + ${n500:-0} )) -eq 400 ] || fail "400 concurrent requests got ${n200:-0} + ${n500:-0} answers: $(cat "$SERVE_TMP/hey.txt")"
[ "${n500:-0}" -ge 50 ] || fail "only ${n500:-0} of 400 concurrent requests failed; every 4th Run should"
[ "$(metric 'anytime_planner_release_errors_total')" = 0 ] || fail "release errors after failed Runs"
[ "$(metric 'anytime_planner_inflight_texts{model="tiny-classifier"}')" = 0 ] || fail "texts left in flight after failed Runs"
grep -q "ANYTIME_FAULTS is set" "$SERVER_LOG" || fail "the server did not say faults are injected"
stop_server

# 1b. failing job allocations (the request path's memory, before the
# batcher): every 4th request is answered 500 "out of memory" and the rest
# 200; the texts it had been admitted with are released (nothing left in
# the planner's books, no release refused); V2 requests take the same path.
export ANYTIME_FAULTS=alloc_fail_every=4
start_server "$cfg"
unset ANYTIME_FAULTS
V2='{"inputs":[{"name":"input_ids","shape":[1,3],"datatype":"INT64","data":[2,7,3]},{"name":"attention_mask","shape":[1,3],"datatype":"INT64","data":[1,1,1]}]}'
send40 "out of memory" /v2/models/tiny-classifier/infer "$V2"
[ "$fails" -eq 10 ] && [ "$oks" -eq 30 ] || fail "failing allocations: $fails of 40 failed, want 10 ($oks answered)"
hey -n 400 -c 8 -m POST -T application/json -d "$P" "$BASE/predict" > "$SERVE_TMP/hey.txt"
n200=$(awk '$1 == "[200]" { print $2 }' "$SERVE_TMP/hey.txt"); n500=$(awk '$1 == "[500]" { print $2 }' "$SERVE_TMP/hey.txt")
[ "${n200:-0}" -eq 300 ] && [ "${n500:-0}" -eq 100 ] ||
  fail "400 concurrent requests with every 4th allocation failing: ${n200:-0} x 200, ${n500:-0} x 500"
[ "$(metric 'anytime_planner_release_errors_total')" = 0 ] || fail "release errors after failed allocations"
[ "$(metric 'anytime_planner_inflight_texts{model="tiny-classifier"}')" = 0 ] || fail "texts left in flight after failed allocations"
stop_server

# 2. stalls and recovery. The profile says the classifier takes 10 ms (it
# takes ~0.05, and a few ms on a host loaded by other work), so a fast Run
# observes well under half of it (kept at the planner's floor, 0.5) and a
# 200 ms stall 20x (kept at its ceiling, 4), in any build on any load. (With
# a 2 ms profile, a host at load 6 made "fast" Runs take 1-2 ms and the
# factor settled at 1.1-1.4: the test measured the host, not the planner.)
sed 's/service_ms: {1: 0.05, 8: 0.2}/service_ms: {1: 10.0, 8: 40.0}/' "$cfg" > "$ANYTIME_TEST_DATA/serve/.stall-$$.yaml"
export ANYTIME_FAULTS=run_stall_every=1,run_stall_ms=200,run_stall_first=40
start_server "$ANYTIME_TEST_DATA/serve/.stall-$$.yaml"
unset ANYTIME_FAULTS
rm -f "$ANYTIME_TEST_DATA/serve/.stall-$$.yaml"
scale() { metric 'anytime_planner_service_scale{model="tiny-classifier",variant="a"}'; }
s0=$(scale)
for i in $(seq 1 40); do curl -s -o /dev/null -X POST "$BASE/predict" -H 'x-deadline-ms: 5000' -d "$P"; done
s1=$(scale)
# one request at a time, as the stalls came (the part-pool factor, which
# weighs Runs by the time between them: tau 0.5 s), for 3 s
# — at least 3 s and at least 100 Runs (a curl per request managed only 19
# in 3 s on a loaded host; hey sends ten in a row from one process)
n=0 t_end=$((SECONDS + 3))
while [ $SECONDS -lt $t_end ] || [ $n -lt 100 ]; do
  hey -n 10 -c 1 -m POST -T application/json -H 'x-deadline-ms: 5000' -d "$P" "$BASE/predict" >/dev/null
  n=$((n + 10))
  sleep 0.02
done
s2=$(scale)
echo "faults: service scale $s0 before, $s1 after 40 stalled Runs, $s2 after $n fast ones (3 s)"
awk -v b="$s1" 'BEGIN { exit !(b > 2) }' || fail "40 stalled Runs left the factor at $s1 (from $s0), want > 2"
# (the estimate uses the larger of the part- and full-pool factors; the
# full one, never observed here, stays at its base, 1)
awk -v c="$s2" 'BEGIN { exit !(c < 1.05) }' || fail "after $n fast Runs the factor is $s2 (from $s1), want back at 1"
stop_server

# 3. the model file truncated under a running server
T=$(mktemp -d)
cp "$ANYTIME_TEST_DATA/models/tiny_encoder.onnx" "$T/enc.onnx"
sed "s|path: ../models/tiny_encoder.onnx|path: $T/enc.onnx|" "$cfg" > "$ANYTIME_TEST_DATA/serve/.faults-$$.yaml"
start_server "$ANYTIME_TEST_DATA/serve/.faults-$$.yaml"
truncate -s 100 "$T/enc.onnx"
for i in 1 2 3; do
  st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/predict" -d "$P")
  [ "$st" = 200 ] || fail "after the file was truncated the running server answered $st"
done
stop_server
if "$ANYTIME_BIN" serve --config "$ANYTIME_TEST_DATA/serve/.faults-$$.yaml" --port 0 > "$T/log" 2>&1; then
  fail "a truncated model file was served"
fi
grep -q "enc.onnx" "$T/log" || fail "the error does not name the file: $(cat "$T/log")"
rm -rf "$T" "$ANYTIME_TEST_DATA/serve/.faults-$$.yaml"
echo "serve_faults: ok"
