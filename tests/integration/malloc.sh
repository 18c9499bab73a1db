#!/usr/bin/env bash
# tests/integration/malloc.sh — the malloc the `anytime` executable runs on
# (src/cli/allocator.c), against the binary itself:
#   1. `anytime version` (text and --json) names mimalloc exactly when the
#      build links it (the first argument, from CMake) and libmimalloc is
#      among the executable's DT_NEEDED libraries (readelf), glibc's
#      otherwise; `anytime --help` documents the matching environment;
#   2. with mimalloc, ONNX Runtime's allocations go through it: by
#      mimalloc's own statistics (MIMALLOC_SHOW_STATS=1, eager commit off so
#      that "committed" is what was used), `anytime run --no-cache` on
#      sentiment-large's fp32 graph peaks at least the graph's size above
#      `anytime tokenize` with the same tokenizer and text (everything but
#      the session): ORT copies the graph's initializers into malloc'd
#      tensors. With glibc, no statistics are printed.
# Usage: malloc.sh ON|OFF (whether the build links mimalloc).
set -euo pipefail
: "${ANYTIME_BIN:?run through ctest}" "${ANYTIME_SOURCE_DIR:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
linked=${1:?usage: malloc.sh ON|OFF}
needed=$(readelf -d "$ANYTIME_BIN" | grep -c 'NEEDED.*libmimalloc' || true)
ver=$("$ANYTIME_BIN" version)
json=$("$ANYTIME_BIN" version --json)
help=$("$ANYTIME_BIN" --help)
alloc=$(jq -r .allocator <<<"$json")
echo "build links mimalloc: $linked; DT_NEEDED libmimalloc: $needed; version says: $alloc"
grep -q "^malloc: *$alloc\$" <<<"$ver" || fail "text and --json disagree: $(grep malloc <<<"$ver")"

model=$ANYTIME_SOURCE_DIR/models/sentiment-large
graph=$model/onnx/model.onnx
[ -f "$graph" ] || fail "$graph missing"
stats() { MIMALLOC_SHOW_STATS=1 MIMALLOC_EAGER_COMMIT=0 "$ANYTIME_BIN" "$@" 2>&1; }
out=$(stats run "$model" --variant model --no-cache "a fine film") || fail "anytime run failed: $out"
base=$(stats tokenize --tokenizer "$model" "a fine film") || fail "anytime tokenize failed: $base"
# "committed:   41.0 MiB ...": the peak, as mimalloc prints it (B, KiB, MiB or GiB), in MiB
peak_mib() { awk '$1 == "committed:" {u = $3; m = (u == "GiB") ? 1024 : (u == "MiB") ? 1 : (u == "KiB") ? 1 / 1024 : 1 / 1048576; printf "%d", $2 * m}'; }
if [ "$linked" = ON ]; then
  [ "$needed" -ge 1 ] || fail "built with mimalloc but libmimalloc is not among the DT_NEEDED libraries"
  [[ $alloc == "mimalloc "[0-9]* ]] || fail "built with mimalloc but version says '$alloc'"
  grep -q "MIMALLOC_" <<<"$help" || fail "--help does not name mimalloc's environment"
  peak=$(peak_mib <<<"$out"); peak0=$(peak_mib <<<"$base")
  [ -n "$peak" ] && [ -n "$peak0" ] || fail "no mimalloc statistics: run: $out; tokenize: $base"
  size=$(( $(stat -c %s "$graph") >> 20 ))
  echo "mimalloc's peak commit: run ${peak} MiB, tokenize ${peak0} MiB; the graph ${size} MiB"
  [ $((peak - peak0)) -ge "$size" ] ||
    fail "the session added $((peak - peak0)) MiB to mimalloc's peak, less than the ${size} MiB graph: ORT's allocations bypass it"
else
  [ "$needed" -eq 0 ] || fail "built without mimalloc but libmimalloc is linked"
  [ "$alloc" = "glibc malloc" ] || fail "built without mimalloc but version says '$alloc'"
  grep -q "GLIBC_TUNABLES" <<<"$help" || fail "--help does not name glibc's tunables"
  ! grep -q "^heap stats:" <<<"$out$base" || fail "mimalloc statistics printed by a glibc build"
fi
echo "PASS"
