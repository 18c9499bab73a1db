#!/usr/bin/env bash
# tests/integration/serve_concurrency.sh — run http_concurrency (8 clients x
# 250 requests, mixed routes) against the real server; then check /metrics
# saw batches larger than one, and that SIGTERM drains and exits 0.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
: "${HTTP_CONCURRENCY_BIN:?run through ctest}"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
"$HTTP_CONCURRENCY_BIN" "$PORT" 8 250 || fail "concurrent answers differ from the single-request reference"
req GET /metrics; expect 200
batched=$(echo "$BODY" | awk -F'[ {}]' '/^anytime_batch_size_bucket/ && /le="1"/ {s+=$NF} /^anytime_batch_size_count/ {c+=$NF} END {print c-s}')
echo "batches with more than one item: $batched"
[ "${batched:-0}" -gt 0 ] || fail "no request was ever batched with another"
stop_server
echo "PASS: concurrency"
