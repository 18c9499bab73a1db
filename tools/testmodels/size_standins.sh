#!/usr/bin/env bash
# tools/testmodels/size_standins.sh [SIZE...] — make (once) and locate the
# realistic-size stand-ins of tools/testmodels/make_size_standins.py
# (minilm, bertbase; tiny for tests). Prints one model directory per line:
# SIZE-cls and SIZE-emb for each SIZE (default: minilm bertbase).
#
# They live in a cache, never in the tree (BERT-base is ~440 MB fp32):
#   ${ANYTIME_STANDIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anytime/standins}/KEY/
# KEY is a hash of the maker and of the code and vocabulary it uses, so a
# change to any of them builds fresh ones; a SIZE whose two directories are
# already complete under KEY is not built again. Progress goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(minilm bertbase)
key=$(cat "$root/tools/testmodels/make_size_standins.py" "$root/tools/train/model.py" \
          "$root/tools/train/export.py" "$root/tools/train/quantize.py" \
          "$root/tools/train/wordpiece.py" "$root/models/sentiment-large/vocab.txt" |
      sha256sum | cut -c1-16)
base=${ANYTIME_STANDIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anytime/standins}
dir=$base/$key
mkdir -p "$dir"
for s in "${sizes[@]}"; do
  # make_size_standins.py renames a directory into place only when complete
  if [ -f "$dir/$s-cls/onnx/model_quantized.onnx" ] && [ -f "$dir/$s-emb/onnx/model_quantized.onnx" ]; then
    echo "size_standins: $s already in $dir" >&2
  else
    echo "size_standins: building $s into $dir" >&2
    "$py" "$root/tools/testmodels/make_size_standins.py" "$dir" "$s" >&2
  fi
  echo "$dir/$s-cls"
  echo "$dir/$s-emb"
done
