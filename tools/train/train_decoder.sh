#!/bin/sh
# Train and ship the project's GPT-style decoder (models/decoder) from nothing:
# corpus -> split -> byte-level BPE (npm tokenizers@0.23.2) -> torch training
# -> ONNX fp32 + int8 -> checks, perplexity, reference outputs, model card.
#
# usage: tools/train/train_decoder.sh [--out DIR] [--work DIR] [--threads N] [--steps N] [--no-ort]
#   --out      model directory (default models/decoder)
#   --work     intermediate files (default $DATA/decoder-work: tokenizer, ids, checkpoint)
#   --threads  torch / BLAS threads (default 1, or $ANYTIME_TRAIN_THREADS);
#              results are bit-reproducible for a fixed count
#   --steps    training steps (default 400; 8 windows of 256 tokens each)
#   --no-ort   check with the numpy evaluator only (no onnxruntime-node)
# Intermediate files go to ${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
# (pang-lee-reviews/, decoder-work/ unless --work), never into the repository.
# Needs /usr/bin/python3 with Debian's python3-torch, python3-onnx, numpy;
# node >= 18 and npm.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
OUT="$ROOT/models/decoder"
THREADS=${ANYTIME_TRAIN_THREADS:-1}
STEPS=400
ORT=1
WORK="$DATA/decoder-work"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        --no-ort) ORT=0; shift ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "train_decoder: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
PY=/usr/bin/python3
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
START=$(date +%s)
mkdir -p "$WORK" "$OUT"

# 1. Corpus (Debian python3-pattern) and the committed 1350/150 review split.
"$HERE/fetch_data.sh" >/dev/null
"$PY" "$HERE/decoder_data.py" --data-dir "$DATA"

# 2. The real tokenizers library, pinned, in the data cache.
NODEDIR="$DATA/node-tokenizers-0.23.2"
if [ ! -f "$NODEDIR/node_modules/tokenizers/package.json" ]; then
    mkdir -p "$NODEDIR"
    [ -f "$NODEDIR/package.json" ] || echo '{"private":true}' > "$NODEDIR/package.json"
    npm install --prefix "$NODEDIR" --no-audit --no-fund --save-exact tokenizers@0.23.2 >&2
fi

# 3. Byte-level BPE, 4096 ids, on the training reviews; ids of every review.
TOKSTATS=$(node "$HERE/decoder_tokenizer.mjs" train "$NODEDIR" \
    "$DATA/pang-lee-reviews/reviews.json" "$WORK/tokenizer.json" 4096 "$WORK/ids.json")
TOKSTATS=$(printf '%s\n' "$TOKSTATS" | tail -n 1)    # the trainer prints blank lines first
echo "tokenizer: $TOKSTATS"

# 4. Train.
"$PY" "$HERE/decoder_train.py" --ids "$WORK/ids.json" --out "$WORK/decoder.pt" \
    --steps "$STEPS" --threads "$THREADS"

# 5. Export fp32 + int8 and the Hugging Face files.
"$PY" "$HERE/decoder_export.py" --ckpt "$WORK/decoder.pt" --tokenizer "$WORK/tokenizer.json" \
    --out "$OUT" --threads "$THREADS"

# 6. onnxruntime-node 1.30.0's native binding, as a check tool only: the
#    tarball scripts/fetch-ort.sh keeps for the pinned library (sha256 from
#    cmake/ort-version.txt).
ORTARG=""
if [ $ORT = 1 ]; then
    BIND=$("$HERE/ort_binding.sh" "$DATA")
    [ -n "$BIND" ] && ORTARG="--ort-binding $BIND"
fi

# 7. Checks, perplexity, reference outputs, model card.
NOW=$(date +%s)
# shellcheck disable=SC2086
"$PY" "$HERE/decoder_check.py" --model-dir "$OUT" --ckpt "$WORK/decoder.pt" \
    --ids "$WORK/ids.json" --reviews "$DATA/pang-lee-reviews/reviews.json" \
    --node-dir "$NODEDIR" --threads "$THREADS" --total-seconds $((NOW - START)) \
    --tok-stats "$TOKSTATS" $ORTARG
echo "train_decoder: done in $(( $(date +%s) - START )) s -> $OUT"
