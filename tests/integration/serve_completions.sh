#!/usr/bin/env bash
# tests/integration/serve_completions.sh — POST /v1/completions with curl on a
# server that runs both lanes (tests/data/serve/tiny.yaml: tiny encoders plus
# the committed default decoder):
#   - greedy text through the server equals `anytime generate --reference`
#     (the present-feedback path, no arena, no HTTP) token for token, also
#     when a repeated prompt's head comes from the prefix cache;
#   - streaming: SSE events, text deltas that add up to the plain answer,
#     the final finish_reason and [DONE];
#   - forecast admission: an unmeetable budget is refused at once (429 with
#     both retry headers), an identical early retry is held, a generous
#     budget is served;
#   - every documented error answers 4xx with a message naming the problem;
#   - a client that hangs up mid-stream cancels its generation (the lane
#     drains to zero running sequences); parallel streams next to encoder
#     traffic all complete; the server still drains cleanly on SIGTERM.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"

json_text() { sed -E 's/.*"text":"(([^"\\]|\\.)*)".*/\1/'; }
gen_tokens() { req GET /metrics; echo "$BODY" | awk '/^anytime_gen_tokens_total\{model="decoder"\}/ { print $2 }'; }
P="the film is a masterpiece of quiet observation , and the performances"

# 1. plain answer vs the reference path
req POST /v1/completions "{\"model\":\"decoder\",\"prompt\":\"$P\",\"max_tokens\":24,\"temperature\":0}"
expect 200 '"object":"text_completion"'
grep -qi '^x-time-to-first-token: [0-9]' <<<"$HEADERS" || fail "no x-time-to-first-token header"
grep -qi '^x-model: decoder' <<<"$HEADERS" || fail "no x-model header"
grep -q '"completion_tokens":24' <<<"$BODY" || grep -q '"finish_reason":"stop"' <<<"$BODY" || fail "token count: $BODY"
served=$(echo "$BODY" | json_text)
ref=$("$ANYTIME_BIN" generate --model "$ANYTIME_SOURCE_DIR/models/decoder" --variant fp32 --reference \
      --max-tokens 24 --json "$P" | json_text)
[ -n "$served" ] || fail "empty completion"
[ "$served" = "$ref" ] || fail "server text differs from the reference path:
  served:    $served
  reference: $ref"

# 1b. prefix cache: the same long prompt again finds its whole KV blocks
# cached (anytime_gen_prefix_tokens_total{result="hit"} moves by at least
# two 16-position blocks) and still answers the reference path's text
prefix_hits() { req GET /metrics; echo "$BODY" | awk '/^anytime_gen_prefix_tokens_total\{model="decoder",result="hit"\}/ { print $2 }'; }
LP="$P are superb . the film is a masterpiece of quiet observation , and the script"
lref=$("$ANYTIME_BIN" generate --model "$ANYTIME_SOURCE_DIR/models/decoder" --variant fp32 --reference \
       --max-tokens 16 --json "$LP" | json_text)
for k in 1 2; do
  h0=$(prefix_hits)
  req POST /v1/completions "{\"prompt\":\"$LP\",\"max_tokens\":16,\"temperature\":0}"
  expect 200 '"object":"text_completion"'
  [ "$(echo "$BODY" | json_text)" = "$lref" ] || fail "prefix cache: answer $k differs from the reference path"
  hits=$(( $(prefix_hits) - h0 ))
done
[ "$hits" -ge 32 ] || fail "prefix cache: the repeated prompt found $hits positions cached, want >= 32"
echo "prefix cache: the repeated prompt found $hits positions cached; same text"

# 2. streaming: deltas add up to the plain text, then finish_reason, then [DONE]
curl -sN "$BASE/v1/completions" -d "{\"prompt\":\"$P\",\"max_tokens\":24,\"temperature\":0,\"stream\":true}" \
    > "$SERVE_TMP/sse"
[ "$(tail -n 2 "$SERVE_TMP/sse" | head -n 1)" = "data: [DONE]" ] || fail "stream does not end with [DONE]: $(tail -c 300 "$SERVE_TMP/sse")"
n_events=$(grep -c '^data: {' "$SERVE_TMP/sse")
[ "$n_events" -ge 3 ] || fail "only $n_events events streamed"
grep -q '"finish_reason":"length"\|"finish_reason":"stop"' "$SERVE_TMP/sse" || fail "no final finish_reason"
joined=$(grep '^data: {' "$SERVE_TMP/sse" | json_text | tr -d '\n')
[ "$joined" = "$served" ] || fail "streamed deltas ($joined) differ from the plain answer ($served)"

