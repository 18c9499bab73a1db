#!/usr/bin/env bash
# tests/integration/decoder_exports.sh — decoders made by the real exporter
# path (torch.onnx.export in the layouts of Optimum's with-past exports of
# Llama, Mistral, Qwen2, GPT-2 and Phi; tests/data/models/decoder-exports,
# tools/testmodels/make_decoder_exports.py) held token for token to
# onnxruntime-node's own greedy loop with `present` fed back as `past`
# (tests/reference/decoder_exports.js), for 4 prompts of different lengths
# at once and up to 72 tokens each:
#   - `anytime generate --temperature 0`, every prompt at once, with the
#     defaults and again with small prefill chunks, KV blocks and decode
#     batches (chunk and block boundaries inside the prompts);
#   - the served /v1/completions, the four requests at once;
#   - where the maker also wrote the GroupQueryAttention form (gqa/, the
#     same weights), onnxruntime-node decoding it with one shared past/
#     present buffer per layer, alone and with rows of different lengths
#     batched, equals the float64 reference (tests/reference/gqa_exports.js),
#     and anytime running that form (`--variant gqa/model.onnx`: generate
#     with the defaults and with small chunks/blocks/steps, and served)
#     gives ORT's tokens.
# Issue 43: a Llama export whose tokenizer.json adds <s> and whose
# tokenizer_config.json says add_bos_token got two BOS ids and diverged.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
. "$ANYTIME_SOURCE_DIR/tests/node/ensure_modules.sh"
ensure_node_modules fail
ref="$ANYTIME_SOURCE_DIR/tests/reference/decoder_exports.js"
root="$ANYTIME_SOURCE_DIR/tests/data/models/decoder-exports"
TMP=$(mktemp -d)

prompts() { # model_dir -> the reference's prompts, one per line
  node -e 'for (const p of JSON.parse(require("fs").readFileSync(process.argv[1] + "/reference.json")).prompts) console.log(p.text)' "$1"
}

n=0 g=0
for dir in "$root"/*/; do
  dir=${dir%/}
  fam=$(basename "$dir")
  mapfile -t P < <(prompts "$dir")
  [ "${#P[@]}" -eq 4 ] || fail "$fam: reference.json has ${#P[@]} prompts, want 4"
  "$ANYTIME_BIN" generate --model "$dir" --max-tokens 72 --ids --json "${P[@]}" \
    >"$TMP/$fam.json" 2>"$TMP/$fam.err" || { cat "$TMP/$fam.err" >&2; fail "$fam: anytime generate failed"; }
  node "$ref" "$dir" "$TMP/$fam.json" || fail "$fam: anytime generate differs from ORT's loop"
  "$ANYTIME_BIN" generate --model "$dir" --max-tokens 72 --ids --json --chunk 5 --block-tokens 4 \
    --max-batch 3 "${P[@]}" >"$TMP/$fam-small.json" 2>"$TMP/$fam.err" ||
    { cat "$TMP/$fam.err" >&2; fail "$fam: anytime generate (small chunks) failed"; }
  node "$ref" "$dir" "$TMP/$fam-small.json" ||
    fail "$fam: anytime generate with 5-token chunks, 4-position blocks, 3 per step differs"
  cat >"$TMP/$fam.yaml" <<YAML
generator:
  name: $fam
  model: $dir
  threads: 1
YAML
  start_server "$TMP/$fam.yaml"
  node "$ref" "$dir" "$TMP/$fam.json" "$BASE" "$fam" || fail "$fam: /v1/completions differs from ORT's loop"
  stop_server
  # the same weights in the GroupQueryAttention form, where the family has one
  if [ -f "$dir/gqa/model.onnx" ]; then
    node "$ANYTIME_SOURCE_DIR/tests/reference/gqa_exports.js" "$dir" || fail "$fam: the GQA form differs"
    # and anytime running that form (one shared past/present buffer per
    # layer): the same tokens as ORT's loop over the exported form
    for opts in "" "--chunk 5 --block-tokens 4 --max-batch 3"; do
      # shellcheck disable=SC2086
      "$ANYTIME_BIN" generate --model "$dir" --variant gqa/model.onnx --max-tokens 72 --ids --json \
        $opts "${P[@]}" >"$TMP/$fam-gqa.json" 2>"$TMP/$fam.err" ||
        { cat "$TMP/$fam.err" >&2; fail "$fam: anytime generate on the GQA form ($opts) failed"; }
      node "$ref" "$dir" "$TMP/$fam-gqa.json" || fail "$fam: anytime generate on the GQA form ($opts) differs"
    done
    printf '  variant: gqa/model.onnx\n' >>"$TMP/$fam.yaml"
    start_server "$TMP/$fam.yaml"
    node "$ref" "$dir" "$TMP/$fam-gqa.json" "$BASE" "$fam" || fail "$fam: /v1/completions on the GQA form differs"
    stop_server
    g=$((g + 1))
  fi
  n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "only $n exporter-made decoders under $root"
[ "$g" -ge 1 ] || fail "no GroupQueryAttention form under $root"
rm -rf "$TMP"
echo "decoder_exports: PASS ($n families, $g in the GQA form too)"
