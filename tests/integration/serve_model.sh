#!/usr/bin/env bash
# tests/integration/serve_model.sh — `anytime serve --model` by Hugging Face
# repo id from a real hub-cache layout (tests/data/hf/make_hub.sh): no config
# file, a named revision and a pinned variant, answers over HTTP, the
# compiled-artifact cache filled on first start, and a missing model refused
# with the places searched.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bash "$ANYTIME_TEST_DATA/hf/make_hub.sh" "$tmp/hub" >/dev/null
export HF_HUB_CACHE="$tmp/hub"
start_model() { # args...
  SERVE_TMP=$(mktemp -d); SERVER_LOG="$SERVE_TMP/log"
  "$ANYTIME_BIN" serve --port 0 --port-file "$SERVE_TMP/port" "$@" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  trap 'kill -9 "$SERVER_PID" 2>/dev/null; rm -rf "$tmp" "$SERVE_TMP"' EXIT
  for _ in $(seq 1 200); do [ -s "$SERVE_TMP/port" ] && break; kill -0 $SERVER_PID 2>/dev/null || fail "server died"; sleep 0.05; done
  PORT=$(cat "$SERVE_TMP/port"); BASE="http://127.0.0.1:$PORT"
}
start_model --model anytime-test/tiny-sentiment --variant int8 --cache-dir "$tmp/cache"
req POST /predict '{"inputs":"the movie was good"}'; expect 200 '"label":"(negative|neutral|positive)"'
grep -qi '^x-variant: int8' <<<"$HEADERS" || fail "not served by the pinned int8 variant: $HEADERS"
ls "$tmp/cache/artifacts" | grep -qE '^[0-9a-f]{64}$' || fail "no artifact was cached on first start"
stop_server
start_model --model anytime-test/tiny-sentiment@v1 --no-cache
req POST /predict '{"inputs":"good"}'; expect 200 '"label"'
stop_server
set +e
msg=$("$ANYTIME_BIN" serve --model anytime-test/does-not-exist --port 0 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "a missing model was served"
grep -q "$tmp/hub" <<<"$msg" || fail "the error does not list the hub cache searched: $msg"
msg=$("$ANYTIME_BIN" serve --model ../../etc --port 0 2>&1) && fail "a path escape was served"
echo "PASS: serve --model by repo id, revision and variant; artifact cache; missing model"
