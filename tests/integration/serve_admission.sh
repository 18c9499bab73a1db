#!/usr/bin/env bash
# tests/integration/serve_admission.sh — admission under overload (issue 14)
# against the real server on loopback (tests/data/serve/admission.yaml: the
# tiny classifier, a 50 ms deadline (100 under sanitizers), 2 workers,
# batches of 1):
#   * a burst of 200 clients is shed with 429s that carry Retry-After and
#     retry-after-ms, and every request gets exactly one answer (the
#     client's count and the server's agree);
#   * hey's resends, which come before the return slot their 429 gave, are
#     held to that slot (anytime_held_refusals_total > 0, none left held);
#   * right after the burst a closed-loop client gets >= 99 % 200 after its
#     first second (refusals and retries do not hold the server shut);
#   * /metrics shows refusals by reason, in-flight back to 0, no release
#     refused by the planner;
#   * admission comes before tokenising (and before parsing: the scan's
#     count survives quotes, brackets and escapes), and an admitted request
#     that fails later (413) releases its texts;
#   * V2 tensor rows are admitted as texts and batched, and give the text
#     path's logits;
#   * policy limit refuses past --inflight-limit;
#   * the length model prices a text by its length before tokenising (a
#     long text refused as infeasible where a short one is answered; V2
#     rows by their padded length).
# Each check was seen to fail. Against the server before issue 14 (built
# from commit e091790): the burst's 429s have no retry-after-ms; the closed
# loop after the burst got "0 of 41480 answers after 1 s were 200" (its
# refusals counted as load, and clients that come straight back kept it
# refusing); --policy limit is an unknown policy; and a request with a text
# over max_tokens is tokenised before the planner is asked (413 where this
# server answers 429). With serve_release() made a no-op, the 4-text request
# after the tokeniser's 413 is refused ("in-flight limit 4 reached") instead
# of answered. Needs `hey` (scripts/deps.txt, group test).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v hey >/dev/null || fail "hey is not installed (scripts/install-deps.sh test)"
CFG="$ANYTIME_TEST_DATA/serve/admission.yaml"
n=0; ok() { n=$((n + 1)); }

# msum REGEX: sum of the values of the /metrics lines matching REGEX
msum() { curl -s "$BASE/metrics" | grep -E "$1" | awk '{s += $NF} END {printf "%d\n", s}'; }
# hey_count OUTPUT STATUS: responses with that status in hey's summary
hey_count() { echo "$1" | awk -v s="[$2]" '$1 == s {print $2; f=1} END {if (!f) print 0}'; }
# hey_total OUTPUT: responses of any status in hey's summary
hey_total() { echo "$1" | awk '$1 ~ /^\[[0-9]+\]$/ && $3 == "responses" {t += $2} END {print t + 0}'; }
quiesce() { # wait until nothing is in flight
  for _ in $(seq 1 100); do
    [ "$(msum '^anytime_planner_inflight_texts')" = 0 ] && [ "$(msum '^anytime_inflight_requests ')" = 0 ] && return 0
    sleep 0.1
  done
  fail "in flight did not return to 0: $(curl -s "$BASE/metrics" | grep -E '^anytime_(planner_)?inflight')"
}
# a batch of 4 texts: a list of one-text lists (TEI reads a list of two strings as a pair)
text4=$(printf '["the movie was good and the acting was great but the plot was dull"],%.0s' $(seq 1 4))
text4="{\"inputs\":[${text4%,}]}"

