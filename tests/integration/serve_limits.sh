#!/usr/bin/env bash
# tests/integration/serve_limits.sh — connection limits and timeouts (issue
# #17 item 2), with raw TCP connections from bash and curl:
#   1. an idle connection is closed after server.idle_timeout_s;
#   2. server.max_connections_per_client: past the cap a client's new
#      connection is closed at once while its others stay open; once they
#      close, it is served again;
#   3. server.max_header_bytes: a request whose headers do not fit gets 431;
#   4. the warnings those refusals cause are rate-limited: 40 refused
#      connections write at most 10 lines, and the next warning after the
#      10 s window says how many were not shown.
# Seen to fail (2026-12-01): with MHD_LOG_BURST raised to 1000, part 4 stops
# at "40 refusals wrote 40 warning lines".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
W=$(mktemp -d)
sed 's/^server:$/server:\n  idle_timeout_s: 2\n  max_connections_per_client: 4\n  max_header_bytes: 8192/' \
  "$ANYTIME_TEST_DATA/serve/tiny.yaml" > "$ANYTIME_TEST_DATA/serve/.limits-$$.yaml"
cfg="$ANYTIME_TEST_DATA/serve/.limits-$$.yaml"
start_server "$cfg"
rm -f "$cfg"
trap 'kill -9 "$SERVER_PID" 2>/dev/null; rm -rf "$SERVE_TMP" "$W"' EXIT

# closed_within SECONDS FD: the server closes the connection on FD within SECONDS
closed_within() {
  local t0=$SECONDS
  timeout "$1" cat <&"$2" >/dev/null 2>&1
  local rc=$?
  [ $rc -ne 124 ]
}

# 1. idle timeout
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
closed_within 5 3 || fail "an idle connection was still open after 5 s (idle_timeout_s: 2)"
exec 3<&-

# 2. per-client cap: 4 open (idle, each closed by the timeout after 2 s).
# A refused 5th is closed at once; an admitted one would stay open until the
# idle timeout, so 1.5 s tells the two apart. (With a 1 s timeout and a 0.5 s
# bound this failed once in the sanitizer build under parallel ctest.)
for fd in 4 5 6 7; do eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"; done
sleep 0.2
exec 8<>"/dev/tcp/127.0.0.1/$PORT"
closed_within 1.5 8 || fail "a 5th connection from the same client was not closed within 1.5 s (idle timeout 2 s)"
for fd in 4 5 6 7 8; do eval "exec $fd<&-"; done
sleep 1.5
st=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")
[ "$st" = 200 ] || fail "after its connections closed the client was not served: $st"

# 3. header cap
big=$(head -c 12000 /dev/zero | tr '\0' 'x')
st=$(curl -s -o /dev/null -w '%{http_code}' -H "x-big: $big" "$BASE/health")
[ "$st" = 431 ] || fail "12 KB of headers against max_header_bytes 8192: $st, want 431"
st=$(curl -s -o /dev/null -w '%{http_code}' -H "x-small: abc" "$BASE/health")
[ "$st" = 200 ] || fail "a small header: $st"

# 4. rate-limited warnings: 4 held open, then 40 refused
sleep 10.5   # a fresh window
before=$(grep -c '\[http\]' "$SERVER_LOG" || true)
for fd in 4 5 6 7; do eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"; done
for _ in $(seq 1 40); do
  exec 9<>"/dev/tcp/127.0.0.1/$PORT" || true
  exec 9<&- || true
done
sleep 0.3
for fd in 4 5 6 7; do eval "exec $fd<&-"; done
lines=$(( $(grep -c '\[http\]' "$SERVER_LOG" || true) - before ))
[ "$lines" -ge 1 ] || fail "the refusals wrote no warning at all (the test no longer makes them)"
[ "$lines" -le 10 ] || fail "40 refusals wrote $lines warning lines"
sleep 10.5
for fd in 4 5 6 7 8; do eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"; done   # one more refusal
sleep 0.3
for fd in 4 5 6 7 8; do eval "exec $fd<&-"; done
grep -q "more libmicrohttpd warnings in the last 10 s were not shown" "$SERVER_LOG" ||
  fail "no summary of the suppressed warnings: $(grep '\[http\]' "$SERVER_LOG" | tail -3)"
sleep 1.2
stop_server
echo "serve_limits: ok"
