#!/usr/bin/env bash
# tests/parity/unicode/check_compat.sh — ctest `text_unicode_compat`: the
# generated src/text/tk_compat.h still fits the utf8proc installed here and
# the pinned Hugging Face tokenizers (tests/node/package.json), over every
# Unicode scalar value (1,112,064 of them). Two checks:
#   1. regenerated == committed: the probe built WITHOUT the table
#      (-DTK_NO_COMPAT, against the installed libutf8proc) and npm tokenizers
#      give, through gen_compat.js, byte for byte the committed header — so a
#      different utf8proc (its Unicode tables: scripts/deps.txt pins
#      libutf8proc-dev) or tokenizers cannot silently invalidate it;
#   2. full comparison: the probe built WITH the table, as the library is,
#      differs from HF on no property of any code point (diff.js prints
#      nothing).
# (pkg-config calls this utf8proc 2.6.0: its .pc file lags; the version
# printed is the library's own utf8proc_version().)
# About 70-90 s on this host (HF's probe is most of it). Fails, never skips,
# when Node, the npm packages, a compiler or a library is missing.
#
# Seen to fail (2026-12-01): with {0x890, 0x891} removed from k_flip_ctrl in
# src/text/tk_compat.h (as a utf8proc that knew those two code points'
# category would have made it):
#   FAIL: src/text/tk_compat.h is not what utf8proc 2.8.0 (Unicode 15.0.0)
#   and tokenizers 0.23.2 give (diff above); ...
#   FAIL: with the committed table anytime differs from HF tokenizers: clean 2 [["890","K","X"],["891","K","X"]]
set -euo pipefail
root=${ANYTIME_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
here=$root/tests/parity/unicode
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$root/tests/node/ensure_modules.sh"
ensure_node_modules fail
command -v cc >/dev/null || fail "no C compiler (cc)"
flags="$(pkg-config --cflags --libs jansson libutf8proc libpcre2-8) -lm" || fail "pkg-config cannot find jansson, libutf8proc or libpcre2-8"
hfv=$(node -p "require('$root/tests/node/node_modules/tokenizers/package.json').version")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anytime-unicode.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '#include <stdio.h>\n#include <utf8proc.h>\nint main(void) { printf("%%s (Unicode %%s)", utf8proc_version(), utf8proc_unicode_version()); return 0; }\n' >"$tmp/v.c"
# shellcheck disable=SC2086
cc "$tmp/v.c" -o "$tmp/v" $flags && u8=$("$tmp/v") || fail "cannot ask libutf8proc its version"

src=("$here/probe_anytime.c" "$root"/src/text/*.c "$root/src/core/status.c" "$root/src/core/log.c"
     "$root/src/core/tensor.c" "$root/src/core/file.c")
# shellcheck disable=SC2086
cc -O2 -DTK_NO_COMPAT -I"$root/include" -I"$root/src" "${src[@]}" -o "$tmp/probe_raw" $flags || fail "building the probe without the table"
# shellcheck disable=SC2086
cc -O2 -I"$root/include" -I"$root/src" "${src[@]}" -o "$tmp/probe" $flags || fail "building the probe with the table"
node "$here/probe_hf.js" >"$tmp/hf.jsonl" || fail "the HF probe failed"
"$tmp/probe_raw" >"$tmp/raw.jsonl" || fail "the anytime probe (no table) failed"
"$tmp/probe" >"$tmp/at.jsonl" || fail "the anytime probe failed"
n=$(wc -l <"$tmp/hf.jsonl")
[ "$n" -eq 1112064 ] || fail "the HF probe covered $n code points, not 1112064"
[ "$(wc -l <"$tmp/at.jsonl")" -eq "$n" ] || fail "the anytime probe covered $(wc -l <"$tmp/at.jsonl") code points"

node "$here/gen_compat.js" "$tmp/hf.jsonl" "$tmp/raw.jsonl" "$tmp/tk_compat.h" >/dev/null || fail "gen_compat.js failed"
st=0
if ! cmp -s "$tmp/tk_compat.h" "$root/src/text/tk_compat.h"; then
  diff -u "$root/src/text/tk_compat.h" "$tmp/tk_compat.h" | head -n 40 >&2 || true
  echo "FAIL: src/text/tk_compat.h is not what utf8proc $u8 and tokenizers $hfv give (diff above);" \
       "if that utf8proc is meant, regenerate it with tests/parity/unicode/gen_compat.sh" >&2
  st=1
fi
d=$(node "$here/diff.js" "$tmp/hf.jsonl" "$tmp/at.jsonl")
if [ -n "$d" ]; then
  echo "FAIL: with the committed table anytime differs from HF tokenizers: $d" | head -c 4000 >&2
  echo >&2
  st=1
fi
[ $st -eq 0 ] || exit 1
echo "PASS: tk_compat.h fits utf8proc $u8 and tokenizers $hfv; no property of any of $n code points differs"