# 2b. a stop sequence ends the generation where it first appears, plain and
# streamed alike: the text is the reference text cut before the stop, the
# finish_reason "stop", usage counts the tokens up to the stop, and the lane
# generated not many more (anytime_gen_tokens_total: it was told to stop,
# not left to run to max_tokens, 200; the HTTP side finds the stop while the
# lane goes on, 0-5 tokens past it seen on a quiet host, so up to 50 are
# allowed for a loaded one). The greedy reference of this prompt says "...
# the film is a film . \n..." within its first 30 tokens; the stop spans
# several tokens.
ref60=$("$ANYTIME_BIN" generate --model "$ANYTIME_SOURCE_DIR/models/decoder" --variant fp32 --reference \
        --max-tokens 60 --json "$P" | json_text)
STOP='film .'
case "$ref60" in *"$STOP"*) ;; *) fail "the reference text lacks the stop '$STOP': $ref60" ;; esac
want=${ref60%%"$STOP"*}
STOP_REQ="{\"prompt\":\"$P\",\"max_tokens\":200,\"temperature\":0,\"stop\":[\"$STOP\"]"
t0=$(gen_tokens)
req POST /v1/completions "$STOP_REQ}"
expect 200 '"finish_reason":"stop"'
stop_body=$BODY
plain_lane=$(( $(gen_tokens) - t0 ))
BODY=$stop_body
[ "$(echo "$BODY" | json_text)" = "$want" ] || fail "plain answer with a stop sequence:
  got:  $(echo "$BODY" | json_text)
  want: $want"
stop_tokens=$(sed -E 's/.*"completion_tokens":([0-9]+).*/\1/' <<<"$BODY")
[ "$stop_tokens" -ge 1 ] && [ "$stop_tokens" -le 30 ] ||
  fail "a plain answer stopped by a stop sequence counts $stop_tokens completion tokens (max_tokens 200)"
[ "$plain_lane" -le $(( stop_tokens + 50 )) ] ||
  fail "the lane generated $plain_lane tokens for a plain answer stopped after $stop_tokens: not stopped"
t0=$(gen_tokens)
curl -sN "$BASE/v1/completions" -d "$STOP_REQ,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
    > "$SERVE_TMP/sse_stop"
joined=$(grep '^data: {"id.*"choices":\[{' "$SERVE_TMP/sse_stop" | json_text | tr -d '\n')
[ "$joined" = "$want" ] || fail "streamed deltas with a stop sequence ($joined) differ from the reference ($want)"
grep -q '"finish_reason":"stop"' "$SERVE_TMP/sse_stop" || fail "the stopped stream's finish_reason is not stop"
grep -q "\"completion_tokens\":$stop_tokens," "$SERVE_TMP/sse_stop" ||
  fail "the stream's usage differs from the plain answer's $stop_tokens tokens: $(grep usage "$SERVE_TMP/sse_stop")"
lane_tokens=$(( $(gen_tokens) - t0 ))
[ "$lane_tokens" -le $(( stop_tokens + 50 )) ] ||
  fail "the lane generated $lane_tokens tokens for a stream stopped after $stop_tokens: not stopped"
echo "stop sequence: $stop_tokens tokens up to the stop; the lane generated $plain_lane (plain), $lane_tokens (stream)"

# 3. forecast admission (the lane runs generator.admission: slo here): a
# budget no lane meets even when idle can never be admitted: 422 at once,
# naming the idle forecast, with no Retry-After (a retry cannot succeed),
# and an early "retry" on the same connection is not held either; a
# generous budget is served; a malformed budget is a 400
code=$(curl -s -o "$SERVE_TMP/b" -D "$SERVE_TMP/h" -w '%{http_code}' "$BASE/v1/completions" \
       -H 'x-tpot-ms: 0.001' -d '{"prompt":"a film","max_tokens":4}')
[ "$code" = 422 ] || fail "a 1 us per-token budget was not refused as never fitting: $code $(cat "$SERVE_TMP/b")"
grep -q 'on an idle server' "$SERVE_TMP/b" && grep -q '"code":"deadline_infeasible"' "$SERVE_TMP/b" ||
  fail "the 422 does not give the idle forecast and its code: $(cat "$SERVE_TMP/b")"
grep -qi '^retry-after' "$SERVE_TMP/h" && fail "a request that can never fit was told to retry: $(cat "$SERVE_TMP/h")"
curl -s -o /dev/null -D "$SERVE_TMP/h2" -H 'x-tpot-ms: 0.001' -d '{"prompt":"a film","max_tokens":4}' \
  "$BASE/v1/completions" --next -s -o /dev/null -D "$SERVE_TMP/h3" -H 'x-tpot-ms: 0.001' \
  -d '{"prompt":"a film","max_tokens":4}' "$BASE/v1/completions"
