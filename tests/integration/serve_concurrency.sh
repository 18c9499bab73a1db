#!/usr/bin/env bash
# tests/integration/serve_concurrency.sh — run http_concurrency (8 clients x
# 250 requests, mixed routes) against the real server; then check /metrics
# saw batches larger than one, and that SIGTERM drains and exits 0. Twice:
# arrival-order batching, then length-bucketed (max_pad_factor per model).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
: "${HTTP_CONCURRENCY_BIN:?run through ctest}"
# tiny.yaml as it is (arrival-order batches), then with length bucketing on
# for both models (max_pad_factor; its relative paths made absolute)
CFG_DIR="$ANYTIME_TEST_DATA/serve"
BUCKETED=$(mktemp --suffix=.yaml)
sed -e "s#: \.\./#: $CFG_DIR/../#" -e '/^    task: /a\    max_pad_factor: 1.25\n    bucket_max_wait_us: 2000' \
  "$CFG_DIR/tiny.yaml" >"$BUCKETED"
grep -q "max_pad_factor: 1.25" "$BUCKETED" || fail "could not write the bucketed configuration"
for cfg in "$CFG_DIR/tiny.yaml" "$BUCKETED"; do
  echo "== $cfg"
  if [ "$cfg" = "$BUCKETED" ]; then ANYTIME_LOG_LEVEL=info start_server "$cfg"; else start_server "$cfg"; fi
  "$HTTP_CONCURRENCY_BIN" "$PORT" 8 250 || fail "concurrent answers differ from the single-request reference ($cfg)"
  req GET /metrics; expect 200
  batched=$(echo "$BODY" | awk -F'[ {}]' '/^anytime_batch_size_bucket/ && /le="1"/ {s+=$NF} /^anytime_batch_size_count/ {c+=$NF} END {print c-s}')
  echo "batches with more than one item: $batched"
  [ "${batched:-0}" -gt 0 ] || fail "no request was ever batched with another ($cfg)"
  if [ "$cfg" = "$BUCKETED" ]; then # the per-model setting reached the batcher's set-up
    grep -q "model 'tiny-classifier': length-bucketed batches, padded tokens within 1.25x" \
      "$SERVER_LOG" || fail "the server did not take max_pad_factor"
  fi
  stop_server
done
rm -f "$BUCKETED"
echo "PASS: concurrency"