# 50 ms, not the config's 10: ctest runs this beside the tokenizer parity
# test and, in CI, under ASan, and on that shared host a 10 ms deadline
# measured the host (one CI run: 59 % of the closed loop refused because
# answers really were 9+ ms late), not admission. 50 ms still sheds the
# burst: 200 clients x 4 texts of ~0.3 ms on 2 workers is ~120 ms of work.
# 100 ms under sanitizers, measured 2026-12-02 on the ASan build with one
# core kept busy by a neighbour (ctest -j2 in CI): at 50 ms one run in three
# had 7,685 of 7,714 closed-loop answers after 2.5 s as 200 (99.6 %, the bar
# is 99 %) and 2,673 of 5,417 in 1-2.5 s; at 100 ms three runs of three had
# every answer 200 in both windows. With the host to itself the ASan build
# passed at 50 ms three times of three.
DL_MS=50
[ "${ANYTIME_TEST_SANITIZED:-0}" = 1 ] && DL_MS=100
start_server "$CFG" --deadline-ms "$DL_MS"
req POST /predict '{"inputs":"warm up"}'; expect 200 '"label"'; ok

# --- 0. a request that can never fit is told so (issue 41): 16 texts at
# 0.3 ms each, one per batch on 2 workers, need 2.4 ms on an idle server;
# with a 1.5 ms deadline that is 422 at once (no Retry-After), judged on all
# 16 texts, while one text of it (0.3 ms) is not refused as infeasible.
# Seen to fail before: 429 "overloaded ... retry after" every time.
text16=$(printf '["a good film"],%.0s' $(seq 1 16))
STATUS=$(curl -s -o "$SERVE_TMP/b" -D "$SERVE_TMP/h" -w '%{http_code}' "$BASE/predict" \
         -H 'x-deadline-ms: 1.5' -d "{\"inputs\":[${text16%,}]}")
BODY=$(cat "$SERVE_TMP/b"); HEADERS=$(cat "$SERVE_TMP/h")
expect 422 'for these 16 texts on an idle server'
grep -qi '^Retry-After:' <<<"$HEADERS" && fail "a request that can never fit was told Retry-After"
STATUS=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' "$BASE/predict" -H 'x-deadline-ms: 1.5' \
         -d '{"inputs":"a good film"}')
[ "$STATUS" != 422 ] || fail "one text of 0.3 ms refused as infeasible at 1.5 ms: $(cat "$SERVE_TMP/b")"; ok
# x-priority: high, normal, low (or 1, 0, -1) are taken; anything else is a
# 400 naming the header (docs/planner.md, "Priority classes")
for pr in high normal low 1 0 -1 HIGH; do
  STATUS=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' "$BASE/predict" -H "x-priority: $pr" \
           -d '{"inputs":"a good film"}')
  [ "$STATUS" = 200 ] || fail "x-priority: $pr gave $STATUS: $(cat "$SERVE_TMP/b")"
done
STATUS=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' "$BASE/predict" -H 'x-priority: urgent' \
         -d '{"inputs":"a good film"}')
BODY=$(cat "$SERVE_TMP/b"); expect 400 'x-priority must be high, normal or low'; ok
# ... and in the body: V2's "parameters"."priority" (the same values)
v2p() { printf '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["a good film"]}],"parameters":{"priority":%s}}' "$1"; }
for pr in '"high"' '"low"' '"Normal"' null; do
  req POST /v2/models/tiny-classifier/infer "$(v2p "$pr")"
  [ "$STATUS" = 200 ] || fail "V2 parameters.priority $pr gave $STATUS: $BODY"
done
req POST /v2/models/tiny-classifier/infer "$(v2p '"urgent"')"
expect 400 'parameters.*priority.*must be'
req POST /v2/models/tiny-classifier/infer "$(v2p 1)"
expect 400 'parameters.*priority.*must be.*Triton'; ok

# --- 1. a burst of 200 clients sending 4 texts each: shed with 429s
before=$(msum '^anytime_requests_total\{route="/predict"')
hey -n 20000 -c 200 -m POST -T application/json -d "$text4" "$BASE/predict" >"$SERVE_TMP/burst" 2>&1 &
hey_pid=$!
probes=0 got429=0
# meanwhile, one like them, to see a refusal whole. It asks for a 5 ms
# deadline, so any queue refuses it: since hey's resends are held to their
# slots (server.hold_early_retries) the burst no longer keeps the queue full
# every instant, and a CI run's 22 probes at the default deadline were all
# admitted
for _ in $(seq 1 400); do
  probes=$((probes + 1))
  STATUS=$(curl -s -o "$SERVE_TMP/pb" -D "$SERVE_TMP/ph" -w '%{http_code}' "$BASE/predict" \
           -H 'x-deadline-ms: 5' -d "$text4")
  if [ "$STATUS" = 429 ]; then got429=1; break; fi
  kill -0 "$hey_pid" 2>/dev/null || break
