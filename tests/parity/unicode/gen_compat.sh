#!/bin/sh
# Regenerates src/text/tk_compat.h from the real HF tokenizers library (needs
# tests/node/node_modules: `npm ci --prefix tests/node`). Runs both probes
# over all 1,112,064 Unicode scalar values (about a minute).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the anytime probe must run WITHOUT the compatibility table it is deriving
cc -O2 -DTK_NO_COMPAT -I"$root/include" -I"$root/src" \
   "$here/probe_anytime.c" "$root"/src/text/*.c "$root/src/core/status.c" "$root/src/core/log.c" \
   "$root/src/core/tensor.c" -o "$tmp/probe" $(pkg-config --cflags --libs jansson libutf8proc libpcre2-8) -lm
node "$here/probe_hf.js" > "$tmp/hf.jsonl"
"$tmp/probe" > "$tmp/at.jsonl"
node "$here/gen_compat.js" "$tmp/hf.jsonl" "$tmp/at.jsonl" "$root/src/text/tk_compat.h"
