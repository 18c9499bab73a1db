#!/usr/bin/env bash
# tests/parity/chat_templates.sh — byte-for-byte parity of anytime's chat
# template engine (src/chat, anytime/chat.h) with @huggingface/jinja (pinned in
# tests/node/package.json), the engine transformers.js and the Hub use.
#
# Every template in tests/data/chat_templates/*.jinja (the real templates of
# the Llama 2, Llama 3, Llama 3.1, Mistral v0.1, Mistral v0.3, Mistral-Nemo,
# Qwen2.5, Phi-3, Gemma, Zephyr and ChatML families; README.md there says where each came from) is rendered
# with every conversation of conversations.json, with add_generation_prompt
# true and false, by both engines. The outputs must be identical bytes, and
# both must raise (raise_exception) on the same cases.
#
# Then the 42 real templates of @huggingface/jinja's own end-to-end suite,
# each with its data (tests/data/chat_templates/hfjs_e2e.jsonl). Then a
# differential run: chat_template_gen.mjs writes random templates of
# the same subset (seeded, so every run sees the same 10000) and both engines
# render each; again identical bytes, and both must fail on the same ones
# (most random templates are invalid somewhere; agreeing on that is part of
# the contract). docs/chat_templates.md lists the known divergences, which
# the generator does not produce.
#
# Zero mismatches is the bar. The reference must run: a missing Node, npm
# package or driver FAILS this test, it never skips (the convention of
# tests/parity/parity.sh).
#
#   tests/parity/chat_templates.sh   (ANYTIME_CHAT_RENDER: the driver,
#                                     default build/tests/chat_template_render)
set -euo pipefail
root=${ANYTIME_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
driver=${ANYTIME_CHAT_RENDER:-$root/build/tests/chat_template_render}
here="$root/tests/parity"
data="$root/tests/data/chat_templates"
work=$(mktemp -d "${TMPDIR:-/tmp}/anytime-chat-parity.XXXXXX")
trap 'rm -rf "$work"' EXIT

die() { echo "chat_templates: FAIL: $*" >&2; exit 1; }
command -v node >/dev/null || die "node is not installed (the @huggingface/jinja reference runs on Node)"
[ -x "$driver" ] || die "no driver at $driver (build the chat_template_render target)"
. "$root/tests/node/ensure_modules.sh"
ensure_node_modules die

shopt -s nullglob
templates=("$data"/*.jinja)
[ ${#templates[@]} -ge 11 ] || die "expected the family templates in $data, found ${#templates[@]}"
fail=0 total=0
for t in "${templates[@]}"; do
  fam=$(basename "$t" .jinja)
  node "$here/chat_template_ref.mjs" cases "$data" "$fam" "$work/$fam.ctx.jsonl" || die "$fam: building the contexts failed"
  node "$here/chat_template_ref.mjs" render "$t" "$work/$fam.ctx.jsonl" "$work/$fam.ref.jsonl" || die "$fam: the reference failed to run"
  "$driver" "$t" "$work/$fam.ctx.jsonl" "$work/$fam.at.jsonl" || die "$fam: the anytime driver failed to run"
  if ! node "$here/chat_template_ref.mjs" compare "$fam" "$work/$fam.ctx.jsonl" "$work/$fam.ref.jsonl" "$work/$fam.at.jsonl"; then
    fail=1
  fi
  total=$((total + $(wc -l < "$work/$fam.ctx.jsonl")))
done

# the templates and data of @huggingface/jinja's own end-to-end suite
# (hfjs_e2e.jsonl: 42 models; README.md says which one is left out and why)
e2e="$data/hfjs_e2e.jsonl"
[ -s "$e2e" ] || die "missing $e2e"
node "$here/chat_template_ref.mjs" pairs "$e2e" "$work/e2e.ref.jsonl" || die "the reference failed to run"
"$driver" --pairs "$e2e" "$work/e2e.at.jsonl" || die "the anytime driver failed to run"
node "$here/chat_template_ref.mjs" compare "hfjs-e2e" "$e2e" "$work/e2e.ref.jsonl" "$work/e2e.at.jsonl" || fail=1
ne2e=$(wc -l < "$e2e")

random=0
for seed in 1 2 3 4; do
  node "$here/chat_template_gen.mjs" "$seed" 2500 "$work/gen$seed.jsonl" || die "generating random templates failed"
  node "$here/chat_template_ref.mjs" pairs "$work/gen$seed.jsonl" "$work/gen$seed.ref.jsonl" || die "the reference failed to run"
  "$driver" --pairs "$work/gen$seed.jsonl" "$work/gen$seed.at.jsonl" || die "the anytime driver failed to run"
  if ! node "$here/chat_template_ref.mjs" compare "random(seed $seed)" "$work/gen$seed.jsonl" "$work/gen$seed.ref.jsonl" "$work/gen$seed.at.jsonl"; then
    fail=1
  fi
  random=$((random + $(wc -l < "$work/gen$seed.jsonl")))
done
[ "$fail" = 0 ] || die "renders differ from @huggingface/jinja (see MISMATCH lines)"
echo "chat_templates: PASS: ${#templates[@]} family templates ($total renders), $ne2e @huggingface/jinja end-to-end cases and $random random templates compared byte for byte, 0 mismatches"