done
wait "$hey_pid" || fail "hey failed: $(cat "$SERVE_TMP/burst")"
burst=$(cat "$SERVE_TMP/burst")
[ "$got429" = 1 ] || fail "no 429 among $probes requests during the burst (last: $STATUS)"
HEADERS=$(cat "$SERVE_TMP/ph"); BODY=$(cat "$SERVE_TMP/pb")
grep -qiE '^Retry-After: [1-9][0-9]*'$'\r''?$' <<<"$HEADERS" || fail "429 without a whole-seconds Retry-After: $HEADERS"
ra_ms=$(echo "$HEADERS" | tr -d '\r' | awk -F': ' 'tolower($1) == "retry-after-ms" {print $2}')
grep -qE '^[0-9]+\.[0-9]{3}$' <<<"$ra_ms" || fail "429 without retry-after-ms (three decimals): $HEADERS"
awk -v v="$ra_ms" 'BEGIN {exit !(v >= 1)}' || fail "retry-after-ms $ra_ms is below 1"
grep -q "the work queued cannot finish within 5.000 ms" <<<"$BODY" || fail "429 body: $BODY"
grep -qE '^\{"error":"[^"]*","error_type":"Overloaded"\}$' <<<"$BODY" || fail "429 body is not TEI's error JSON: $BODY"; ok
n200=$(hey_count "$burst" 200); n429=$(hey_count "$burst" 429)
[ "$n429" -gt 0 ] || fail "the burst got no 429: $burst"
[ "$n200" -gt 0 ] || fail "the burst got no 200 (everything refused): $burst"
# exactly one answer per request: the client saw 20000 answers, no errors,
# and the server answered 20000 + probes on the route
grep -q "Error distribution" <<<"$burst" && fail "client errors in the burst: $burst"
[ "$(hey_total "$burst")" = 20000 ] || fail "burst: $(hey_total "$burst") answers to 20000 requests: $burst"
after=$(msum '^anytime_requests_total\{route="/predict"')
[ $((after - before)) = $((20000 + probes)) ] || \
  fail "server answered $((after - before)) requests on /predict; $((20000 + probes)) were sent"; ok
echo "burst: $n200 x 200, $n429 x 429, $(hey_count "$burst" 422) x 422"
# hey resends every 429 at once on the same connection, before the return
# slot it was given: those refusals are held to the slot (server.
# hold_early_retries), each still exactly one answer (counted above)
held=$(msum '^anytime_held_refusals_total ')
[ "$held" -gt 0 ] || fail "no refusal of the burst was held (anytime_held_refusals_total 0)"
[ "$held" -le "$n429" ] || fail "$held refusals held, more than the burst's $n429 429s"; ok
echo "burst: $held of its 429s held to their return slots"

# --- 2. right after it, a closed loop of 8 clients: >= 99 % 200 once the
# planner's overrun window (planner.overrun_window_s, 2 s) has passed. The
# burst's late answers are in that window, and the allowance they set may
# refuse some of the first requests when the host is busy (ctest -j2, or the
# sanitizer build); on a quiet host bench/overload.sh sees 100 % after the
# first second. The share in the first 2.5 s is printed, not asserted.
hey -z 5s -c 8 -o csv -m POST -T application/json -d '{"inputs":"the movie was good"}' \
    "$BASE/predict" >"$SERVE_TMP/loop.csv"
read -r tot good < <(awk -F, 'NR > 1 && $8 > 2.5 {t++; if ($7 == 200) g++} END {print t + 0, g + 0}' \
                     "$SERVE_TMP/loop.csv")