grep -qi '^x-held-ms' "$SERVE_TMP/h3" && fail "a never-fitting request was held: $(cat "$SERVE_TMP/h3")"
grep -q '^HTTP/1.1 422' "$SERVE_TMP/h3" || fail "the second never-fitting request: $(head -1 "$SERVE_TMP/h3")"
req POST /v1/completions '{"prompt":"a film","max_tokens":4}'
expect 200
STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/completions" -H 'x-ttft-ms: soon' -d '{"prompt":"a"}')
[ "$STATUS" = 400 ] || fail "a malformed x-ttft-ms gave $STATUS"
# x-priority is read by the generation lane too (the waiting order)
for pr in high low; do
  STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/completions" -H "x-priority: $pr" \
           -d '{"prompt":"a film","max_tokens":2}')
  [ "$STATUS" = 200 ] || fail "x-priority: $pr on /v1/completions gave $STATUS"
done
STATUS=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' "$BASE/v1/completions" -H 'x-priority: urgent' -d '{"prompt":"a"}')
[ "$STATUS" = 400 ] && grep -q 'x-priority must be' "$SERVE_TMP/b" || fail "x-priority: urgent gave $STATUS: $(cat "$SERVE_TMP/b")"
req GET /metrics # (not curl | grep -q: grep's early exit is a SIGPIPE failure under pipefail)
grep -q 'anytime_gen_requests_total{model="decoder",outcome="refused_forecast"} [1-9]' <<<"$BODY" ||
  fail "refusals by forecast are not counted"

# 4. errors
req POST /v1/completions '{"prompt": "x",'
expect 400
req POST /v1/completions '{"max_tokens": 3}'
expect 400 'prompt'
req POST /v1/completions '{"prompt": ["a", "b"]}'
expect 400 'one prompt'
req POST /v1/completions '{"prompt": "a", "max_tokens": 0}'
expect 400 'max_tokens'
req POST /v1/completions '{"prompt": "a", "max_tokens": 201}'
expect 400 'max_tokens'
req POST /v1/completions '{"prompt": "a", "n": 17}'
expect 400 'in \[1, 16\]'
req POST /v1/completions '{"prompt": "a", "n": 2, "best_of": 3}'
expect 400 'best_of'
req POST /v1/completions '{"prompt": "a", "logprobs": 6}'
expect 400 'logprobs'
req POST /v1/completions '{"prompt": "a", "presence_penalty": 2.5}'
expect 400 'presence_penalty'
req POST /v1/completions '{"prompt": "a", "logit_bias": {"5": 3}}'
expect 400 'logit_bias'
req POST /v1/completions '{"prompt": "a", "frobnicate": 1}'
expect 400 'unknown field ..frobnicate..: /v1/completions takes only'
req POST /v1/completions '{"prompt": "a", "temperature": 3}'
expect 400 'temperature'
req POST /v1/completions '{"prompt": "a", "top_p": 0}'
expect 400 'top_p'
req POST /v1/completions '{"prompt": "a", "stop": ["a","b","c","d","e"]}'
expect 400 'stop'
req POST /v1/completions '{"prompt": "a", "stop": [""]}'
expect 400 'stop'
req POST /v1/completions '{"prompt": "a", "stream": "yes"}'
expect 400 'stream'
req POST /v1/completions '{"model": "tiny-classifier", "prompt": "a"}'
expect 404 'decoder'
req POST /v1/completions "$(printf '{"prompt": "bad \xff\xfe utf8"}')"
expect 400
long=$(printf 'word %.0s' $(seq 1 400))
req POST /v1/completions "{\"prompt\": \"$long\", \"max_tokens\": 8}"
expect 400 'positions'
req GET /v1/completions
expect 405
STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/completions" -H 'x-deadline-ms: -5' -d '{"prompt":"a"}')
[ "$STATUS" = 400 ] || fail "bad x-deadline-ms gave $STATUS"
req GET /v1/models
expect 200 '"id":"decoder"'

