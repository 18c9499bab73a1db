#!/usr/bin/env bash
# tests/parity/parity.sh — token-for-token parity between anytime's tokenizer
# and the real Hugging Face tokenizers library (npm tokenizers, pinned in
# tests/node/package.json), through the real `anytime tokenize` binary.
#
# Tokenizers compared: every models/*/tokenizer.json present, bert-base-uncased
# (as tokenizer.json AND as a bare vocab.txt), GPT-2 byte-level BPE (merges in
# both the ["a","b"] and the old "a b" form), and four "kitchen sink"
# tokenizers covering the remaining components (tests/parity/build_refs.js),
# and the SentencePiece Unigram tokenizers committed in tests/data/tokenizers/
# (Precompiled/Nmt normalizers, Metaspace, byte fallback; made by
# tools/tokenizers/build_unigram_tokenizers.sh).
# Texts: all 4000 Pang & Lee sentences, all 1500 reviews,
# tests/data/text/adversarial.json and 6000 multilingual texts built by
# make_texts.js from tests/data/text/multilingual_words.json (every
# tokenizer runs over all of them). Fields: ids, type ids, attention mask,
# special-tokens mask, offsets (code points, as HF's bindings report),
# token strings and decoded text.
#
# Zero mismatches is the bar. The reference must run: a missing Node, npm
# package or corpus FAILS this test, it never skips.
#
#   tests/parity/parity.sh            (ANYTIME_BIN defaults to build/anytime)
set -euo pipefail
root=${ANYTIME_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${ANYTIME_BIN:-$root/build/anytime}
here="$root/tests/parity"
work=$(mktemp -d "${TMPDIR:-/tmp}/anytime-parity.XXXXXX")
trap 'rm -rf "$work"' EXIT

die() { echo "parity: FAIL: $*" >&2; exit 1; }
command -v node >/dev/null || die "node is not installed (the HF reference runs on Node)"
[ -x "$bin" ] || die "no anytime binary at $bin"

# 1. the pinned reference packages, installed into tests/node/node_modules
. "$root/tests/node/ensure_modules.sh"
ensure_node_modules die

# 2. the corpus (fetch_data.sh is idempotent and quick once fetched)
"$root/tools/train/fetch_data.sh" >/dev/null || die "tools/train/fetch_data.sh failed"
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
corpora="$data/pattern/usr/share/doc/python3-pattern/test/corpora"

# 3. reference tokenizers and the texts
node "$here/build_refs.js" "$work/refs" || die "building the HF reference tokenizers failed"
node "$here/make_texts.js" "$corpora" "$work/corpus.jsonl" "$work/multi.jsonl" || die "gathering the texts failed"
cat "$work/corpus.jsonl" "$work/multi.jsonl" > "$work/texts.jsonl"
# Under the sanitizers (ANYTIME_TEST_SANITIZED, set by the ASan build's
# ctest) every 4th text: that build looks for memory errors, which a quarter
# of the texts of every kind still exercises, and the whole set there took
# 13.5 min of the suite's 30; the release build compares all of them.
if [ "${ANYTIME_TEST_SANITIZED:-0}" = 1 ]; then
  awk 'NR % 4 == 1' "$work/texts.jsonl" > "$work/quarter.jsonl"
  mv "$work/quarter.jsonl" "$work/texts.jsonl"
  echo "parity: sanitizer build: every 4th text ($(wc -l < "$work/texts.jsonl"))" >&2
fi

# 4. compare: NAME HF_TOKENIZER ANYTIME_TOKENIZER
pairs=()
shopt -s nullglob
for t in "$root"/models/*/tokenizer.json; do
  pairs+=("models/$(basename "$(dirname "$t")")" "$t" "$t")
done
for t in "$root"/tests/data/tokenizers/*.json; do
  pairs+=("tests/data/tokenizers/$(basename "$t")" "$t" "$t")
done
for d in "$work"/refs/*/; do
  n=$(basename "$d")
  pairs+=("$n" "$d/tokenizer.json" "$d/tokenizer.json")
done
pairs+=("bert-base-uncased(vocab.txt)" "$work/refs/bert-base-uncased/tokenizer.json" "$work/refs/bert-base-uncased/vocab.txt")

fail=0 count=0
set -- "${pairs[@]}"
while [ $# -gt 0 ]; do
  name=$1 hf_tok=$2 at_tok=$3
  shift 3
  count=$((count + 1))
  node "$here/hf_encode.js" "$hf_tok" "$work/texts.jsonl" "$work/hf.jsonl" ||
    die "$name: the HF reference could not encode"
  "$bin" tokenize --tokenizer "$at_tok" --input "$work/texts.jsonl" --offsets chars --decode \
    > "$work/at.jsonl" || { echo "parity: $name: anytime tokenize failed" >&2; fail=1; continue; }
  node "$here/compare.js" "$name" "$work/texts.jsonl" "$work/hf.jsonl" "$work/at.jsonl" || fail=1
done
[ "$count" -gt 0 ] || die "no tokenizers compared"
if [ $fail -ne 0 ]; then
  echo "parity: FAIL: anytime differs from Hugging Face tokenizers (see above)" >&2
  exit 1
fi
echo "parity: all $count tokenizers match Hugging Face tokenizers token for token"
