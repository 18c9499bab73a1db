#!/usr/bin/env bash
# tests/integration/serve_flags.sh — `anytime serve`'s settings on the
# command line go through the configuration table (src/serve/config_keys.c)
# like the file's, with its ranges and messages:
#   1. a flag out of the table's range is refused before anything loads,
#      exit 2, the message naming the setting;
#   2. --set SECTION.KEY=VALUE: an unknown key, a value of the wrong type
#      and a bad choice are refused the same way;
#   3. --set and the aliases take effect, in order, over the file: the
#      start line shows engine.workers and planner.policy, a request with
#      more texts than --set server.max_inputs is refused 413, and
#      --deadline-ms above the file's max_deadline_ms raises it (where
#      --set planner.deadline_ms is refused).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
cfg="$ANYTIME_TEST_DATA/serve/tiny.yaml"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

refused() { # pattern args... : exit 2 with the pattern on stderr, no server
  local pat=$1; shift
  local rc=0
  timeout 60 "$ANYTIME_BIN" serve --config "$cfg" --port 0 "$@" >"$W/out" 2>&1 || rc=$?
  [ $rc -eq 2 ] || fail "serve $* exited $rc, expected 2: $(cat "$W/out")"
  grep -qF -- "$pat" "$W/out" || fail "serve $*: no '$pat' in: $(cat "$W/out")"
  echo "ok: serve $* -> exit 2, '$pat'"
}

# 1. aliases hold the table's ranges
refused "planner.deadline_ms" --deadline-ms 0
refused "out of range [0.01, 3.6e+06]" --deadline-ms 0.001
refused "out of range [1, 1024]" --workers 0
refused "'port' must be a whole number" --port 80.5
refused "'policy' must be adaptive, accurate-only, none or limit" --policy fast
refused "'max_queue_delay_us' = -1 is out of range" --max-delay-us -1

# 2. --set
refused "'planner.nope' is not a setting" --set planner.nope=1
refused "SECTION.KEY=VALUE" --set workers=1
refused "'hold_early_retries' must be true or false" --set server.hold_early_retries=maybe
refused "'max_deadline_ms' = 0 is out of range" --set planner.max_deadline_ms=0
refused "max_deadline_ms (100) is below deadline_ms (5000)" --set planner.max_deadline_ms=100
# --set is the table's key as it is: no raise
refused "max_deadline_ms (10000) is below deadline_ms (20000)" --set planner.deadline_ms=20000

# 3. in effect, in order, over the file (tiny.yaml: 2 workers, adaptive,
# 16 inputs, max_deadline_ms 10000)
start_server "$cfg" --workers 2 --set engine.workers=1 --set planner.policy=none \
  --set server.max_inputs=2 --deadline-ms 20000
grep -q "policy none, 1 workers" "$SERVER_LOG" || fail "start line: $(grep serving "$SERVER_LOG")"
echo "ok: --set over an alias, in order: $(grep -o 'policy none, 1 workers' "$SERVER_LOG")"
req POST /predict '{"inputs":[["a good film"],["a bad film"]]}'; expect 200
req POST /predict '{"inputs":[["a"],["b"],["c"]]}'; expect 413 "max_inputs"
echo "ok: --set server.max_inputs=2: 2 texts answered, 3 refused 413"
echo "ok: --deadline-ms 20000 over max_deadline_ms 10000 started (it raises the maximum)"
stop_server

# 4. server.http_batch_sched: the HTTP thread, once it has accepted a
# connection, runs as SCHED_BATCH (policy 3 in /proc/TID/stat, field 41);
# without it SCHED_OTHER (0). One HTTP thread, so it is the one that accepts.
http_policy() { for t in /proc/"$SERVER_PID"/task/*; do
  case "$(cat "$t/comm")" in MHD-*) awk '{print $41}' "$t/stat" ;; esac; done | sort -u | tr -d '\n'; }
for want in "true 3" "false 0"; do
  set -- $want
  start_server "$cfg" --set server.http_threads=1 --set server.http_batch_sched="$1"
  req GET /health; expect 200
  got=$(http_policy)
  [ "$got" = "$2" ] || fail "http_batch_sched $1: the HTTP thread's policy is '$got' (want $2)"
  echo "ok: server.http_batch_sched=$1: the HTTP thread's scheduling policy $got"
  stop_server
done
echo "PASS: serve flags"