read -r tot1 good1 < <(awk -F, 'NR > 1 && $8 > 1.0 && $8 <= 2.5 {t++; if ($7 == 200) g++} END {print t + 0, g + 0}' \
                       "$SERVE_TMP/loop.csv")
[ "$tot" -ge 200 ] || fail "closed loop: only $tot answers after 2.5 s"
awk -v g="$good" -v t="$tot" 'BEGIN {exit !(g >= 0.99 * t)}' || \
  fail "closed loop after the burst: $good of $tot answers after 2.5 s were 200 (< 99 %)"; ok
echo "closed loop: $good of $tot answers after 2.5 s were 200 (1-2.5 s: $good1 of $tot1)"

# --- 3. metrics: refusals by reason, nothing left in flight, no bad release
quiesce
metrics=$(curl -s "$BASE/metrics")
for r in deadline infeasible limit queue_full early; do
  grep -qE "^anytime_rejections_total\{model=\"tiny-classifier\",reason=\"$r\"\} [0-9]+$" <<<"$metrics" || \
    fail "no anytime_rejections_total for reason $r"
done
[ "$(msum '^anytime_rejections_total\{model="tiny-classifier",reason="deadline"')" -ge "$n429" ] || \
  fail "refusals by reason 'deadline' fewer than the 429s the burst saw"
for m in anytime_planner_overrun_seconds anytime_planner_queue_fill anytime_planner_inflight_texts \
         anytime_planner_clients_active anytime_planner_fair_yields_total anytime_planner_horizon_capped_total \
         'anytime_planner_arrival_rate\{model="tiny-classifier",basis="offered"'; do
  grep -qE "^$m" <<<"$metrics" || fail "metric $m missing"
done
[ "$(msum '^anytime_planner_release_errors_total')" = 0 ] || fail "the planner refused a release"
[ "$(msum '^anytime_held_refusals_now ')" = 0 ] || fail "refusals still held after the load stopped"; ok

# --- 4. V2 tensor rows: the text path's logits (ids of "the movie was good")
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["the movie was good"]}]}'
# data of the output named logits, as one number per line
logits() { echo "$1" | grep -oE '"name":"logits","datatype":"FP32","shape":\[[0-9,]+\],"data":\[[^]]*\]' |
           sed -E 's/.*"data":\[//; s/\]$//' | tr ',' '\n'; }
expect 200; logits "$BODY" >"$SERVE_TMP/ref"
[ "$(wc -l <"$SERVE_TMP/ref")" = 3 ] || fail "text path: no logits in $BODY"
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[2,7],"data":[[2,5,14,9,10,3,0],[2,5,14,9,10,3,0]]},{"name":"attention_mask","datatype":"INT64","shape":[2,7],"data":[[1,1,1,1,1,1,0],[1,1,1,1,1,1,0]]}],"outputs":[{"name":"logits"}]}'
expect 200 '"shape":\[2,3\]'
grep -qi '^x-variant: a' <<<"$HEADERS" || fail "V2 tensor answer without x-variant"
logits "$BODY" >"$SERVE_TMP/got"
awk 'NR == FNR {ref[FNR - 1] = $1; next} {d = $1 - ref[(FNR - 1) % 3]; if (d < -1e-5 || d > 1e-5) bad++; n++}
     END {exit !(n == 6 && !bad)}' "$SERVE_TMP/ref" "$SERVE_TMP/got" || \
  fail "V2 tensor logits differ from the text path's $(tr '\n' ' ' <"$SERVE_TMP/ref"): $BODY"; ok

