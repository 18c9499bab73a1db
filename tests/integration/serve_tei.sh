#!/usr/bin/env bash
# tests/integration/serve_tei.sh — the TEI-style routes read as Text
# Embeddings Inference's router reads them (issue 42), against the real
# server: /predict's pair reading (TEI's PredictInput: ["q", "d"] is ONE
# pair with one flat answer, a list of lists is a batch, three strings are
# refused), truncation_direction (Left keeps a text's last tokens, pairs
# too), /embed's dimensions (Matryoshka: the first N values, normalized
# after cutting), unknown members refused while every TEI member is taken,
# /tokenize in TEI's shape (slices of the input, byte offsets, null offsets
# on special tokens; also on a generation-only server), and POST /v1/rerank
# in Cohere's and Jina's shape, its scores checked against the reranker
# stand-in's numpy reference (tests/data/models/export/reranker). The
# unmodified @huggingface/inference client embeds through /embed
# (tests/clients/tei_hf_inference.mjs).
#
# The expectations come from TEI's documented wire format and router types
# (router/src/http/types.rs: PredictInput, TruncationDirection, EmbedRequest,
# SimpleToken), not from anytime's code; on the code before issue 42 every
# section below fails.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v jq >/dev/null || fail "jq is needed"
n=0; ok() { n=$((n + 1)); }
exp="$ANYTIME_TEST_DATA/models/export"
cdir="$ANYTIME_SOURCE_DIR/tests/clients"

# close A B [tol]: two JSON number arrays agree element by element
close() {
  jq -n --argjson a "$1" --argjson b "$2" --argjson t "${3:-1e-5}" \
    '($a | length) == ($b | length) and ([range($a | length)] | all(($a[.] - $b[.]) | fabs <= $t))' |
    grep -qx true
}

# ---------------------------------------------------------------- tiny.yaml
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"

# --- 1. /predict: what a list means
req POST /predict '{"inputs":["good"]}'            # one input as a list: a flat answer
expect 200 '^\[\{"score":[0-9.e-]+,"label":"'; ok
req POST /predict '{"inputs":[["good"],["a bad plot"]]}'   # a batch of single texts
expect 200 '^\[\[\{"score"'; [ "$(jq length <<<"$BODY")" = 2 ] || fail "batch of 2 gave $BODY"; ok
req POST /predict '{"inputs":["good","bad","plot"]}'
expect 400 'list of 3 strings'; jq -e '.error | type == "string"' <<<"$BODY" >/dev/null || fail "error is not a string: $BODY"; ok
req POST /predict '{"inputs":["good",["bad"]]}'; expect 400 'not a string'; ok
req POST /predict '{"inputs":[["good"],"bad"]}'; expect 400 '\[text\] or \[text, text_pair\]'; ok
req POST /predict '{"inputs":[["a","b","c"]]}'; expect 400 '\[text\] or \[text, text_pair\]'; ok

# --- 3. dimensions on /embed: the first N values, then normalized (TEI's order)
req POST /embed '{"inputs":"a good film","normalize":false}'; expect 200
raw=$(jq -c '.[0]' <<<"$BODY")
req POST /embed '{"inputs":"a good film","dimensions":4}'; expect 200
[ "$(jq '.[0] | length' <<<"$BODY")" = 4 ] || fail "dimensions 4 gave $BODY"
want=$(jq -c '.[0:4] as $v | ($v | map(. * .) | add | sqrt) as $n | $v | map(. / $n)' <<<"$raw")
close "$(jq -c '.[0]' <<<"$BODY")" "$want" || fail "dimensions 4: $BODY, want $want"; ok
req POST /embed '{"inputs":"a good film","dimensions":4,"normalize":false}'; expect 200
close "$(jq -c '.[0]' <<<"$BODY")" "$(jq -c '.[0:4]' <<<"$raw")" || fail "dimensions without normalize: $BODY"; ok
req POST /embed '{"inputs":"good","dimensions":16}'; expect 200; [ "$(jq '.[0] | length' <<<"$BODY")" = 16 ] || fail "$BODY"; ok
for bad in 0 -1 17 2.5 '"4"'; do
  req POST /embed "{\"inputs\":\"good\",\"dimensions\":$bad}"; expect 400 'dimensions.*1\.\.16'
done; ok

