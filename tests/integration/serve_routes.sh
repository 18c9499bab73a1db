#!/usr/bin/env bash
# tests/integration/serve_routes.sh — every HTTP route of the real server and
# every documented error, with curl, against the tiny test models
# (tests/data/serve/tiny.yaml). Ends with broken raw HTTP on a socket and a
# SIGTERM that must drain and exit 0.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
n=0; ok() { n=$((n + 1)); }

# --- health and metadata
req GET /health; expect 200; ok
req GET /v2/health/live; expect 200; ok
req GET /v2/health/ready; expect 200; ok
req GET /v2; expect 200 '"name":"anytime"'; ok
req GET /v2/models/tiny-classifier; expect 200 '"datatype":"BYTES"'; grep -q '"name":"logits"' <<<"$BODY" || fail "no logits in metadata"; ok
req GET /v2/models/tiny-classifier/ready; expect 200; ok
req GET /v2/models/nope; expect 404 "not served"; ok
req GET /info; expect 200 '"tiny-embedder"'; ok
req GET /v1/models; expect 200 '"object":"list"'; ok

# --- TEI routes
req POST /predict '{"inputs":"the movie was good"}'
expect 200 '^\[\{"score":[0-9.e-]+,"label":"(negative|neutral|positive)"\}'; ok
for h in x-total-time x-queue-time x-inference-time x-tokenization-time x-variant; do
  grep -qi "^$h: " <<<"$HEADERS" || fail "missing header $h"
done; ok
grep -qi '^x-variant: a' <<<"$HEADERS" || fail "x-variant is not 'a'"
# a batch is a list of lists (TEI's PredictInput: ["a", "b"] is one text pair)
req POST /predict '{"inputs":[["good"],["a bad plot"]]}'; expect 200 '^\[\[\{"score"'; ok
req POST /predict '{"inputs":"good","raw_scores":true}'; expect 200 '"label"'; ok
req POST /embed '{"inputs":["a good film","bad"]}'; expect 200 '^\[\['; ok
[ "$(echo "$BODY" | grep -o ',' | wc -l)" -eq $((2 * 16 - 1)) ] || fail "embedding size is not 16: $BODY"; ok
req POST /embed '{"inputs":"good","normalize":false}'; expect 200 '^\[\['; ok
req POST /tokenize '{"inputs":"the movie"}'; expect 200 '"id":2,"text":"\[CLS\]","special":true,"start":null'; ok

# --- OpenAI-compatible
req POST /v1/embeddings '{"input":"good","model":"tiny-embedder"}'
expect 200 '"object":"embedding"'; grep -q '"usage":{"prompt_tokens":3,"total_tokens":3}' <<<"$BODY" || fail "usage: $BODY"; ok
req POST /v1/embeddings '{"input":["good","bad"],"model":"tiny-embedder","encoding_format":"base64"}'
expect 200 '"embedding":"[A-Za-z0-9+/]{86}=="'; ok
req POST /v1/embeddings '{"input":"good","model":"tiny-embedder","dimensions":4}'; expect 200
# exactly 4 numbers, renormalised over the kept dimensions (as OpenAI does);
# and they are the first 4 of the full vector rescaled: the same direction
d4=$(echo "$BODY" | sed -E 's/.*"embedding":\[([^]]*)\].*/\1/')
req POST /v1/embeddings '{"input":"good","model":"tiny-embedder"}'; expect 200
dfull=$(echo "$BODY" | sed -E 's/.*"embedding":\[([^]]*)\].*/\1/')
awk -v a="$d4" -v b="$dfull" 'BEGIN { n = split(a, x, ","); m = split(b, y, ",");
  if (n != 4 || m <= 4) { print "dimensions 4 gave " n " numbers (full " m ")"; exit 1 }
  for (i = 1; i <= 4; i++) { s += x[i] * x[i]; t += y[i] * y[i]; d += x[i] * y[i] }
  if (s < 0.9999 || s > 1.0001) { print "not unit length: |v|^2 = " s; exit 1 }
  if (d / sqrt(s * t) < 0.99999) { print "not the first 4 of the full vector: cosine " d / sqrt(s * t); exit 1 } }' ||
  fail "dimensions: $d4 against $dfull"
ok
req POST /v1/embeddings '{"input":"good","model":"nope"}'; expect 404 "not served"; ok
req POST /v1/embeddings '{"input":"good","model":"tiny-classifier"}'; expect 400 "classification model"; ok
req POST /v1/embeddings '{"input":"good","encoding_format":"hex"}'; expect 400 "encoding_format"; ok
req POST /v1/embeddings '{"input":"good","dimensions":999}'; expect 400 "dimensions"; ok
req POST /v1/embeddings '{"input":[1,2,3]}'; expect 200 '"object":"embedding"'; ok  # token ids (OpenAI's spec)
req POST /v1/embeddings '{"input":[1,"a"]}'; expect 400 'is not an integer'; ok
req POST /v1/embeddings '{"input":[[1,2],[]]}'; expect 400 'non-empty list of token ids'; ok

