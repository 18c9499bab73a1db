#!/usr/bin/env bash
# tests/integration/serve_conn_wave.sh — a wave of requests ready at once on
# every keep-alive connection of one HTTP thread is answered at once
# (tests/integration/conn_wave.c stops the server, queues one request on each
# connection, continues it). Connection counts around 128, the batch
# libmicrohttpd's epoll loop takes per call: with that loop (server.c before
# it moved to poll()) the wave of exactly 128 was answered only when the
# clients gave up — serve_admission's burst of 200 hey clients lost 114
# requests to hey's 20 s timeout that way in one CI run.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
: "${CONN_WAVE_BIN:?run through ctest}"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --set server.http_threads=1
for n in 127 128 129 200 256; do
  "$CONN_WAVE_BIN" "$PORT" "$SERVER_PID" "$n" 3 3000 ||
    fail "$n connections: a wave was not answered within 3 s of the server continuing"
done
stop_server
echo "PASS: conn_wave"