# --- 2. truncation_direction: Left keeps the last tokens ([CLS]/[SEP] still added)
# "good"*40 then "bad"*62 is 102 words; the limit is 64 tokens, 62 of them text
long="$(printf 'good %.0s' $(seq 1 40))$(printf 'bad %.0s' $(seq 1 62))"
tail62="$(printf 'bad %.0s' $(seq 1 62))"
head62="$(printf 'good %.0s' $(seq 1 40))$(printf 'bad %.0s' $(seq 1 22))"
emb() { req POST /embed "$1"; expect 200; jq -c '.[0]' <<<"$BODY"; }
left=$(emb "{\"inputs\":\"$long\",\"truncate\":true,\"truncation_direction\":\"Left\"}")
left_lc=$(emb "{\"inputs\":\"$long\",\"truncate\":true,\"truncation_direction\":\"left\"}")
right=$(emb "{\"inputs\":\"$long\",\"truncate\":true,\"truncation_direction\":\"Right\"}")
dflt=$(emb "{\"inputs\":\"$long\",\"truncate\":true}")
close "$left" "$(emb "{\"inputs\":\"$tail62\"}")" || fail "Left is not the text's last 62 tokens"; ok
close "$left" "$left_lc" 0 || fail "\"left\" (TEI's alias) differs from \"Left\""; ok
close "$right" "$(emb "{\"inputs\":\"$head62\"}")" || fail "Right is not the text's first 62 tokens"; ok
close "$right" "$dflt" 0 || fail "no truncation_direction is not Right (vocab.txt says nothing)"; ok
close "$left" "$right" 1e-3 && fail "Left and Right gave the same embedding"; ok
req POST /embed '{"inputs":"good","truncation_direction":"LEFT"}'; expect 400 'truncation_direction'; ok
req POST /predict "{\"inputs\":\"$long\",\"truncate\":true,\"truncation_direction\":\"Left\"}"; expect 200 '"label"'; ok

# --- 4. unknown members are refused, naming them; TEI's own members are taken
req POST /embed '{"inputs":"good","normalise":true}'; expect 400 'unknown field \\"normalise\\"'; ok
req POST /predict '{"inputs":"good","parameters":{}}'; expect 400 'unknown field \\"parameters\\"'; ok
req POST /tokenize '{"inputs":"good","truncate":true}'; expect 400 'unknown field \\"truncate\\"'; ok
req POST /embed '{"inputs":"good","truncate":false,"truncation_direction":"Right","prompt_name":null,"normalize":true,"dimensions":null,"model":"tiny-embedder"}'
expect 200 '^\[\['; ok
req POST /predict '{"inputs":"good","truncate":null,"truncation_direction":"right","raw_scores":false,"model":"tiny-classifier"}'
expect 200 '"label"'; ok
req POST /tokenize '{"inputs":"good","add_special_tokens":true,"prompt_name":null,"model":"tiny-embedder"}'
expect 200 '"id"'; ok

# --- 5. /tokenize in TEI's shape: slices, byte offsets, null on specials
req POST /tokenize '{"inputs":"héllo wörld 😀"}'; expect 200
want='[[{"id":2,"text":"[CLS]","special":true,"start":null,"stop":null},'\
'{"id":1,"text":"héllo","special":false,"start":0,"stop":6},'\
'{"id":1,"text":"wörld","special":false,"start":7,"stop":13},'\
'{"id":1,"text":"😀","special":false,"start":14,"stop":18},'\
'{"id":3,"text":"[SEP]","special":true,"start":null,"stop":null}]]'
[ "$(jq -cS . <<<"$BODY")" = "$(jq -cS . <<<"$want")" ] || fail "/tokenize: $BODY"; ok
# every non-special token's text is the input's bytes [start, stop) (the
# vocabulary piece would be "the" for "The": vocab.txt lowercases)
req POST /tokenize '{"inputs":["The Movie", "good"],"add_special_tokens":false}'; expect 200
[ "$(jq -c '[.[0][] | [.text, .start, .stop, .special]]' <<<"$BODY")" = '[["The",0,3,false],["Movie",4,9,false]]' ] ||
  fail "/tokenize slices: $BODY"
[ "$(jq -c '[.[1][] | .text]' <<<"$BODY")" = '["good"]' ] || fail "/tokenize list: $BODY"; ok
req POST /tokenize '{"inputs":[["a","b"]]}'; expect 400 'no text pairs'; ok

