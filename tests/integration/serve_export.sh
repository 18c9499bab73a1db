#!/usr/bin/env bash
# tests/integration/serve_export.sh — users' own export layouts, served and
# run as their files say (docs/models.md, "Serving your own model"). The
# stand-ins (tests/data/models/export, tools/testmodels/make_export_models.py)
# carry reference answers numpy computed from the same weights; the checks
# compare every route's numbers with them (tests/clients/export_standins.mjs,
# through the unmodified npm `openai` client too) and `anytime run`'s.
#
# Seen to fail (2026-12-01), each by editing a copy of the stand-ins the
# server loads while the references stay:
#   st-cls 1_Pooling switched to mean -> "st-cls /embed ...: cosine 0.785"
#   st-cls sentence_bert_config.json removed -> "max |diff| 4.77e-1" (cut at 64, not 8)
#   multilabel problem_type single_label -> "multilabel /predict #0: max |diff| 6.61e-1"
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
exp="$ANYTIME_TEST_DATA/models/export"
cdir="$ANYTIME_SOURCE_DIR/tests/clients"
need_clients
export ANYTIME_CACHE_DIR=${ANYTIME_CACHE_DIR:-$(mktemp -d)}

# 1. what resolution reads from the files
ls_out=$("$ANYTIME_BIN" ls --dir "$exp" 2>&1) || true
for want in "st-cls.*max tokens 8  pooling cls" "st-max.*max tokens 64  pooling max" \
            "st-weighted.*pooling weighted_mean" "roberta-pos.*max tokens 10  pooling mean" \
            "st-dense.*pooling none" "multilabel.*multi-label"; do
  tr '\n' ' ' <<<"$ls_out" | sed 's/local  /\n/g' | grep -q "$want" || fail "anytime ls: no line matching '$want' in:
$ls_out"
done

# 2. anytime run, every text (the long one cut where the reference cuts it)
for m in st-cls st-max st-weighted roberta-pos st-dense multilabel; do
  texts=()
  while IFS= read -r t; do texts+=("$t"); done < <(node -e '
    for (const t of require(process.argv[1]).texts) console.log(t.text)' "$exp/$m/reference.json")
  "$ANYTIME_BIN" run "$exp/$m" "${texts[@]}" --json 2>/dev/null \
    | node "$cdir/export_run.mjs" "$exp/$m/reference.json" || fail "anytime run $m"
done

# 2b. run puts the default prompt before each text (st-prompts: "query",
# include_prompt false), as the server does
texts=()
while IFS= read -r t; do texts+=("$t"); done < <(node -e '
  for (const t of require(process.argv[1]).texts.slice(0, -1)) console.log(t.text)' "$exp/st-prompts/reference.json")
"$ANYTIME_BIN" run "$exp/st-prompts" "${texts[@]}" --json 2>/dev/null | node -e '
  const ref = require(process.argv[1]).texts;
  const got = JSON.parse(require("fs").readFileSync(0, "utf8")).results;
  got.forEach((g, i) => g.embedding.forEach((v, k) => {
    const w = ref[i].prompts.query.normalized[k];
    if (Math.abs(v - w) > 1e-4) { console.error(`text ${i} dim ${k}: ${v} vs ${w}`); process.exit(1); }
  }));' "$exp/st-prompts/reference.json" || fail "anytime run st-prompts: not the default prompt's embedding"

# 3. a Dense module the graph lacks is refused, naming it
if out=$("$ANYTIME_BIN" run "$exp/st-dense-missing" "the movie" 2>&1); then
  fail "st-dense-missing ran; its Dense module would have been skipped silently"
fi
grep -q "Dense module (2_Dense/)" <<<"$out" || fail "the refusal does not name 2_Dense: $out"

# 3b. anytime eval (batches of 16, padded) against anytime run (one text at
# a time) on the multi-label stand-in: the same predictions, so the same
# number correct
csv="$ANYTIME_TEST_DATA/text/tiny_labelled.csv"
ev=$("$ANYTIME_BIN" eval --model "$exp/multilabel" --data "$csv" --json 2>/dev/null) || fail "anytime eval failed"
mapfile -t labels < <(tail -n +2 "$csv" | cut -d, -f1)
mapfile -t rtexts < <(tail -n +2 "$csv" | cut -d, -f2- | sed 's/^"//; s/"$//')
runj=$("$ANYTIME_BIN" run "$exp/multilabel" "${rtexts[@]}" --json 2>/dev/null) || fail "anytime run on the eval texts failed"
names=(toxic obscene insult)
want=0
mapfile -t got < <(jq -r '.results[].label' <<<"$runj")
for i in "${!labels[@]}"; do [ "${got[$i]}" = "${names[${labels[$i]}]}" ] && want=$((want + 1)); done
[ "$(jq -r '.count' <<<"$ev")" = "${#labels[@]}" ] && [ "$(jq -r '.correct' <<<"$ev")" = "$want" ] ||
  fail "eval says $(jq -c '{count, correct}' <<<"$ev"); run one text at a time gets $want of ${#labels[@]}"
[ "$(jq '[.confusion[][]] | add' <<<"$ev")" = "${#labels[@]}" ] || fail "the confusion matrix does not add up to the count"

# 3b. one vector space per embedder: two different models as the variants of
# one is refused at start-up, naming them; shared_space: true lets it start;
# the same graph twice passes the check
W=$(mktemp -d)
space_cfg() { # $1 = shared_space value, $2 = second variant's graph
  cat <<EOF
server: {host: 127.0.0.1, port: 0}
engine: {workers: 1}
planner: {deadline_ms: 5000}
models:
  - name: mixed
    task: embed
    tokenizer: $exp/st-max/vocab.txt
    config: $exp/st-max/config.json
    shared_space: $1
    variants:
      - {name: a, path: $exp/st-max/onnx/model.onnx, accuracy: 0.9}
      - {name: b, path: $2, accuracy: 0.8}
EOF
}
space_cfg false "$exp/st-weighted/onnx/model.onnx" > "$W/mixed.yaml"
if out=$(timeout 60 "$ANYTIME_BIN" serve --config "$W/mixed.yaml" --no-cache 2>&1); then
  fail "two different models served as variants of one embedder"
fi
grep -q "variant 'b' does not embed into variant 'a''s space" <<<"$out" ||
  fail "the refusal does not name the variants: $out"
space_cfg true "$exp/st-weighted/onnx/model.onnx" > "$W/shared.yaml"
start_server_args --config "$W/shared.yaml" --no-cache
stop_server
space_cfg false "$exp/st-max/onnx/model.onnx" > "$W/same.yaml"
start_server_args --config "$W/same.yaml" --no-cache   # starts: the check passes
stop_server
rm -rf "$W"

# 4. the server: every route against the references
start_server "$ANYTIME_TEST_DATA/serve/export.yaml"
node "$cdir/export_standins.mjs" "$BASE" "$exp" || fail "export stand-ins through the server"
stop_server
echo "serve_export: ok"