# --- 4b. slots and holds follow clients, not connections (issue 41):
# during another burst, a client named by x-client-id that comes back early
# on a NEW connection with another body and a 5 s deadline (which the
# planner would admit) is refused before the planner and held to its slot
# ("early"); requests through a
# proxy (X-Forwarded-For, not trusted) are anonymous: the same body again
# on the same connection is never held. Seen to fail before: the first held
# nothing (a new connection), the second held every early repeat.
hey -z 8s -c 200 -m POST -T application/json -d "$text4" "$BASE/predict" >/dev/null 2>&1 &
hey_pid=$!
id_held=0 px_pairs=0 px_held=0
for _ in $(seq 1 300); do
  kill -0 "$hey_pid" 2>/dev/null || break
  if [ "$id_held" = 0 ]; then # Connection: close, so --next opens a new one
    curl -s -o /dev/null -D "$SERVE_TMP/i1" -H 'x-client-id: probe-a' -H 'x-deadline-ms: 5' \
      -H 'Connection: close' -d "$text4" "$BASE/predict" --next -s -o "$SERVE_TMP/i2b" \
      -D "$SERVE_TMP/i2" -H 'x-client-id: probe-a' -H 'x-deadline-ms: 5000' \
      -d '{"inputs":["another text","and one more"]}' "$BASE/predict"
    # the early one is refused before the planner (its 5 s deadline would
    # be admitted), held to the slot, and says why
    ra1=$(tr -d '\r' <"$SERVE_TMP/i1" | awk -F': ' 'tolower($1) == "retry-after-ms" {print $2}')
    if grep -q '^HTTP/1.1 429' "$SERVE_TMP/i1" && awk -v v="${ra1:-0}" 'BEGIN {exit !(v >= 20)}'; then
      grep -q '^HTTP/1.1 429' "$SERVE_TMP/i2" && grep -qi '^x-held-ms: [0-9]' "$SERVE_TMP/i2" &&
        grep -q 'early: this client was told' "$SERVE_TMP/i2b" ||
        fail "an identified client back early (told $ra1 ms) was not refused for its slot: $(cat "$SERVE_TMP/i2" "$SERVE_TMP/i2b")"
      id_held=1
    fi
  fi
  curl -s -o /dev/null -D "$SERVE_TMP/p1" -H 'X-Forwarded-For: 192.0.2.7' -H 'x-deadline-ms: 5' \
    -d "$text4" "$BASE/predict" --next -s -o /dev/null -D "$SERVE_TMP/p2" \
    -H 'X-Forwarded-For: 198.51.100.9' -H 'x-deadline-ms: 5' -d "$text4" "$BASE/predict"
  if grep -q '^HTTP/1.1 429' "$SERVE_TMP/p1" && grep -q '^HTTP/1.1 429' "$SERVE_TMP/p2"; then
    px_pairs=$((px_pairs + 1))
    grep -qi '^x-held-ms' "$SERVE_TMP/p2" && px_held=$((px_held + 1))
  fi
  [ "$id_held" = 1 ] && [ "$px_pairs" -ge 5 ] && break
done
kill "$hey_pid" 2>/dev/null; wait "$hey_pid" 2>/dev/null || true
[ "$id_held" = 1 ] || fail "no 429 of 20 ms or more to the identified client during the burst"
[ "$px_pairs" -ge 1 ] || fail "no proxied pair was refused twice during the burst"
[ "$px_held" = 0 ] || fail "$px_held of $px_pairs anonymous proxied repeats were held"; ok
echo "slots by client: an identified early request refused for its slot and held, on a new connection; $px_pairs proxied pairs, none held"
quiesce
stop_server