# --- 6. /v1/rerank with no cross-encoder served: a clear 404
req POST /v1/rerank '{"query":"q","documents":["d"]}'; expect 404 'cross-encoder'; ok

# --- the @huggingface/inference client (featureExtraction) against /embed
need_clients
node "$cdir/tei_hf_inference.mjs" "$BASE" || fail "@huggingface/inference client test"; ok
stop_server

# ---------------------------------------------------- export.yaml (reranker)
start_server "$ANYTIME_TEST_DATA/serve/export.yaml"
ref="$exp/reranker/reference.json"
q=$(jq -r .query "$ref")

# --- 1. a pair is ONE input: one flat list; raw_scores is the reference's logit
d0=$(jq -r '.pairs[0].text' "$ref")
req POST /predict "$(jq -cn --arg q "$q" --arg d "$d0" '{model:"reranker",inputs:[$q,$d],raw_scores:true}')"
expect 200 '^\[\{"score"'
[ "$(jq length <<<"$BODY")" = 1 ] || fail "pair answer: $BODY"
close "[$(jq '.[0].score' <<<"$BODY")]" "[$(jq '.pairs[0].logit' "$ref")]" 1e-4 || fail "pair logit: $BODY"; ok
# a batch of pairs: one list per pair, each the reference's logit
req POST /predict "$(jq -c --arg q "$q" '{model:"reranker",raw_scores:true,inputs:[.pairs[] | [$q, .text]]}' "$ref")"
expect 200 '^\[\[\{"score"'
close "$(jq -c '[.[][0].score]' <<<"$BODY")" "$(jq -c '[.pairs[].logit]' "$ref")" 1e-4 || fail "batch of pairs: $BODY"; ok

# --- 2. Left on a pair: each sequence keeps its end (longest first cuts the document)
# query 4 tokens + [CLS] [SEP] [SEP]: 57 tokens of the document fit in 64
doc="$(printf 'dull %.0s' $(seq 1 30))$(printf 'great %.0s' $(seq 1 57))"
tail57="$(printf 'great %.0s' $(seq 1 57))"
head57="$(printf 'dull %.0s' $(seq 1 30))$(printf 'great %.0s' $(seq 1 27))"
pscore() { req POST /predict "$1"; expect 200; jq '.[0].score' <<<"$BODY"; }
pl=$(pscore "{\"model\":\"reranker\",\"raw_scores\":true,\"truncate\":true,\"truncation_direction\":\"Left\",\"inputs\":[\"$q\",\"$doc\"]}")
pr=$(pscore "{\"model\":\"reranker\",\"raw_scores\":true,\"truncate\":true,\"truncation_direction\":\"Right\",\"inputs\":[\"$q\",\"$doc\"]}")
close "[$pl]" "[$(pscore "{\"model\":\"reranker\",\"raw_scores\":true,\"inputs\":[\"$q\",\"$tail57\"]}")]" || fail "Left pair is not (query, last 57 tokens)"; ok
close "[$pr]" "[$(pscore "{\"model\":\"reranker\",\"raw_scores\":true,\"inputs\":[\"$q\",\"$head57\"]}")]" || fail "Right pair is not (query, first 57 tokens)"; ok
close "[$pl]" "[$pr]" 1e-6 && fail "Left and Right gave the same pair score"; ok
# TEI's /rerank takes it too
req POST /rerank "{\"query\":\"$q\",\"texts\":[\"$doc\"],\"truncate\":true,\"truncation_direction\":\"Left\",\"raw_scores\":true}"
expect 200; close "[$(jq '.[0].score' <<<"$BODY")]" "[$pl]" || fail "/rerank Left: $BODY"; ok
req POST /rerank "{\"query\":\"$q\",\"texts\":[\"a\"],\"top_n\":1}"; expect 400 'unknown field \\"top_n\\"'; ok

