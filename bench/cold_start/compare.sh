#!/usr/bin/env bash
# bench/cold_start/compare.sh MODEL BIN... — bench/cold_start/run.sh's three
# starts (no cache, cold = empty artifact cache, warm = the start after
# cold) for several anytime binaries, interleaved: each round runs every
# binary once, in turn, so on a shared host a load spike hits all of them
# rather than one. Each binary has its own cache directory. Prints one
# Markdown row per binary (median [min, max] ms over the rounds, cold/warm),
# then the load averages `uptime` read before each round.
#
#   git worktree add /tmp/old OLD && cmake -S /tmp/old -B /tmp/old/b && make -C /tmp/old/b anytime
#   RUNS=5 bench/cold_start/compare.sh "$D" /tmp/old/b/anytime build/anytime
#
# Environment: RUNS (default 5), EXTRA (more `anytime run` options, e.g.
# --all-variants), ONLY_WARM=1 (each binary's cache is filled once, untimed;
# then every round times one warm start per binary and nothing else).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MODEL BIN..." >&2; exit 2; }
m=$1; shift
bins=("$@")
R=${RUNS:-5}
read -r -a extra <<< "${EXTRA:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ANYTIME_LOG_LEVEL=error

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
stats() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "%d [%d, %d]", a[int((NR+1)/2)], a[1], a[NR]}'; }
probe() { "$1" run "$m" "${extra[@]}" "${@:2}" "a quick test sentence" > /dev/null; }

declare -A nc cold warm
"${bins[0]}" run "$m" "${extra[@]}" --no-cache "a quick test sentence" > /dev/null  # page cache
if [ "${ONLY_WARM:-0}" = 1 ]; then
  for i in "${!bins[@]}"; do ANYTIME_CACHE_DIR=$work/c$i probe "${bins[$i]}"; done
fi
loads=()
for _ in $(seq "$R"); do
  loads+=("$(uptime | sed 's/.*load average: //')")
  for i in "${!bins[@]}"; do
    b=${bins[$i]}
    export ANYTIME_CACHE_DIR=$work/c$i
    if [ "${ONLY_WARM:-0}" != 1 ]; then
      t=$(date +%s%N); probe "$b" --no-cache; nc[$i]+=" $(ms "$t")"
      "$b" cache clear > /dev/null
      t=$(date +%s%N); probe "$b"; cold[$i]+=" $(ms "$t")"
    fi
    t=$(date +%s%N); probe "$b"; warm[$i]+=" $(ms "$t")"
  done
done
loads+=("$(uptime | sed 's/.*load average: //')")

echo "| binary | no cache | cold (empty cache) | warm | cold/warm |"
echo "|---|---|---|---|---|"
for i in "${!bins[@]}"; do
  if [ "${ONLY_WARM:-0}" = 1 ]; then
    echo "| ${bins[$i]} | — | — | $(echo ${warm[$i]} | stats) | — |"
    continue
  fi
  cm=$(echo ${cold[$i]} | stats); wm=$(echo ${warm[$i]} | stats)
  ratio=$(awk -v c="${cm%% *}" -v w="${wm%% *}" 'BEGIN {printf "%.2fx", c / w}')
  echo "| ${bins[$i]} | $(echo ${nc[$i]} | stats) | $cm | $wm | $ratio |"
done
echo
echo "load averages (1, 5, 15 min) before each round and after the last:"
printf '  %s\n' "${loads[@]}"
