#!/usr/bin/env bash
# tests/integration/serve_accesslog.sh — the access log and x-request-id
# (issue #17 item 3, #19 item 2), read back with jq:
#   1. one JSON line per answered request, whatever the status (200, 400,
#      404, 413, 429-free here), with its route, model, variant, status,
#      times and byte counts; the x-request-id a client sent comes back in
#      the answer and in its line; one is made for requests without it,
#      unique per request;
#   2. 1,600 requests from 8 hey clients: 1,600 whole lines, every one valid
#      JSON (one write() per line: none interleaved);
#   3. rotation: after `mv`, lines go to the moved file until SIGHUP, then
#      to a new file at the configured path; a streamed completion has its
#      line too;
#   4. off by default: no file is written without --access-log.
# Seen to fail (2026-12-01): with serve_log_request() called only for 200s,
# part 1 stops at "4 lines for 7 answers".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v jq >/dev/null || fail "jq is not installed (scripts/install-deps.sh test)"
command -v hey >/dev/null || fail "hey is not installed (scripts/install-deps.sh test)"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG="$W/access.log"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --access-log "$LOG"

# 1. one line per answer, ids
rid=$(curl -s -D - -o /dev/null -X POST "$BASE/predict" -H "x-request-id: client-id.42" \
      -d '{"inputs": "the movie was good"}' | tr -d '\r' | awk -F': ' 'tolower($1) == "x-request-id" { print $2 }')
[ "$rid" = "client-id.42" ] || fail "the client's x-request-id came back as '$rid'"
made=()
for body in '{"inputs": ["the movie", "a film"]}' '{"inputs": "' ; do
  made+=("$(curl -s -D - -o /dev/null -X POST "$BASE/embed" -d "$body" | tr -d '\r' |
            awk -F': ' 'tolower($1) == "x-request-id" { print $2 }')")
done
[ -n "${made[0]}" ] && [ "${made[0]}" != "${made[1]}" ] || fail "made ids missing or equal: ${made[*]}"
curl -s -o /dev/null -X POST "$BASE/predict" -H "x-request-id: has spaces in it" -d '{"inputs": "x"}'
curl -s -o /dev/null "$BASE/no/such/route"
head -c 70000 /dev/zero | tr '\0' 'a' | curl -s -o /dev/null -X POST "$BASE/predict" --data-binary @-
curl -s -o /dev/null "$BASE/health"
sleep 0.2
n=$(wc -l < "$LOG")
[ "$n" -eq 7 ] || fail "$n lines for 7 answers: $(cat "$LOG")"
jq -e -s 'length == 7' "$LOG" >/dev/null || fail "not 7 JSON lines: $(cat "$LOG")"
jq -e -s '.[0] | .request_id == "client-id.42" and .route == "/predict" and .status == 200 and
          .model == "tiny-classifier" and .variant != "" and .method == "POST" and
          .total_ms > 0 and .bytes_in > 0 and .bytes_out > 0 and (.time | test("Z$"))' "$LOG" >/dev/null ||
  fail "the first line lacks a field: $(head -n 1 "$LOG")"
jq -e -s --arg a "${made[0]}" --arg b "${made[1]}" \
   '.[1].request_id == $a and .[2].request_id == $b and .[2].status == 400' "$LOG" >/dev/null ||
  fail "lines 2-3 do not carry the made ids / statuses: $(sed -n 2,3p "$LOG")"
jq -e -s '.[3].request_id != "has spaces in it" and (.[3].request_id | length) > 0' "$LOG" >/dev/null ||
  fail "an id with spaces was kept: $(sed -n 4p "$LOG")"
jq -e -s '[.[].status] == [200, 200, 400, 200, 404, 413, 200]' "$LOG" >/dev/null ||
  fail "statuses: $(jq -c -s '[.[].status]' "$LOG")"

# 2. concurrency: whole lines
hey -n 1600 -c 8 -m POST -T application/json -d '{"inputs": "the movie was good"}' "$BASE/predict" > "$W/hey.txt"
sleep 0.2
n=$(wc -l < "$LOG")
[ "$n" -eq 1607 ] || fail "$n lines after 1,600 more requests, want 1607"
jq -e -s 'length == 1607 and ([.[].request_id] | unique | length) == 1607' "$LOG" >/dev/null ||
  fail "not 1607 JSON lines with distinct ids"

# 3. rotation
mv "$LOG" "$LOG.1"
curl -s -o /dev/null "$BASE/health"
kill -HUP "$SERVER_PID"
sleep 0.3
curl -s -o /dev/null "$BASE/health"; curl -s -o /dev/null "$BASE/health"
# a streamed completion is logged too (when its stream starts)
curl -sN -o /dev/null "$BASE/v1/completions" -H "x-request-id: stream-1" \
    -d '{"prompt": "the", "max_tokens": 4, "stream": true}'
sleep 0.2
[ "$(wc -l < "$LOG.1")" -eq 1608 ] || fail "the moved file has $(wc -l < "$LOG.1") lines, want 1608"
[ -f "$LOG" ] && [ "$(wc -l < "$LOG")" -eq 3 ] || fail "after SIGHUP the new file has $(wc -l < "$LOG" 2>/dev/null) lines, want 3"
jq -e -s '.[2].route == "/v1/completions" and .[2].request_id == "stream-1"' "$LOG" >/dev/null ||
  fail "the streamed completion's line: $(tail -n 1 "$LOG")"
kill -0 "$SERVER_PID" || fail "SIGHUP stopped the server"
stop_server

# 4. off by default
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
curl -s -o /dev/null "$BASE/health"
stop_server
[ -z "$(find "$W" -newer "$LOG" -type f)" ] || fail "a file was written without --access-log"
echo "serve_accesslog: ok"
