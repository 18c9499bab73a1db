#!/usr/bin/env bash
# tools/testmodels/decoder_sizes.sh [NAME...] — make (once) and locate the
# realistic-size decoder stand-ins of tools/testmodels/make_decoder_exports.py
# --size (gpt2-124m, qwen2-0.5b: random weights at the real shapes, fp32 and
# int8). Prints one model directory per line (default: both).
#
# They live in a cache, never in the tree (Qwen2-0.5B is ~2.5 GB fp32):
#   ${ANYTIME_STANDIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anytime/standins}/KEY/
# KEY is a hash of the maker and the quantiser, so a change to either builds
# fresh ones; a complete directory is not built again. Progress on stderr;
# qwen2-0.5b takes a few minutes and ~8 GB of memory on a 2-core host.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}
names=("$@"); [ ${#names[@]} -eq 0 ] && names=(gpt2-124m qwen2-0.5b)
key=$(cat "$root/tools/testmodels/make_decoder_exports.py" "$root/tools/train/quantize.py" |
      sha256sum | cut -c1-16)
base=${ANYTIME_STANDIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anytime/standins}
dir=$base/dec-$key
mkdir -p "$dir"
for n in "${names[@]}"; do
  case "$n" in gpt2-124m|qwen2-0.5b) ;; *) echo "decoder_sizes: unknown size '$n' (gpt2-124m, qwen2-0.5b)" >&2; exit 2 ;; esac
  # the maker renames a directory into place only when complete
  if [ -f "$dir/$n/onnx/model_quantized.onnx" ]; then
    echo "decoder_sizes: $n already in $dir" >&2
  else
    echo "decoder_sizes: building $n into $dir" >&2
    "$py" "$root/tools/testmodels/make_decoder_exports.py" --size "$n" "$dir/$n" 2>&1 |
      grep -v -i 'warning\|^  x = ' >&2 || true
    [ -f "$dir/$n/onnx/model_quantized.onnx" ] || { echo "decoder_sizes: building $n failed" >&2; exit 1; }
  fi
  echo "$dir/$n"
done
