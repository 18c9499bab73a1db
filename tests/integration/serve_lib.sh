# tests/integration/serve_lib.sh — sourced by the HTTP tests: start the real
# `anytime serve` on a free loopback port and stop it with SIGTERM, checking
# that it exits 0 (graceful drain). Sets PORT, BASE and SERVER_PID.
: "${ANYTIME_BIN:?run through ctest}" "${ANYTIME_TEST_DATA:?run through ctest}"
fail() { echo "FAIL: $*" >&2; [ -n "${SERVER_LOG:-}" ] && tail -n 20 "$SERVER_LOG" >&2; exit 1; }

# need_clients: the npm clients pinned in tests/clients/package.json, installed
# with `npm ci` when any is missing (a fresh clone, or a checkout that gained
# one since its last install). Tests that run at once under ctest -j take a
# lock so that one installs while the others wait.
need_clients() {
  local dir="$ANYTIME_SOURCE_DIR/tests/clients"
  (
    flock 9
    if ! (cd "$dir" && node -e 'const fs = require("fs");
      for (const d of Object.keys(require("./package.json").dependencies))
        if (!fs.existsSync(`node_modules/${d}/package.json`)) process.exit(1)'); then
      (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null) || exit 1
    fi
  ) 9>"$dir/.install.lock" || fail "npm ci in tests/clients failed"
}

start_server() { # config [extra args...]
  local cfg=$1; shift
  start_server_args --config "$cfg" "$@"
}

start_server_args() { # serve args... (the configuration given by them: --config or --model)
  SERVE_TMP=$(mktemp -d)
  SERVER_LOG="$SERVE_TMP/server.log"
  # a compiled-artifact cache of its own, removed with SERVE_TMP: a test
  # server never writes into the user's cache (--cache-dir overrides it)
  ANYTIME_CACHE_DIR="$SERVE_TMP/cache" \
    "$ANYTIME_BIN" serve --port 0 --port-file "$SERVE_TMP/port" "$@" \
      >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  trap 'kill -9 "$SERVER_PID" 2>/dev/null; rm -rf "$SERVE_TMP"' EXIT  # never leave a server behind
  for _ in $(seq 1 600); do
    [ -s "$SERVE_TMP/port" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || fail "server exited during start-up"
    sleep 0.05
  done
  [ -s "$SERVE_TMP/port" ] || fail "server did not start within 30 s"
  PORT=$(cat "$SERVE_TMP/port")
  BASE="http://127.0.0.1:$PORT"
}

stop_server() {
  kill -TERM "$SERVER_PID"
  wait_server_exit
}

# After SIGTERM (sent by stop_server or by the test itself): the server must
# exit 0 within 30 s with no sanitizer report in its log.
wait_server_exit() {
  local rc=0 waited=0
  while kill -0 "$SERVER_PID" 2>/dev/null && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
  kill -0 "$SERVER_PID" 2>/dev/null && fail "server still running 30 s after SIGTERM (drain hangs)"
  wait "$SERVER_PID" || rc=$?
  trap - EXIT
  [ $rc -eq 0 ] || fail "server exited $rc after SIGTERM (expected 0)"
  if grep -E "ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:" "$SERVER_LOG" >/dev/null; then
    fail "sanitizer report in the server log"
  fi
  rm -rf "$SERVE_TMP"
}

# req METHOD PATH [BODY] -> sets STATUS, BODY, HEADERS
req() {
  local method=$1 path=$2 data=${3-}
  local hdr="$SERVE_TMP/h" out="$SERVE_TMP/b"
  if [ -n "$data" ]; then
    STATUS=$(curl -s -o "$out" -D "$hdr" -w '%{http_code}' -X "$method" "$BASE$path" \
             -H 'Content-Type: application/json' --data-binary "$data")
  else
    STATUS=$(curl -s -o "$out" -D "$hdr" -w '%{http_code}' -X "$method" "$BASE$path")
  fi
  BODY=$(cat "$out")
  HEADERS=$(cat "$hdr")
}

expect() { # status [grep-pattern-in-body]
  [ "$STATUS" = "$1" ] || fail "expected $1, got $STATUS: $BODY"
  if [ -n "${2-}" ]; then grep -qE -- "$2" <<<"$BODY" || fail "body lacks /$2/: $BODY"; fi
}
