#!/usr/bin/env bash
# bench/cold_start/run.sh [MODEL...] — time from process start to first
# answer with an empty vs a warm compiled-artifact cache, for the default
# variant of each model and for the whole family (--all-variants: every
# variant loaded, as a server would, then one answer), plus the same start
# with the cache switched off. Until `anytime serve` can be timed the probe is
# `anytime run MODEL TEXT` (process start -> answer printed -> exit).
#
#   bench/cold_start/run.sh                 # models/* if present, else a stand-in
#   RUNS=9 bench/cold_start/run.sh models/sentiment-large
#
# Environment: ANYTIME_BIN (default build/anytime), RUNS (default 7).
# Prints a Markdown table: median and [min, max] in milliseconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${ANYTIME_BIN:-$root/build/anytime}
R=${RUNS:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ANYTIME_CACHE_DIR=$work/cache ANYTIME_LOG_LEVEL=error

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for d in "$root"/models/*/; do [ -n "$(ls "$d"/*.onnx "$d"/onnx/*.onnx 2>/dev/null)" ] && models+=("${d%/}"); done
fi
if [ ${#models[@]} -eq 0 ]; then
  echo "no models under models/: building the stand-in family (bench/cold_start/make_standin.py)" >&2
  /usr/bin/python3 "$root/bench/cold_start/make_standin.py" "$work/standin" >/dev/null 2>&1
  models=("$work/standin")
fi

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# stats "v1 v2 ..." -> "median [min, max]"
stats() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "%d [%d, %d]", a[int((NR+1)/2)], a[1], a[NR]}'; }
probe() { "$B" run "$@" "a quick test sentence" > /dev/null; }

echo "| model | what | no cache | cold (empty cache) | warm | cold/warm |"
echo "|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  for what in default family; do
    extra=(); [ $what = family ] && extra=(--all-variants)
    probe "$m" "${extra[@]}" --no-cache   # page cache warm, as on a restart
    nc=(); cold=(); warm=()
    for _ in $(seq "$R"); do
      t=$(date +%s%N); probe "$m" "${extra[@]}" --no-cache; nc+=("$(ms "$t")")
      "$B" cache clear > /dev/null
      t=$(date +%s%N); probe "$m" "${extra[@]}"; cold+=("$(ms "$t")")
      t=$(date +%s%N); probe "$m" "${extra[@]}"; warm+=("$(ms "$t")")
    done
    cm=$(echo "${cold[*]}" | stats); wm=$(echo "${warm[*]}" | stats)
    ratio=$(awk -v c="${cm%% *}" -v w="${wm%% *}" 'BEGIN {printf "%.2fx", c / w}')
    name=$(basename "$m")
    echo "| $name | $what | $(echo "${nc[*]}" | stats) | $cm | $wm | $ratio |"
  done
done