# --- 2. an embedder whose pooling leaves its prompt out: Left would cut
# the prompt, so it is refused, naming why
req POST /embed '{"model":"st-prompts","inputs":"good","truncate":true,"truncation_direction":"Left"}'
expect 400 'include_prompt: false'; ok
req POST /embed '{"model":"st-prompts","inputs":"good","truncate":true,"truncation_direction":"Right"}'; expect 200; ok
# --- 5. /tokenize with prompt_name: the prompt goes first, offsets count from it (TEI)
req POST /tokenize '{"model":"st-prompts","inputs":"the movie","prompt_name":"doc","add_special_tokens":false}'
expect 200
[ "$(jq -c '[.[0][] | [.text, .start, .stop]]' <<<"$BODY")" = '[["the",0,3],["story",4,9],[",",10,11],["the",12,15],["movie",16,21]]' ] ||
  fail "/tokenize with prompt_name: $BODY"; ok
req POST /tokenize '{"model":"st-prompts","inputs":"x","prompt_name":"nope"}'; expect 400 'query'; ok

# --- 6. /v1/rerank (Cohere/Jina): sorted by relevance_score, cut to top_n, documents as strings or {text}
body=$(jq -c '{model:"reranker",query:.query,documents:[.pairs[] | .text],top_n:3,return_documents:true}' "$ref")
req POST /v1/rerank "$body"; expect 200
want=$(jq -c '[.pairs | to_entries[] | {index:.key, relevance_score:.value.score, text:.value.text}] | sort_by(-.relevance_score) | .[0:3]' "$ref")
[ "$(jq -c '[.results[].index]' <<<"$BODY")" = "$(jq -c '[.[].index]' <<<"$want")" ] || fail "/v1/rerank order: $BODY, want $want"
close "$(jq -c '[.results[].relevance_score]' <<<"$BODY")" "$(jq -c '[.[].relevance_score]' <<<"$want")" 1e-4 || fail "/v1/rerank scores: $BODY"
[ "$(jq -c '[.results[].document.text]' <<<"$BODY")" = "$(jq -c '[.[].text]' <<<"$want")" ] || fail "/v1/rerank documents: $BODY"
jq -e '(.id | type == "string") and .model == "reranker" and (.usage.total_tokens | type == "number")' <<<"$BODY" >/dev/null || fail "/v1/rerank envelope: $BODY"; ok
req POST /v1/rerank "$(jq -c '{query:.query,documents:[.pairs[] | {text:.text, id:"x"}]}' "$ref")"; expect 200
[ "$(jq '.results | length' <<<"$BODY")" = "$(jq '.pairs | length' "$ref")" ] || fail "no top_n: every document: $BODY"
jq -e '.results | all(has("document") | not)' <<<"$BODY" >/dev/null || fail "return_documents defaults to false: $BODY"; ok
req POST /v1/rerank '{"query":"q","documents":["a"],"top_n":0}'; expect 400 'top_n'; ok
req POST /v1/rerank '{"query":"q","documents":[{"title":"a"}]}'; expect 400 'documents.*text'; ok
req POST /v1/rerank '{"query":"q","documents":["a"],"rank_fields":["text"]}'; expect 400 'rank_fields'; ok
req POST /v1/rerank '{"query":"q","documents":["a"],"texts":["a"]}'; expect 400 'unknown field'; ok
req POST /v1/rerank '{"query":"","documents":["a"]}'; expect 400 'query'; ok
req POST /v1/rerank '{"query":"q","documents":["a"],"model":"tiny"}'; expect 404 'not served'; ok
req POST /v1/rerank '{"query":"q","documents":["a"],"model":"st-cls"}'; expect 400; ok
stop_server

# ------------------------------------------- chat.yaml (generation only)
start_server "$ANYTIME_TEST_DATA/serve/chat.yaml"
req POST /tokenize '{"inputs":"hello world"}'; expect 200
jq -e 'length == 1 and (.[0] | length > 0) and (.[0] | all(.special or (.text | type == "string")))' <<<"$BODY" >/dev/null ||
  fail "/tokenize on a generation-only server: $BODY"
# the slices put back together are the input (byte offsets, no gaps past spaces)
[ "$(jq -r '[.[0][] | select(.special | not) | .text] | add' <<<"$BODY" | tr -d ' ')" = helloworld ] ||
  fail "/tokenize slices on the generator's tokenizer: $BODY"; ok
req POST /tokenize '{"inputs":"hi","model":"chat"}'; expect 200 '"id"'; ok
req POST /tokenize '{"inputs":"hi","model":"nope"}'; expect 404 'not served'; ok
stop_server
echo "PASS: $n TEI checks"
