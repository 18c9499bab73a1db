#!/usr/bin/env bash
# tests/integration/ort_version_lock.sh — the ONNX Runtime version lock, end
# to end, against the real `anytime` binary and a real library of another
# release (cmake/ort-version.txt, ORT_ALT_*; fetched by scripts/fetch-ort.sh --alt):
#   1. `anytime version` reports the pinned library release and the header's
#      API version (the pinned headers may be older than the library);
#   2. pointed at the other release, it refuses with exit 3, naming both versions;
#   3. ANYTIME_ALLOW_ORT_MISMATCH=1 lets it run, with a loud warning;
#   4. configuring a build whose header is newer than its library fails at
#      configure time with a message naming both.
# Fails (never skips) when any part cannot run.
set -euo pipefail
: "${ANYTIME_BIN:?run through ctest}" "${ANYTIME_SOURCE_DIR:?run through ctest}"
src=$ANYTIME_SOURCE_DIR
pinned=$(sed -n 's/^ORT_VERSION=//p' "$src/cmake/ort-version.txt")
alt=$(sed -n 's/^ORT_ALT_VERSION=//p' "$src/cmake/ort-version.txt")
fail() { echo "FAIL: $*" >&2; exit 1; }
pinroot=$(bash "$src/scripts/fetch-ort.sh" --print-root)
api=$(sed -n 's/^#define ORT_API_VERSION \([0-9]*\).*/\1/p' "$pinroot/include/onnxruntime_c_api.h")
[ -n "$api" ] || fail "cannot read ORT_API_VERSION from the pinned SDK in $pinroot"

out=$("$ANYTIME_BIN" version)
echo "$out"
grep -q "header API version: $api" <<<"$out" || fail "header API version $api not reported"
grep -q "library: *$pinned" <<<"$out" || fail "library release $pinned not reported"
grep -q "CPUExecutionProvider" <<<"$out" || fail "no execution providers listed"

altroot=$(bash "$src/scripts/fetch-ort.sh" --alt --print-root)
altlib="$altroot/lib/libonnxruntime.so.1"
[ -f "$altlib" ] || fail "alternative library $altlib missing"

set +e
msg=$(ANYTIME_ORT_LIB="$altlib" "$ANYTIME_BIN" version 2>&1); rc=$?
set -e
echo "$msg"
[ $rc -eq 3 ] || fail "expected exit 3 with a $alt library, got $rc"
grep -q "$alt" <<<"$msg" || fail "refusal does not name the library release $alt"
grep -q "$pinned" <<<"$msg" || fail "refusal does not name the compiled release $pinned"
# every command that loads the runtime refuses, not just `version`
set +e
ANYTIME_ORT_LIB="$altlib" "$ANYTIME_BIN" info "$ANYTIME_TEST_DATA/models/fixed_scale.onnx" >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 3 ] || fail "anytime info ran against a $alt library (exit $rc)"

msg=$(ANYTIME_ALLOW_ORT_MISMATCH=1 ANYTIME_ORT_LIB="$altlib" "$ANYTIME_BIN" version 2>&1)
grep -q "MISMATCH ALLOWED" <<<"$msg" || fail "override did not mark the mismatch"
grep -q "warn: .*ANYTIME_ALLOW_ORT_MISMATCH" <<<"$msg" || fail "override was not loud"

# Configure-time check: a header newer than the library must not configure.
# The pinned headers with their API version raised past the pinned library's
# minor number stand in for a newer release's headers (none is reachable).
newer=$(( $(echo "$pinned" | cut -d. -f2) + 1 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sdk/lib" "$tmp/sdk/include"
cp "$pinroot"/include/*.h "$tmp/sdk/include/"
sed -i "s/^#define ORT_API_VERSION [0-9]*/#define ORT_API_VERSION $newer/" \
    "$tmp/sdk/include/onnxruntime_c_api.h"
ln -s "$pinroot/lib/libonnxruntime.so.1" "$tmp/sdk/lib/libonnxruntime.so"
set +e
cfg=$(cmake -S "$src" -B "$tmp/build" -DORT_ROOT="$tmp/sdk" -DAT_BUILD_TESTS=OFF \
      -DAT_BUILD_BENCH=OFF 2>&1); rc=$?
set -e
cfg=$(echo "$cfg" | tr '\n' ' ' | tr -s ' ')  # CMake wraps its messages
echo "$cfg" | grep -o "header/library mismatch.*one release" || true
[ $rc -ne 0 ] || fail "configure succeeded with a mismatched SDK"
grep -q "ORT_API_VERSION $newer" <<<"$cfg" || fail "configure error does not name the header API $newer"
grep -q "release $pinned" <<<"$cfg" || fail "configure error does not name the library release $pinned"
echo "PASS: ORT version lock holds at configure time and at run time"
