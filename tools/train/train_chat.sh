#!/bin/sh
# Make the project's default chat model (models/chat): the trained decoder
# (models/decoder) fine-tuned on ChatML conversations made from the decoder's
# TRAINING reviews -> ONNX fp32 + int8 -> checks, held-out verdict accuracy,
# reference outputs, model card.
#
# usage: tools/train/train_chat.sh [--out DIR] [--work DIR] [--init PATH] [--threads N] [--steps N] [--no-ort]
#   --out      model directory (default models/chat)
#   --work     intermediate files (default $DATA/chat-work: chat set, tokenizer, checkpoint)
#   --init     the decoder to start from: a decoder_train.py checkpoint or a decoder
#              ONNX graph (default $DATA/decoder-work/decoder.pt if train_decoder.sh
#              left one, else models/decoder/onnx/model.onnx; same weights)
#   --threads  torch / BLAS threads (default 1, or $ANYTIME_TRAIN_THREADS);
#              results are bit-reproducible for a fixed count
#   --steps    fine-tuning steps (default 280; 16 conversations each)
#   --no-ort   check with the numpy evaluator only (no onnxruntime-node)
# Intermediate files go to ${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data},
# never into the repository. Needs /usr/bin/python3 with Debian's
# python3-torch, python3-onnx, numpy; node >= 18 and npm.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
OUT="$ROOT/models/chat"
THREADS=${ANYTIME_TRAIN_THREADS:-1}
STEPS=280
ORT=1
WORK="$DATA/chat-work"
INIT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --init) INIT=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        --no-ort) ORT=0; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "train_chat: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$INIT" ]; then
    INIT="$ROOT/models/decoder/onnx/model.onnx"
    [ -f "$DATA/decoder-work/decoder.pt" ] && INIT="$DATA/decoder-work/decoder.pt"
fi
PY=/usr/bin/python3
export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
START=$(date +%s)
mkdir -p "$WORK" "$OUT"

# 1. Corpus and the decoder's committed 1350/150 review split.
"$HERE/fetch_data.sh" >/dev/null
"$PY" "$HERE/decoder_data.py" --data-dir "$DATA"

# 2. Pinned npm packages in the data cache: the real tokenizers library, and
#    Hugging Face's Jinja implementation (to check the chat template).
npm_pin() {  # DIR PACKAGE@VERSION PATH-INSIDE-node_modules
    if [ ! -f "$1/node_modules/$3/package.json" ]; then
        mkdir -p "$1"
        [ -f "$1/package.json" ] || echo '{"private":true}' > "$1/package.json"
        npm install --prefix "$1" --no-audit --no-fund --save-exact "$2" >&2
    fi
}
NODEDIR="$DATA/node-tokenizers-0.23.2"
JINJADIR="$DATA/node-hf-jinja-0.5.11"
npm_pin "$NODEDIR" tokenizers@0.23.2 tokenizers
npm_pin "$JINJADIR" @huggingface/jinja@0.5.11 @huggingface/jinja

# 3. The chat set (training reviews only) and the tokenizer: the decoder's
#    tokenizer.json plus the special tokens <|im_start|> (4096), <|im_end|> (4097).
"$PY" "$HERE/chat_data.py" --data-dir "$DATA" --out "$WORK/chat.json"
node "$HERE/decoder_tokenizer.mjs" add-special "$NODEDIR" "$ROOT/models/decoder/tokenizer.json" \
    "$WORK/tokenizer.json" '<|im_start|>' '<|im_end|>'

# 4. Fine-tune.
"$PY" "$HERE/chat_train.py" --init "$INIT" --chat "$WORK/chat.json" \
    --tokenizer "$WORK/tokenizer.json" --node-dir "$NODEDIR" --out "$WORK/chat.pt" \
    --steps "$STEPS" --threads "$THREADS"

# 5. Export fp32 + int8 and the Hugging Face files.
"$PY" "$HERE/chat_export.py" --ckpt "$WORK/chat.pt" --tokenizer "$WORK/tokenizer.json" \
    --out "$OUT" --threads "$THREADS"

# 6. onnxruntime-node's native binding, a check tool only.
ORTARG=""
if [ $ORT = 1 ]; then
    BIND=$("$HERE/ort_binding.sh" "$DATA")
    [ -n "$BIND" ] && ORTARG="--ort-binding $BIND"
fi

# 7. Checks, verdict accuracy, reference outputs, model card.
NOW=$(date +%s)
# shellcheck disable=SC2086
"$PY" "$HERE/chat_check.py" --model-dir "$OUT" --ckpt "$WORK/chat.pt" --chat "$WORK/chat.json" \
    --node-dir "$NODEDIR" --jinja-dir "$JINJADIR" --threads "$THREADS" \
    --total-seconds $((NOW - START)) $ORTARG
echo "train_chat: done in $(( $(date +%s) - START )) s -> $OUT"
