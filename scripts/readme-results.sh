#!/usr/bin/env bash
# Copy the load-sweep summary (results/load_sweep.md, written by `anytime
# sweep`) into README.md between the <!-- sweep-table --> markers, so the
# README's results table always comes from the committed sweep output.
# The summary holds the capacity and oracle lines, one table per kind of
# client (open-loop Poisson; closed-loop clients that resend a 429 at once),
# with a goodput / oracle column, and the adaptive / accurate-only ratios.
# Usage: scripts/readme-results.sh [SUMMARY.md [README.md]]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$here/results/load_sweep.md}
readme=${2:-$here/README.md}
die() { echo "readme-results: $*" >&2; exit 1; }
[ -f "$src" ] || die "$src not found (run anytime sweep)"
[ -f "$readme" ] || die "$readme not found"
# the markers must be there, once each, in order: otherwise nothing would be
# replaced and the README would silently keep old numbers
open=$(grep -c '^<!-- sweep-table -->$' "$readme" || true)
close=$(grep -c '^<!-- /sweep-table -->$' "$readme" || true)
[ "$open" -eq 1 ] && [ "$close" -eq 1 ] || die "$readme needs one <!-- sweep-table --> and one <!-- /sweep-table --> line (found $open and $close)"
[ "$(grep -n '^<!-- sweep-table -->$' "$readme" | cut -d: -f1)" -lt \
  "$(grep -n '^<!-- /sweep-table -->$' "$readme" | cut -d: -f1)" ] || die "the markers in $readme are out of order"
# the summary must hold at least one results table
grep -q '^| ρ | policy | goodput' "$src" || die "$src has no results table (an interrupted sweep?)"
grep -q 'oracle' "$src" || echo "readme-results: note: $src has no oracle column (a sweep from before the oracle)" >&2
tmp=$(mktemp "$readme.XXXXXX")
trap 'rm -f "$tmp"' EXIT
awk -v src="$src" '
  /^<!-- sweep-table -->$/ { print; while ((getline l < src) > 0) print l; skip = 1; next }
  /^<!-- \/sweep-table -->$/ { skip = 0 }
  !skip { print }' "$readme" > "$tmp"
cat "$tmp" > "$readme" # (keeps README.md's own mode, unlike mv)
tables=$(grep -c '^| ρ | policy | goodput' "$src")
rows=$(grep -c '^| [0-9]' "$src")
echo "readme-results: $readme now shows $src ($tables table(s), $rows rows)"