# --- 5. policy limit: at most 4 texts in flight; a request of N texts counts N
start_server "$CFG" --policy limit --inflight-limit 4
# (a batch is a list of lists: TEI's /predict reads ["a", "b"] as one text pair)
req POST /predict '{"inputs":[["a"],["b"],["c"],["d"]]}'; expect 200 '"label"'; ok
# more texts than the limit can never be admitted: 422 at once, no
# Retry-After to invite a retry that cannot succeed (issue 41)
req POST /predict '{"inputs":[["a"],["b"],["c"],["d"],["e"]]}'; expect 422 'more than the in-flight limit of 4'
grep -qi '^Retry-After:' <<<"$HEADERS" && fail "a request that can never fit was told Retry-After"; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"text","datatype":"BYTES","shape":[5],"data":["a","b","c","d","e"]}]}'
expect 422 'in-flight limit of 4'; ok
ids5='[[2,10,3],[2,10,3],[2,10,3],[2,10,3],[2,10,3]]'; m5='[[1,1,1],[1,1,1],[1,1,1],[1,1,1],[1,1,1]]'
req POST /v2/models/tiny-classifier/infer "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[5,3],\"data\":$ids5},{\"name\":\"attention_mask\",\"datatype\":\"INT64\",\"shape\":[5,3],\"data\":$m5}]}"
expect 422 'in-flight limit of 4'; ok
req POST /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[4,3],"data":[[2,10,3],[2,10,3],[2,10,3],[2,10,3]]},{"name":"attention_mask","datatype":"INT64","shape":[4,3],"data":[[1,1,1],[1,1,1],[1,1,1],[1,1,1]]}]}'
expect 200 '"shape":\[4,3\]'; ok
# the planner decides before tokenising: 5 texts, one over max_tokens, are
# refused (422), not tokenised (413)
long=$(printf 'good %.0s' $(seq 1 100))
req POST /predict "{\"inputs\":[[\"a\"],[\"b\"],[\"c\"],[\"d\"],[\"$long\"]]}"; expect 422 'in-flight limit'; ok
# admitted, then 413 from the tokeniser: its 4 texts are released, so the
# next 4-text request is answered
req POST /predict "{\"inputs\":[[\"a\"],[\"b\"],[\"c\"],[\"$long\"]]}"; expect 413 'the limit is 64'
req POST /predict '{"inputs":[["a"],["b"],["c"],["d"]]}'; expect 200 '"label"'; ok
# the count before parsing (rj_prescan) against bodies that could fool a
# naive one: quotes, brackets and commas inside strings, escapes, a nested
# "inputs", odd white space, an escaped member name (left to the parse)
req POST /predict '{"inputs":[["a\"]b"],["c,d"],["e\\"],["f"]]}'; expect 200 '"label"'; ok
req POST /predict '{"inputs":[["a\"]b"],["c,d"],["e\\"],["f"],["[g]"]]}'; expect 422 'in-flight limit'; ok
# the nested "inputs" is not counted (6 would be refused, 422); the member
# holding it is then refused by the parse, as TEI's routes take no other
req POST /predict '{"model":"tiny-classifier","x":{"inputs":[["1"],["2"],["3"],["4"],["5"],["6"]],"y":[[],{}]},"inputs":[["p"],["q"]]}'
expect 400 'unknown field \\"x\\"'; ok
req POST /predict $' {\n "inputs" :\t[ ["a"] ,\r\n["b"] , ["c"],["d"] ] , "truncate" : false }\n'; expect 200 '"label"'; ok
req POST /predict '{"in\u0070uts":[["a"],["b"],["c"],["d"],["e"]]}'; expect 422 'in-flight limit'; ok
req POST /v1/embeddings '{"input":["a","b","c","d","e"],"model":"tiny-classifier"}'; expect 400 'classification model'; ok
[ "$(msum '^anytime_prescan_mismatches_total')" = 0 ] || fail "a scanned count disagreed with the parse"
[ "$(msum '^anytime_prescan_refusals_total')" -ge 3 ] || fail "refusals were not made before parsing"; ok
# a burst of 50 clients: refusals by reason "limit", one answer per request
hey -n 3000 -c 50 -m POST -T application/json -d '{"inputs":"the movie was good"}' "$BASE/predict" \
    >"$SERVE_TMP/lim" 2>&1 || fail "hey failed"
lim=$(cat "$SERVE_TMP/lim")
l200=$(hey_count "$lim" 200); l429=$(hey_count "$lim" 429)
[ "$(hey_total "$lim")" = 3000 ] || fail "limit burst: $(hey_total "$lim") answers to 3000 requests: $lim"
grep -q "Error distribution" <<<"$lim" && fail "client errors in the limit burst: $lim"
[ "$l429" -gt 0 ] || fail "limit 4 with 50 clients refused nothing: $lim"
quiesce
[ "$(msum '^anytime_rejections_total\{model="tiny-classifier",reason="limit"')" -ge "$l429" ] || \
  fail "refusals by reason 'limit' fewer than the 429s seen"