# --- KServe V2 infer
req POST /v2/models/tiny-classifier/infer '{"id":"r1","inputs":[{"name":"text","datatype":"BYTES","shape":[2],"data":["good","bad movie"]}]}'
expect 200 '"id":"r1"'; grep -q '"name":"logits","datatype":"FP32","shape":\[2,3\]' <<<"$BODY" || fail "$BODY"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1,1],"data":[["good"]]}],"outputs":[{"name":"probabilities"}]}'
expect 200 '"name":"probabilities"'; grep -q '"name":"logits"' <<<"$BODY" && fail "unrequested output returned"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,3],"data":[[2,10,3]]},{"name":"attention_mask","datatype":"INT32","shape":[1,3],"data":[1,1,1]}],"outputs":[{"name":"pooled"}]}'
expect 200 '"name":"pooled","datatype":"FP32","shape":\[1,16\]'; ok
req POST /v2/models/tiny-embedder/infer '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["fun"]}]}'
expect 200 '"name":"embedding"'; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,3],"data":[2,10]},{"name":"attention_mask","datatype":"INT64","shape":[1,3],"data":[1,1,1]}]}'
expect 400 "has 2 numbers, the shape needs 3"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"FP32","shape":[1,1],"data":[2]},{"name":"attention_mask","datatype":"INT64","shape":[1,1],"data":[1]}]}'
expect 400 "INT64 in the model"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"bogus","datatype":"INT64","shape":[1],"data":[1]}]}'
expect 400 "no input 'bogus'"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,2],"data":[2,3]}]}'
expect 400 "inputs"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["x"]}],"outputs":[{"name":"nope"}]}'
expect 400 "no output 'nope'"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[5000]},{"name":"attention_mask","datatype":"INT64","shape":[1,1],"data":[1]}]}'
expect 400 "outside the model's vocabulary \(0\.\.99\)"; ok
# a negative id too: ONNX Gather would read it from the end of the table (200)
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,2],"data":[2,-1]},{"name":"attention_mask","datatype":"INT64","shape":[1,2],"data":[1,1]}]}'
expect 400 "value -1 at element 1 is outside"; ok

# --- bad input on text routes
req POST /predict '{"inputs": "unterminated'; expect 400 "malformed JSON"; ok
req POST /predict '[1,2]'; expect 400 "JSON object"; ok
req POST /predict '{}'; expect 400 'missing \\"inputs\\"'; ok
req POST /predict '{"inputs":[]}'; expect 400 "empty list"; ok
req POST /predict '{"inputs":""}'; expect 400 "empty string"; ok
req POST /predict '{"inputs":42}'; expect 400 "string or a list"; ok
req POST /predict '{"inputs":"x","truncate":"yes"}'; expect 400 "true or false"; ok
req POST /predict "$(printf '{"inputs":"bad \xff\xfe utf8"}')"; expect 400 "UTF-8"; ok
req POST /predict ''; expect 400 "empty body"; ok
req POST /embed '{"inputs":"good","model":"tiny-classifier"}'; expect 400 "classification model"; ok
long=$(printf 'good %.0s' $(seq 1 100))
req POST /predict "{\"inputs\":\"$long\"}"; expect 413 "tokens; the limit is 64"; ok
req POST /predict "{\"inputs\":\"$long\",\"truncate\":true}"; expect 200 '"label"'; ok
many=$(printf '["x"],%.0s' $(seq 1 17)); many="[${many%,}]"
req POST /predict "{\"inputs\":$many}"; expect 413 "max_inputs"; ok
big=$(head -c 70000 /dev/zero | tr '\0' 'a')
req POST /predict "{\"inputs\":\"$big\"}"; expect 413 "max_body_bytes"; ok
req GET /predict; expect 405 "POST"; ok
req GET /no/such/route; expect 404 "no route"; ok
STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/predict" -H 'x-deadline-ms: soon' -d '{"inputs":"x"}')
[ "$STATUS" = 400 ] || fail "bad x-deadline-ms gave $STATUS"; ok
# the planner's strict parser: no exponents or inf (strtod would take both)
for bad in 1e3 inf 0x10; do
  STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/predict" -H "x-deadline-ms: $bad" -d '{"inputs":"x"}')
  [ "$STATUS" = 400 ] || fail "x-deadline-ms: $bad gave $STATUS"
