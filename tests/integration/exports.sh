#!/usr/bin/env bash
# tests/integration/exports.sh — the public/internal line as a check
# (docs/architecture.md, "Public and internal"): libanytime.so, built with
# hidden visibility, exports exactly the functions include/anytime/ marks
# AT_API — nothing of src/'s internals (sim_init, jv_new, at_read_file, ...)
# and every public function (one left unmarked would be hidden from
# programs that link the shared library). Also: every top-level function
# declaration in include/anytime/ is marked, so the list cannot be partial.
# Argument: the shared library.
set -euo pipefail
lib=${1:?usage: exports.sh LIBANYTIME_SO}
inc=${ANYTIME_SOURCE_DIR:?run through ctest}/include/anytime
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ -f "$lib" ] || fail "$lib not built"
# defined, global, in the dynamic table (the linker's own _init/_fini aside)
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ { print $3 }' |
  grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u > "$tmp/exported"
grep -ohE '^AT_API[^(]*\bat_[a-z0-9_]+\(' "$inc"/*.h | grep -oE 'at_[a-z0-9_]+\($' | tr -d '(' |
  sort -u > "$tmp/declared"
n=$(wc -l < "$tmp/declared")
[ "$n" -ge 200 ] || fail "found only $n AT_API declarations in $inc: the scan stopped matching"
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
[ -z "$extra" ] || fail "libanytime.so exports symbols include/anytime does not declare AT_API: $(echo $extra | head -c 600)"
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
[ -z "$missing" ] || fail "declared AT_API but not exported (not defined in the library?): $(echo $missing | head -c 600)"
unmarked=$(grep -nE '^[a-z_][a-z_0-9 *]*\bat_[a-z0-9_]+\(' "$inc"/*.h | grep -vE '^[^:]+:[0-9]+:(AT_API|typedef|static)' || true)
[ -z "$unmarked" ] || fail "public declarations without AT_API: $unmarked"
echo "libanytime.so exports the $n functions include/anytime declares, and nothing else"
