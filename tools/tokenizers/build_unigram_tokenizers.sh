#!/usr/bin/env bash
# tools/tokenizers/build_unigram_tokenizers.sh — trains the small SentencePiece
# Unigram models behind anytime's Unigram/Precompiled parity tests and writes
# their tokenizer.json files to tests/data/tokenizers/ (committed, so the
# test suite needs no sentencepiece), plus tests/data/text/multilingual_words.json.
#
#   xlmr-unigram-4k   nmt_nfkc charsmap, 4000 pieces, XLM-R layout
#   t5-unigram-3k     nmt_nfkc charsmap, 3000 pieces, T5 layout, coverage 0.98 (many unks)
#   nmt-unigram-bf-2k byte_fallback on, 2000 pieces, Nmt+NFKC components
#
# Needs (scripts/deps.txt, group train): sentencepiece, python3-sentencepiece,
# and the word lists wamerican wngerman wfrench witalian wspanish wpolish.
# Deterministic: fixed corpus seed, one training thread.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/tokenizers"
out="$root/tests/data/tokenizers"
work=$(mktemp -d "${TMPDIR:-/tmp}/anytime-spm.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

/usr/bin/python3 "$here/make_corpus.py" "$root/tests/data/text/multilingual_words.json" "$work/corpus.txt" 60000

train() { # NAME VOCAB COVERAGE BYTE_FALLBACK
  spm_train --input="$work/corpus.txt" --model_prefix="$work/$1" --model_type=unigram \
    --vocab_size="$2" --character_coverage="$3" --byte_fallback="$4" \
    --normalization_rule_name=nmt_nfkc --num_threads=1 --seed_sentencepiece_size=200000 \
    --input_sentence_size=0 --shuffle_input_sentence=false --minloglevel=2 >/dev/null
}
train xlmr 4000 0.9995 false
train t5 3000 0.98 false
train bf 2000 0.9995 true

/usr/bin/python3 "$here/spm_to_tokenizer_json.py" xlmr "$work/xlmr.model" "$out/xlmr-unigram-4k.json"
/usr/bin/python3 "$here/spm_to_tokenizer_json.py" t5 "$work/t5.model" "$out/t5-unigram-3k.json"
/usr/bin/python3 "$here/spm_to_tokenizer_json.py" nmt "$work/bf.model" "$out/nmt-unigram-bf-2k.json"
ls -l "$out"