# 5. a client that hangs up mid-stream: its generation is cancelled. The
# same seeded request run to the end first says how many tokens a whole
# one generates (n_full); after a hang-up once its first bytes are in (curl
# dies writing the next ones into the closed pipe) the lane must drain and
# anytime_gen_tokens_total must have moved by clearly fewer. (Waiting for the
# lane to drain alone proves nothing: a whole 200-token stream takes
# 0.15-0.4 s. A hang-up at a fixed 0.1 s was seen to come too late on a warm
# lane: 150-163 of 200 tokens. Seen to fail: with the lane's cancellation
# check disabled, src/decode/generator.c, the hang-up run generated all
# n_full tokens.)
wait_lane_empty() { # WHY: the lane has no sequence running or waiting within 10 s
  for _ in $(seq 1 100); do
    req GET /metrics
    if grep -q 'anytime_gen_sequences{model="decoder",state="running"} 0' <<<"$BODY" &&
       grep -q 'anytime_gen_sequences{model="decoder",state="waiting"} 0' <<<"$BODY"; then return 0; fi
    sleep 0.1
  done
  fail "generation lane did not drain after $1: $(grep anytime_gen_sequences <<<"$BODY")"
}
CANCEL_REQ='{"prompt":"the","max_tokens":200,"temperature":1,"seed":3,"stream":true}'
t0=$(gen_tokens)
curl -sN "$BASE/v1/completions" -d "$CANCEL_REQ" > "$SERVE_TMP/full_stream" || fail "the whole stream failed"
n_full=$(( $(gen_tokens) - t0 ))
[ "$n_full" -ge 100 ] || fail "a whole stream generated only $n_full tokens: too few to tell a cancellation"
t1=$(gen_tokens)
{ curl -sN "$BASE/v1/completions" -d "$CANCEL_REQ" 2>/dev/null || true; } | head -c 1 > /dev/null
wait_lane_empty "a client hung up"
n_cut=$(( $(gen_tokens) - t1 ))
[ "$n_cut" -lt $(( n_full * 3 / 4 )) ] ||
  fail "a client that hung up at its first bytes still had $n_cut of $n_full tokens generated: not cancelled"
echo "cancellation: $n_cut of $n_full tokens generated after a hang-up at the first bytes"

