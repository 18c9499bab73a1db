#!/usr/bin/env bash
# tests/integration/layering.sh — the module structure of src/ as a check
# (docs/architecture.md):
#   1. no include cycle between the modules of src/ (core, ort, model, text,
#      engine, plan, decode, serve, cli). An edge A -> B is a file in src/A
#      including "B/..." or a public header "anytime/X.h" whose functions are
#      defined in src/B (found from the definitions, not from a list, so a
#      header that moves cannot go stale). tsort finds the cycles.
#   2. the layers cli -> tools -> library: CLI files (src/cli) include only
#      public headers (anytime/...), the tools library's (tools/...) and their
#      own (cli/...); tools files (src/tools) only public headers and their
#      own; no library file includes either; no build target but the
#      CLI's compiles a file of src/cli; and no file of src/cli is over 300
#      lines.
#   3. no function in src/ is longer than 150 lines (issue 15), counted from
#      the line its signature starts to its closing brace, by a scan that
#      relies on the project's formatting (the body's brace ends the
#      signature; the closing brace stands alone at column 0) and must find
#      at least 500 functions, so a scan that stops matching fails.
#   4. the independent bare loop (bench/bare_ort/) shares no code with
#      anytime: its C files include only system headers and ONNX Runtime's
#      C API header, and its build links no anytime library.
# Seen to fail: before 2026-12-01 src/ort/session.c called the artifact
# cache in src/model, which called back into src/ort ("model ort" loop), and
# four CLI files included core/internal.h.
set -euo pipefail
src=${ANYTIME_SOURCE_DIR:?run through ctest}/src
inc=$ANYTIME_SOURCE_DIR/include/anytime
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# owner of each public header: the module (not cli) defining most of the
# functions it declares; a header that declares none (the umbrella) has none
for h in "$inc"/*.h; do
  name=$(basename "$h" .h)
  owner=$({ grep -o '\bat_[a-z0-9_]*(' "$h" || true; } | tr -d '(' | sort -u | while read -r fn; do
            grep -l "^[a-z].*[ *]$fn(.*[^;]$" "$src"/*/*.c 2>/dev/null || true
          done | { grep -v "^$src/cli/" || true; } | awk -F/ '{ print $(NF - 1) }' | sort | uniq -c | sort -rn |
          awk 'NR == 1 { print $2 }')
  echo "$name ${owner:--}" >> "$tmp/owners"
done
grep -q '^session ' "$tmp/owners" && grep -q '^plan plan$' "$tmp/owners" ||
  fail "could not find the owners of the public headers: $(cat "$tmp/owners")"

