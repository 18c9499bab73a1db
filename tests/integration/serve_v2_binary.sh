#!/usr/bin/env bash
# tests/integration/serve_v2_binary.sh — the KServe V2 binary tensor data
# extension and the versions/{v} routes against the real server, spoken by
# an encoder written from the spec (tests/clients/v2_binary.mjs, plain
# Node, no packages): binary INT64/INT32/BYTES requests give the JSON
# form's logits bit for bit, binary answers decode to the JSON answers,
# malformed bodies get a 400 naming the problem. Plus the same checks here
# with curl for the header arithmetic a hand-made request can get wrong.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
dir="$ANYTIME_SOURCE_DIR/tests/clients"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
node "$dir/v2_binary.mjs" "$BASE" tiny-classifier || fail "v2 binary extension client test"
# a binary INT64 request made with printf: [1, 3] ids 2 11 3 and mask 1 1 1
hdr='{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,3],"parameters":{"binary_data_size":24}},{"name":"attention_mask","datatype":"INT64","shape":[1,3],"parameters":{"binary_data_size":24}}],"outputs":[{"name":"logits"}],"parameters":{"binary_data_output":true}}'
le() { printf "\\x$(printf %02x "$1")\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; }
{ printf '%s' "$hdr"; le 2; le 11; le 3; le 1; le 1; le 1; } >"$SERVE_TMP/bin"
STATUS=$(curl -s -o "$SERVE_TMP/out" -D "$SERVE_TMP/h" -w '%{http_code}' -X POST \
  "$BASE/v2/models/tiny-classifier/infer" -H "Inference-Header-Content-Length: ${#hdr}" \
  --data-binary @"$SERVE_TMP/bin")
[ "$STATUS" = 200 ] || fail "binary request: $STATUS $(cat "$SERVE_TMP/out")"
grep -qi '^content-type: application/octet-stream' "$SERVE_TMP/h" || fail "binary answer's content type"
n=$(grep -i '^inference-header-content-length:' "$SERVE_TMP/h" | tr -dc 0-9)
[ -n "$n" ] || fail "binary answer without Inference-Header-Content-Length"
head -c "$n" "$SERVE_TMP/out" | grep -q '"binary_data_size":12' || fail "answer header: $(head -c "$n" "$SERVE_TMP/out")"
[ "$(stat -c %s "$SERVE_TMP/out")" = $((n + 12)) ] || fail "answer is not header + 12 bytes of logits"
# an unknown version of an unknown model: the model is what is missing
req GET /v2/models/nope/versions/1
expect 404 "model 'nope' is not served"
stop_server
