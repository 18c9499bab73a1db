#!/usr/bin/env bash
# Copy the load-sweep summary (results/load_sweep.md, written by `anytime
# sweep`) into README.md between the <!-- sweep-table --> markers, so the
# README's results table always comes from the committed sweep output.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$here/results/load_sweep.md}
[ -f "$src" ] || { echo "readme-results: $src not found (run anytime sweep)" >&2; exit 1; }
awk -v src="$src" '
  /<!-- sweep-table -->/ { print; while ((getline l < src) > 0) print l; skip = 1; next }
  /<!-- \/sweep-table -->/ { skip = 0 }
  !skip { print }' "$here/README.md" > "$here/README.md.tmp"
mv "$here/README.md.tmp" "$here/README.md"
echo "readme-results: README.md now shows $src"
