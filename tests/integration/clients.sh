#!/usr/bin/env bash
# tests/integration/clients.sh — real third-party clients (npm, pinned in
# tests/clients/package.json, installed here on first run) against the real
# server: the `openai` package's embeddings.create, models.list,
# completions.create (plain and streaming) and, on the default chat model,
# chat.completions.create (tests/clients/openai_chat.mjs); a model without
# a chat template answers the chat route with the client's BadRequestError;
# the SDK's error.code/type/param on a 400, 404, 422 and 429,
# @langchain/openai's OpenAIEmbeddings with its defaults, and token-array
# input (tests/clients/openai_errors.mjs).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
dir="$ANYTIME_SOURCE_DIR/tests/clients"
need_clients
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
node "$dir/openai_embeddings.mjs" "$BASE" tiny-embedder 16 || fail "openai client test"
node "$dir/openai_completions.mjs" "$BASE" decoder || fail "openai completions client test"
node "$dir/openai_errors.mjs" "$BASE" tiny-embedder || fail "openai errors / langchain / token arrays test"
# the default decoder has no chat template: a clear 400 naming why
req POST /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}]}'
expect 400 'no usable chat template'
stop_server
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml" --policy limit --inflight-limit 1
node "$dir/openai_errors.mjs" "$BASE" tiny-embedder --limit || fail "openai SDK on a 429"
stop_server
start_server "$ANYTIME_TEST_DATA/serve/chat.yaml"
node "$dir/openai_chat.mjs" "$BASE" chat || fail "openai chat client test"
stop_server
