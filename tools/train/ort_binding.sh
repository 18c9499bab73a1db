#!/bin/sh
# Print the directory holding onnxruntime-node 1.30.0's native binding
# (onnxruntime_binding.node + libonnxruntime.so.1, unpacked into the data
# cache from the tarball scripts/fetch-ort.sh keeps for the pinned library, sha256 from
# cmake/ort-version.txt), or nothing when it cannot be had.  A check tool
# only (decoder_ort.mjs); train_decoder.sh and train_chat.sh use it.
#
# usage: tools/train/ort_binding.sh DATA_DIR
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA=$1
BIND="$DATA/ort-node-1.30.0"
if [ ! -f "$BIND/onnxruntime_binding.node" ]; then
    ORTCACHE=${ANYTIME_ORT_CACHE:-$HOME/.cache/anytime/ort}
    TGZ="$ORTCACHE/dl/onnxruntime-node-1.30.0.tgz"
    [ -f "$TGZ" ] || "$ROOT/scripts/fetch-ort.sh" >&2 || true
    SUM=$(sed -n 's/^ORT_NPM_SHA256=//p' "$ROOT/cmake/ort-version.txt")
    if [ -f "$TGZ" ] && echo "$SUM  $TGZ" | sha256sum -c --status; then
        mkdir -p "$BIND.tmp"
        tar xzf "$TGZ" -C "$BIND.tmp" --strip-components=5 \
            package/bin/napi-v6/linux/x64/onnxruntime_binding.node \
            package/bin/napi-v6/linux/x64/libonnxruntime.so.1
        rm -rf "$BIND"
        mv "$BIND.tmp" "$BIND"
    else
        echo "ort_binding: no onnxruntime-node 1.30.0, checking with numpy only" >&2
    fi
fi
[ -f "$BIND/onnxruntime_binding.node" ] && echo "$BIND"
exit 0