: > "$tmp/edges"
for f in "$src"/*/*.c "$src"/*/*.h; do
  m=$(basename "$(dirname "$f")")
  { grep -o '^#include "[a-z_]*/[a-z_0-9]*\.h"' "$f" || true; } | sed 's/^#include "//; s/"$//' | while read -r i; do
    d=${i%%/*}
    if [ "$d" = anytime ]; then
      t=$(awk -v h="$(basename "$i" .h)" '$1 == h { print $2 }' "$tmp/owners")
    else
      t=$d
    fi
    if [ -n "$t" ] && [ "$t" != - ] && [ "$t" != "$m" ]; then echo "$m $t $f -> $i" >> "$tmp/edges"; fi
  done
done
cut -d' ' -f1,2 "$tmp/edges" | sort -u > "$tmp/graph"
if ! tsort "$tmp/graph" > /dev/null 2> "$tmp/tsort"; then
  loop=$(grep -v "input contains a loop" "$tmp/tsort" | sed 's/^tsort: //' | tr '\n' ' ')
  echo "module graph: $(tr '\n' ';' < "$tmp/graph")" >&2
  for m in $loop; do grep "^$m " "$tmp/edges" | grep -E " ($(echo $loop | tr ' ' '|')) " >&2 || true; done
  fail "include cycle between modules: $loop"
fi

bad=$(grep -Hn '^#include "' "$src"/cli/*.c "$src"/cli/*.h | grep -vE '#include "(anytime|cli|tools)/' || true)
[ -z "$bad" ] || fail "CLI files include private headers:
$bad"
bad=$(grep -Hn '^#include "' "$src"/tools/*.c "$src"/tools/*.h | grep -vE '#include "(anytime|tools)/' || true)
[ -z "$bad" ] || fail "tools files include private headers (the tools library is a client of the public API):
$bad"
bad=$(grep -Hn '^#include "\(cli\|tools\)/' "$src"/*/*.c "$src"/*/*.h | grep -vE "^$src/(cli|tools)/" || true)
[ -z "$bad" ] || fail "library files include the CLI's or the tools library's headers (cli -> tools -> library):
$bad"
# nothing but the CLI's own target compiles a file of src/cli: tests,
# fuzzers and benches link the tools library instead
bad=$(cd "$ANYTIME_SOURCE_DIR" && grep -rn 'src/cli/' --include=CMakeLists.txt --include='*.cmake' . |
      grep -v '^./build' | grep -v 'GLOB AT_CLI_SOURCES' || true)
[ -z "$bad" ] || fail "a target other than the CLI compiles src/cli files:
$bad"
# a command parses, calls and prints: the work is in the tools library
bad=$(wc -l "$src"/cli/*.c "$src"/cli/*.h | awk '$2 != "total" && $1 > 300 {print $2 ": " $1 " lines"}')
[ -z "$bad" ] || fail "CLI files over 300 lines (move the work into src/tools):
$bad"
awk '
  FNR == 1 { cand = 0; infn = 0 }
  !infn && /^[A-Za-z_]/ && !/^(typedef|struct|enum|union)[ \t]/ && !/=/ && !/;[ \t]*$/ { cand = FNR; head = $0 }
  !infn && /;[ \t]*$/ { cand = 0 }
  !infn && cand && /\)[^;]*\{[ \t]*$/ { infn = 1; start = cand }
  infn && /^\}/ { sub(/\(.*/, "", head); n = split(head, w, /[ \t*]+/)
                  printf "%d %s:%d %s\n", FNR - start + 1, FILENAME, start, w[n]; infn = 0; cand = 0 }
' "$src"/*/*.c | sort -rn > "$tmp/lengths"
nfn=$(wc -l < "$tmp/lengths")
[ "$nfn" -ge 500 ] || fail "the function-length scan found only $nfn functions in src/: has the formatting changed?"
long=$(awk '$1 > 150' "$tmp/lengths")
[ -z "$long" ] || fail "functions over 150 lines (lines, where, name):
$long"
bare=$ANYTIME_SOURCE_DIR/bench/bare_ort
ls "$bare"/*.c >/dev/null 2>&1 || fail "bench/bare_ort has no C file"
bad=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$bare"/*.c || true)
[ -z "$bad" ] || fail "bench/bare_ort includes a project header; it must share no code with anytime:
$bad"
bad=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(anytime\|core\|serve\|engine\|bench\)/' "$bare"/*.c || true)
[ -z "$bad" ] || fail "bench/bare_ort includes an anytime header:
$bad"
grep -q 'target_link_libraries(bare_ort' "$ANYTIME_SOURCE_DIR/bench/bare_ort.cmake" ||
  fail "bench/bare_ort.cmake no longer builds bare_ort: update this check"
! grep -E 'target_link_libraries\([^)]*anytime' "$ANYTIME_SOURCE_DIR/bench/bare_ort.cmake" >/dev/null ||
  fail "bench/bare_ort.cmake links an anytime library into the independent bare loop"
echo "module graph: $(tr "\n" ";" < "$tmp/graph")"
echo "longest functions: $(head -n 3 "$tmp/lengths" | sed "s|$src/||" | tr '\n' ';')"
echo "PASS: $(wc -l < "$tmp/graph") module edges, no cycle; cli -> tools -> library, public headers only; $nfn functions, none over 150 lines; bench/bare_ort shares no code"
