#!/bin/sh
# Verify models/*/tokenizer.json against the real Hugging Face tokenizers
# library (Rust, npm tokenizers@0.23.2) over the whole corpus (4000 sentences,
# 1500 reviews) plus edge cases: the library's ids must equal the ids our
# Python tokenizer gave the model in training.
# usage: tools/train/check_tokenizer.sh [MODEL_DIR ...]   (default: all of models/)
# Needs node >= 18 and npm; installs the pinned library into the data cache.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
NODEDIR="$DATA/node-tokenizers-0.23.2"
if [ ! -f "$NODEDIR/node_modules/tokenizers/package.json" ]; then
    mkdir -p "$NODEDIR"
    [ -f "$NODEDIR/package.json" ] || echo '{"private":true}' > "$NODEDIR/package.json"
    npm install --prefix "$NODEDIR" --no-audit --no-fund --save-exact tokenizers@0.23.2 >&2
fi
"$HERE/fetch_data.sh" >/dev/null
[ $# -gt 0 ] || set -- "$ROOT"/models/*/
rc=0
for dir in "$@"; do
    if [ ! -f "$dir/vocab.txt" ]; then
        # byte-level BPE models (models/decoder) have no vocab.txt: their
        # tokenizer.json is held against the library by tests/parity instead
        echo "check_tokenizer: skip $dir (no vocab.txt; see tests/parity)" >&2
        continue
    fi
    exp="$DATA/tokcheck-$(basename "$dir").jsonl"
    /usr/bin/python3 "$HERE/tokcheck_expected.py" --data-dir "$DATA" "$dir" "$exp"
    node "$HERE/check_tokenizer.mjs" "$NODEDIR" "$dir/tokenizer.json" "$exp" || rc=1
done
exit $rc