done; ok
STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/predict" -H 'x-deadline-ms: 0.00001' -d '{"inputs":"x"}')
[ "$STATUS" = 422 ] || fail "infeasible deadline gave $STATUS"; ok

# --- metrics
req GET /metrics; expect 200 'anytime_requests_total\{route="/predict",model="tiny-classifier",variant="a",status="200",protocol="http"\}'
for m in anytime_request_duration_seconds_bucket anytime_queue_duration_seconds anytime_compute_duration_seconds \
         anytime_batch_size_bucket anytime_inflight_requests anytime_queued_items anytime_planner_arrival_rate \
         anytime_variant_admitted_total anytime_engine_runs_total anytime_engine_run_seconds_total \
         anytime_engine_run_cpu_seconds_total; do
  grep -q "^$m" <<<"$BODY" || fail "metric $m missing"
done; ok
# the engine's totals: at least one Run per 200 /predict answered so far, and
# the Runs' CPU within their wall time (one intra-op thread)
answered=$(awk '/^anytime_requests_total\{route="\/predict".*status="200"/ { n += $2 } END { print n + 0 }' <<<"$BODY")
runs=$(awk '/^anytime_engine_runs_total / { print $2 }' <<<"$BODY")
awk -v r="$runs" -v a="$answered" 'BEGIN { exit !(a > 0 && r >= a) }' ||
  fail "anytime_engine_runs_total $runs below the $answered /predict answers"
awk '/^anytime_engine_run_seconds_total / { w = $2 } /^anytime_engine_run_cpu_seconds_total / { c = $2 }
     END { exit !(c > 0 && c <= w + 0.001 * '"$runs"') }' <<<"$BODY" ||
  fail "Run CPU not within the Runs' wall time: $(grep '^anytime_engine_run' <<<"$BODY")"
ok

# --- raw, broken HTTP on a socket; the server must stay healthy
for junk in 'GARBAGE\r\n\r\n' 'POST /predict HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n' \
            'POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"in' \
            'GET / HTTP/9.9\r\n\r\n' '\x00\x01\x02\x03\r\n\r\n'; do
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf "$junk" >&3 || true
  timeout 2 cat <&3 >/dev/null 2>&1 || true
  exec 3>&- 3<&- || true
done
req GET /health; expect 200; ok
req POST /predict '{"inputs":"still alive"}'; expect 200 '"label"'; ok

# --- clients that hang up before their answer: every admitted request is
# still answered internally and released (in-flight returns to 0). Each
# client writes a whole request on a raw socket and closes it at once, so
# the request does reach the server; the counter below proves that enough
# of them were handled (the curl -m 0.001 used here before reached it too,
# 19 of 30 in one run, but the test could not tell).
many16=$(printf '"the movie was good and the acting was great",%.0s' $(seq 1 16)); many16="[${many16%,}]"
embed_count() { req GET /metrics; echo "$BODY" | awk '/^anytime_requests_total\{route="\/embed"/ { n += $2 } END { print n + 0 }'; }
e0=$(embed_count)
hb="{\"inputs\":$many16}"
# Rounds of 30 until at least 10 have reached the server (at most 6 rounds):
# libmicrohttpd drops a connection whose client closed before the request
# was handed to us, and how many get through depends on how busy the host
# is (19-25 of 30 on a quiet host, 8 of 30 once beside the parallel soak).
for round in $(seq 1 6); do
  pids=()
  for i in $(seq 1 30); do
    ( exec 3<>"/dev/tcp/127.0.0.1/$PORT" &&
      printf 'POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
          "${#hb}" "$hb" >&3 && exec 3>&- ) >/dev/null 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || true   # not a bare `wait`: that would wait for the server too
  for _ in $(seq 1 50); do
    req GET /metrics
    grep -q '^anytime_inflight_requests 0$' <<<"$BODY" && break
    sleep 0.1
  done
  grep -q '^anytime_inflight_requests 0$' <<<"$BODY" || fail "in-flight did not return to 0 after clients hung up (round $round)"
  e1=$(embed_count)
  [ $((e1 - e0)) -ge 10 ] && break
done
[ $((e1 - e0)) -ge 10 ] || fail "only $((e1 - e0)) of $((round * 30)) hung-up /embed requests reached the server: the check above proved nothing"
echo "hang-ups: $((e1 - e0)) of $((round * 30)) requests whose clients left were answered internally"
req POST /predict '{"inputs":"after the hang-ups"}'; expect 200 '"label"'; ok

stop_server
echo "PASS: $n route checks"
