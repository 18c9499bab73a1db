#!/usr/bin/env bash
# bench/cold_start/warm_cpu.sh MODEL BIN... — warm starts only (`anytime run
# MODEL TEXT` with the artifact already cached), for several anytime
# binaries interleaved round by round, each with its own cache directory
# (filled once, untimed). Prints one line per start with wall, user and
# system seconds and the peak RSS (/usr/bin/time), and the load averages
# before each round: on a shared host the CPU seconds are steadier than wall
# time. Summarise with the medians and ranges per binary.
#
#   RUNS=5 bench/cold_start/warm_cpu.sh "$D" /tmp/before/anytime build/anytime
#
# Environment: RUNS (default 5).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MODEL BIN..." >&2; exit 2; }
m=$1; shift
R=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ANYTIME_LOG_LEVEL=error
i=0
for b in "$@"; do
  ANYTIME_CACHE_DIR=$work/c$i "$b" run "$m" "a quick test sentence" > /dev/null
  i=$((i + 1))
done
for r in $(seq "$R"); do
  echo "# round $r load $(uptime | sed 's/.*load average: //')"
  i=0
  for b in "$@"; do
    ANYTIME_CACHE_DIR=$work/c$i /usr/bin/time \
      -f "$b wall_s %e user_s %U sys_s %S maxrss_kb %M" \
      "$b" run "$m" "a quick test sentence" 2>&1 > /dev/null | tail -1
    i=$((i + 1))
  done
done
echo "# end load $(uptime | sed 's/.*load average: //')"