[ "$(msum '^anytime_planner_release_errors_total')" = 0 ] || fail "the planner refused a release"
[ "$(msum '^anytime_held_refusals_now ')" = 0 ] || fail "refusals still held after the load stopped"; ok
echo "limit burst: $l200 x 200, $l429 x 429"
stop_server

# --- the length model prices a text by its length, before tokenising
# (tests/data/serve/length.yaml: 2 ms at 8 tokens, w(t) = 1 + 0.05 (t - 8)).
# Against a 5 ms deadline a short text (w < 1) is answered, 60 words (about
# 62 tokens guessed from the bytes, w > 3.5: over 7 ms) are refused at
# once as infeasible, naming the price; with 50 ms the same text is
# answered. A V2 tensor row is priced at its padded length: [1,60] is
# refused, [1,3] answered. Seen to fail with the server priced at the
# table alone (every w = 1): the 60-word text and the [1,60] row got 200.
start_server "$ANYTIME_TEST_DATA/serve/length.yaml"
dreq() { # DEADLINE_MS PATH DATA: req with an x-deadline-ms header
  STATUS=$(curl -s -o "$SERVE_TMP/b" -w '%{http_code}' "$BASE$2" -H "x-deadline-ms: $1" \
           -H 'Content-Type: application/json' --data-binary "$3")
  BODY=$(cat "$SERVE_TMP/b")
}
words60=$(printf 'good %.0s' $(seq 1 60))
dreq 5 /predict '{"inputs":"good movie"}'; expect 200 '"label"'; ok
bpt=$(curl -s "$BASE/metrics" | awk '/^anytime_planner_bytes_per_token\{model="tiny-classifier"\}/ {print $NF}')
awk -v b="$bpt" 'BEGIN {exit !(b > 0)}' || fail "no bytes per token learnt after a tokenised text: '$bpt'"; ok
# one request of "a" and 2,000 spaces (one token of text) teaches at
# most 16 bytes per token, so the 60 words below are still priced long
# (unbounded, the average moved to ~24 at once)
pad=$(head -c 2000 /dev/zero | tr '\0' ' ')
printf '{"inputs":"a%s"}' "$pad" > "$SERVE_TMP/spaces.json"
curl -s -o /dev/null -H 'Content-Type: application/json' -H 'x-deadline-ms: 5000' \
  --data-binary "@$SERVE_TMP/spaces.json" "$BASE/predict"
bpt2=$(curl -s "$BASE/metrics" | awk '/^anytime_planner_bytes_per_token\{model="tiny-classifier"\}/ {print $NF}')
awk -v b="$bpt2" 'BEGIN {exit !(b > 0 && b <= 16)}' || fail "one request of spaces moved bytes per token to $bpt2"; ok
dreq 5 /predict "{\"inputs\":\"$words60\"}"; expect 422 'priced [0-9.]+x'; ok
dreq 50 /predict "{\"inputs\":\"$words60\"}"; expect 200 '"label"'; ok
ids60=$(printf '10,%.0s' $(seq 1 59)); ids60="[2,${ids60%,}]"
one60=$(printf '1,%.0s' $(seq 1 60)); one60="[${one60%,}]"
dreq 5 /v2/models/tiny-classifier/infer "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,60],\"data\":$ids60},{\"name\":\"attention_mask\",\"datatype\":\"INT64\",\"shape\":[1,60],\"data\":$one60}]}"
expect 422 'priced'; ok
dreq 5 /v2/models/tiny-classifier/infer '{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,3],"data":[2,10,3]},{"name":"attention_mask","datatype":"INT64","shape":[1,3],"data":[1,1,1]}]}'
expect 200 '"shape":\[1,'; ok
quiesce
[ "$(msum '^anytime_planner_release_errors_total')" = 0 ] || fail "the planner refused a release"; ok
stop_server
echo "PASS: $n admission checks"
