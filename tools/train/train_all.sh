#!/bin/sh
# The one command that builds the project's model family from nothing:
# fetch the corpus (Debian python3-pattern), split it (tools/train/splits.json),
# learn the WordPiece vocabulary, train the sentiment classifiers (several
# seeds, picked on validation), export ONNX, quantise to int8, evaluate both
# graphs on the test split, and write models/{sentiment-large,sentiment-small,
# embedding}/ with model cards, reference outputs and training_results.json.
#
#   tools/train/train_all.sh [--out DIR] [--threads N]
#
# Needs Debian's python3-torch, python3-onnx, python3-numpy and
# libopenblas0-pthread; uses /usr/bin/python3.  About 20 minutes on 2 shared
# cores.  Scratch data lives in ${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/fetch_data.sh"
exec /usr/bin/python3 "$HERE/pipeline.py" "$@"