# 5b. the same for a non-streamed request: libmicrohttpd does not watch a
# suspended connection, so the token callback wakes the request at most
# every 20 ms and the route polls the socket (routes_completions.c,
# probe_peer, on the HTTP side). The same seeded request, not
# streamed, run whole, then sent over a raw socket that is closed as soon
# as the lane runs it (a fixed 0.1 s was seen to come too late on a warm
# lane, whose 200 tokens take 0.15 s; curl --max-time 0.03, used until
# 2026-12-04, could give up before the request reached the lane when the
# host was loaded: "moved by 0"). (Seen to fail: with probe_peer()
# returning at once, 200 of 200 tokens and no cancellation counted — the
# behaviour before 2026-12-02.)
gen_cancelled() { req GET /metrics; echo "$BODY" | awk '/^anytime_gen_requests_total\{model="decoder",outcome="cancelled"\}/ { print $2 }'; }
# eight choices (seeds 3..10) make the lane's work long enough (eight
# sequences, 200 steps) that the hang-up lands while it runs: one choice was
# done in ~0.1 s, sometimes before the poll below saw it start
PLAIN_REQ=${CANCEL_REQ/,\"stream\":true/,\"n\":8}
t0=$(gen_tokens)
curl -s "$BASE/v1/completions" -d "$PLAIN_REQ" > "$SERVE_TMP/full_plain" || fail "the whole non-streamed request failed"
n_full=$(( $(gen_tokens) - t0 ))
[ "$n_full" -ge 800 ] || fail "a whole non-streamed request of 8 choices generated only $n_full tokens"
t1=$(gen_tokens)
c1=$(gen_cancelled)
exec 4<>"/dev/tcp/127.0.0.1/$PORT"
printf 'POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
  "${#PLAIN_REQ}" "$PLAIN_REQ" >&4
for _ in $(seq 1 400); do # up to ~4 s for the lane to take it
  req GET /metrics
  grep -q 'anytime_gen_sequences{model="decoder",state="running"} [1-9]' <<<"$BODY" && break
  sleep 0.005
done
exec 4>&-
wait_lane_empty "a non-streamed client hung up"
n_cut=$(( $(gen_tokens) - t1 ))
c_cut=$(( $(gen_cancelled) - c1 ))
# generated in full the seeded request gives exactly n_full tokens; fewer,
# with the cancelled counter moved (below), is the cancellation. No
# bound on how many fewer: on a loaded host the /metrics poll that sees the
# lane take the request can itself last most of the 0.15 s generation
[ "$n_cut" -lt "$n_full" ] ||
  fail "a non-streamed client that hung up once its request ran still had $n_cut of $n_full tokens generated: not cancelled"
[ "$c_cut" -ge 1 ] && [ "$c_cut" -le 8 ] ||
  fail "anytime_gen_requests_total{outcome=cancelled} moved by $c_cut, want 1..8 (its choices)"
# the lane empties when the sequence is cancelled; the HTTP side counts
# the request a moment later, when libmicrohttpd reports the connection
# gone (CI once read /metrics between the two), so wait up to 5 s for it
for _ in $(seq 50); do
  req GET /metrics
  grep -q 'anytime_requests_total{route="/v1/completions".*status="499",protocol="http"} 1$' <<<"$BODY" && break
  sleep 0.1
done
grep -q 'anytime_requests_total{route="/v1/completions".*status="499",protocol="http"} 1$' <<<"$BODY" ||
  fail "the hung-up request is not counted as 499 within 5 s: $(grep 'route="/v1/completions"' <<<"$BODY")"
echo "non-streamed cancellation: $n_cut of $n_full tokens generated after a hang-up once it ran"

# 6. parallel streams next to encoder traffic
pids=()
for i in 1 2 3 4 5 6; do
  curl -sN "$BASE/v1/completions" -d "{\"prompt\":\"$P\",\"max_tokens\":40,\"temperature\":0.8,\"seed\":$i,\"stream\":true}" \
      > "$SERVE_TMP/par$i" &
  pids+=($!)
done
for i in $(seq 1 30); do
  s=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/predict" -d '{"inputs":"a fine film"}')
  [ "$s" = 200 ] || fail "encoder request $i during generation answered $s"
done
for p in "${pids[@]}"; do wait "$p" || fail "a parallel stream failed"; done
for i in 1 2 3 4 5 6; do
  [ "$(tail -n 2 "$SERVE_TMP/par$i" | head -n 1)" = "data: [DONE]" ] || fail "parallel stream $i did not finish"
done
req GET /metrics
grep -q 'anytime_gen_kv_blocks{model="decoder",state="free"} 256' <<<"$BODY" || fail "KV blocks not all free after the streams"

# 7. SIGTERM while a stream and a plain request are in flight: both are
# answered in full before the server exits 0 (stop_server checks the exit).
# Four choices each (8 sequences, two rounds of the lane's 4) keep them in
# flight long enough to be seen there: with one choice each, a warm lane
# finished both (~0.15 s) before the poll below saw them in about 1 run
# of 10 ("0 sequences").
T2=$(mktemp -d)
curl -sN "$BASE/v1/completions" -d '{"prompt":"the","max_tokens":200,"n":4,"temperature":1,"seed":5,"stream":true}' \
    > "$T2/term_stream" &
sp=$!
curl -s "$BASE/v1/completions" -d '{"prompt":"the","max_tokens":150,"n":4,"temperature":1,"seed":6}' \
    > "$T2/term_plain" &
pp=$!
# signal only once the stream is under way (some events out, not all)
early=0
for _ in $(seq 1 100); do
  early=$(grep -c '^data: {' "$T2/term_stream" || true)
  [ "$early" -ge 1 ] && break
  sleep 0.05
done
[ "$early" -ge 1 ] || fail "the stream sent no event within 5 s"
# ... and only once the plain request is in the lane too: started second, it
# can still be connecting when the stream's first event is out, and a
# connection made after the signal is refused (a CI run saw exactly that)
seqs=0
for _ in $(seq 1 100); do
  seqs=$(curl -s "$BASE/metrics" | awk '/^anytime_gen_sequences\{/ {s += $NF} END {print s + 0}')
  [ "$seqs" -ge 2 ] && break
  sleep 0.02
done
[ "$seqs" -ge 2 ] || fail "the plain request never reached the generation lane ($seqs sequences)"
early=$(grep -c '^data: {' "$T2/term_stream" || true)
stop_server
wait "$sp" || fail "the stream in flight at SIGTERM failed"
wait "$pp" || fail "the plain request in flight at SIGTERM failed"
[ "$(tail -n 2 "$T2/term_stream" 2>/dev/null | head -n 1)" = "data: [DONE]" ] ||
  fail "stream cut at SIGTERM (had $early events when the signal was sent)"
grep -q '"completion_tokens":600\|"finish_reason":"stop"' "$T2/term_plain" ||
  fail "plain request in flight at SIGTERM: $(cat "$T2/term_plain")"
# the stream was mid-way at the signal and went on after it: more events
# than it had then, and its deltas add up to a whole answer
final=$(grep -c '^data: {' "$T2/term_stream" || true)
[ "$final" -gt "$early" ] || fail "stream: $early events at SIGTERM and $final at the end: nothing was sent after the signal"
grep -q '"finish_reason":"\(length\|stop\)"' "$T2/term_stream" || fail "stream at SIGTERM has no finish_reason"
echo "SIGTERM: the stream had $early events at the signal and $final at the end"
rm -rf "$T2"
echo "ok"
