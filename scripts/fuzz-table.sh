#!/usr/bin/env bash
# Print the long-fuzz table that docs/security.md ("Fuzzing") quotes, from
# results/fuzz_long.tsv (written by scripts/fuzz.sh --long and
# scripts/fuzz-bundle.sh import): per driver, the run with the most
# executions; drivers that reached FUZZ_RUNS first, in the order they first
# did, then the others by executions. The last line counts them.
#
#   scripts/fuzz-table.sh            # the table and the count, to stdout
#   scripts/fuzz-table.sh --write    # also replace the table in docs/security.md
#                                    # (the lines starting with '|' after the
#                                    # <!-- fuzz-long-table --> marker)
#
# The count line is printed, not written: the prose around the table says
# which runs are new, and is edited by hand.
set -euo pipefail
case "${1:-}" in ""|--write) ;; *) echo "usage: $0 [--write]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
tsv="$here/results/fuzz_long.tsv"
doc="$here/docs/security.md"
[ -s "$tsv" ] || { echo "fuzz-table: $tsv is missing or empty (run scripts/fuzz.sh --long first)" >&2; exit 1; }
. "$here/scripts/fuzz-lib.sh"
drivers=$(fuzz_drivers "$here")

table=$(awk -F'\t' -v drivers="$drivers" '
  NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    need = "driver executions seconds exec_per_s seeds_before seeds_after crashes reached processes"
    n = split(need, w, " ")
    for (i = 1; i <= n; i++) if (!(w[i] in col)) { print "fuzz-table: no column " w[i] > "/dev/stderr"; exit 2 }
    next
  }
  {
    d = $col["driver"]; e = $col["executions"] + 0
    if (!(d in best) || e > best[d]) { best[d] = e; row[d] = $0 }
    if ($col["reached"] == "yes" && !(d in first)) first[d] = ++order
  }
  END {
    print "| driver | executions | processes | seconds | executions/s | seeds before → after | crashes | 10 M reached |"
    print "|---|---|---|---|---|---|---|---|"
    # reached, in the order first reached; then the rest by executions
    k = 0
    for (d in first) { k++; key[k] = sprintf("0 %08.0f %s", first[d], d) }
    for (d in best) if (!(d in first)) { k++; key[k] = sprintf("1 %015.0f %s", 999999999999 - best[d], d) }
    for (i = 2; i <= k; i++) { v = key[i]; j = i - 1; while (j > 0 && key[j] > v) { key[j + 1] = key[j]; j-- } key[j + 1] = v }
    reached = 0
    for (i = 1; i <= k; i++) {
      split(key[i], p, " "); d = p[3]; split(row[d], f, "\t")
      if (p[1] == "0") reached++
      printf "| `%s` | %s | %s | %s | %s | %s → %s | %s | %s |\n", d, f[col["executions"]], f[col["processes"]],
        f[col["seconds"]], f[col["exec_per_s"]], f[col["seeds_before"]], f[col["seeds_after"]], f[col["crashes"]],
        f[col["reached"]]
    }
    total = split(drivers, all, /[ \n]+/)
    missing = ""
    for (i = 1; i <= total; i++) if (all[i] != "" && !(all[i] in best)) missing = missing " " all[i]
    printf "COUNT %d of %d drivers reached 10 million executions%s\n", reached, total,
      missing == "" ? "" : "; never run long:" missing
  }' "$tsv")

rows=$(grep -v '^COUNT ' <<<"$table")
count=$(sed -n 's/^COUNT //p' <<<"$table")
echo "$rows"
if [ "${1:-}" = --write ]; then
  grep -q '^<!-- fuzz-long-table -->$' "$doc" || { echo "fuzz-table: no <!-- fuzz-long-table --> marker in $doc" >&2; exit 1; }
  tmp=$(mktemp)
  # after the marker, the first run of lines starting with '|' is the table
  awk -v table="$rows" '
    /^<!-- fuzz-long-table -->$/ { marker = 1 }
    marker && !done && /^\|/ { if (!intable) { print table; intable = 1 } next }
    intable && !/^\|/ { done = 1; intable = 0 }
    { print }' "$doc" > "$tmp"
  cat "$tmp" > "$doc" && rm -f "$tmp"
  echo "fuzz-table: table in ${doc#$here/} rewritten" >&2
fi
echo "$count" >&2
