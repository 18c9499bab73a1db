#!/usr/bin/env bash
# tests/integration/clients.sh — real third-party clients (npm, pinned in
# tests/clients/package.json, installed here on first run) against the real
# server: the `openai` package's embeddings.create, models.list and
# completions.create (plain and streaming).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
dir="$ANYTIME_SOURCE_DIR/tests/clients"
if [ ! -d "$dir/node_modules/openai" ]; then
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null) || fail "npm ci in tests/clients failed"
fi
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
node "$dir/openai_embeddings.mjs" "$BASE" tiny-embedder 16 || fail "openai client test"
node "$dir/openai_completions.mjs" "$BASE" decoder || fail "openai completions client test"
stop_server
