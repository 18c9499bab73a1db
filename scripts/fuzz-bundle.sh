#!/usr/bin/env bash
# Run the long fuzz (issue 17) on a machine with more cores than this one,
# where nothing can be installed: pack the libFuzzer drivers with the shared
# libraries they load and their seeds, run the pack there with several
# processes per driver, and bring what they found back into the seeds and
# results/fuzz_long.tsv.
#
#   scripts/fuzz-bundle.sh pack DIR fuzz_a fuzz_b ...
#       builds the drivers as scripts/fuzz.sh does (-O1, ASan+UBSan) and
#       writes DIR: bin/ (drivers), lib/ (every library they load; glibc
#       and its loader apart in lib/glibc/), corpus/ (committed seeds),
#       lsan.supp, this script and the commit it was built at.
#   DIR/fuzz-bundle.sh run SECONDS OUTDIR fuzz_a=N fuzz_b ...
#       on the other machine (x86-64 Linux, any distribution): checks that
#       the drivers start (with the machine's glibc, else with the packed
#       one), then runs N processes of fuzz_a, ... side by side for SECONDS
#       or FUZZ_RUNS/N executions each (distinct -seed, one shared output
#       corpus per driver, as libFuzzer's -jobs does); a driver named
#       without =N gets processes by a short probe of its speed (below);
#       and writes to OUTDIR:
#       summary.tsv (driver, processes, executions summed over them, wall
#       seconds, crash files), finds.tgz (inputs found), crashes.tgz (if
#       any) and logs.tgz (each process's log tail).
#   scripts/fuzz-bundle.sh import OUTDIR
#       here again: merges finds.tgz into tests/fuzz/corpus/ (libFuzzer
#       -merge=1, only inputs that add coverage) and appends one line per
#       driver to results/fuzz_long.tsv (processes = N), as fuzz.sh --long
#       does (both through scripts/fuzz-lib.sh). Crash inputs are
#       left in OUTDIR and make it fail: reproduce them with the local
#       build, fix, and keep each as tests/fuzz/corpus/<name>/regress-*.
#
# Executions are the sum over the processes of one driver; all of them
# start from the committed seeds and share what they find through the
# output corpus, which each process rereads (libFuzzer's -reload).
set -euo pipefail

cmd=${1:-}
case "$cmd" in
pack)
  [ $# -ge 3 ] || { echo "usage: $0 pack DIR fuzz_driver..." >&2; exit 2; }
  here=$(cd "$(dirname "$0")/.." && pwd)
  dir=$2; shift 2
  bash "$here/scripts/fuzz.sh" --build "$@"
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib/glibc" "$dir/corpus"
  for d in "$@"; do
    cp "$here/build-fuzz/tests/fuzz/$d" "$dir/bin/"
    cp -r "$here/tests/fuzz/corpus/${d#fuzz_}" "$dir/corpus/"
    ldd "$here/build-fuzz/tests/fuzz/$d" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*) cp -L "$lib" "$dir/lib/glibc/" ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  cp "$here/tests/lsan.supp" "$0" "$dir/"
  git -C "$here" rev-parse --short HEAD > "$dir/commit"
  echo "fuzz-bundle: $dir: $(ls "$dir/bin" | wc -l) drivers, $(du -sh "$dir" | cut -f1)"
  ;;
run)
  [ $# -ge 4 ] || { echo "usage: $0 run SECONDS OUTDIR fuzz_driver=processes..." >&2; exit 2; }
  pack=$(cd "$(dirname "$0")" && pwd)
  secs=$2 out=$3; shift 3
  mkdir -p "$out"
  work=$(mktemp -d)
  export LSAN_OPTIONS="suppressions=$pack/lsan.supp:print_suppressions=0"
  loader=$(ls "$pack"/lib/glibc/ld-linux* | head -1)
  # start a driver with the machine's glibc if that works, else the packed one
  first=${1%%=*}
  mkdir -p "$work/empty"
  # (FUZZ_BUNDLE_GLIBC=packed skips the first: to try the packed one here)
  if [ "${FUZZ_BUNDLE_GLIBC:-}" != packed ] && LD_LIBRARY_PATH="$pack/lib" "$pack/bin/$first" -runs=1 "$work/empty" >"$work/check.log" 2>&1; then
    mode=system
  elif "$loader" --library-path "$pack/lib/glibc:$pack/lib" "$pack/bin/$first" -runs=1 "$work/empty" >>"$work/check.log" 2>&1; then
    mode=packed
  else
    echo "fuzz-bundle: $first does not start here:"; cat "$work/check.log"; exit 1
  fi
  start() {
    if [ $mode = system ]; then LD_LIBRARY_PATH="$pack/lib" "$@"
    else "$loader" --library-path "$pack/lib/glibc:$pack/lib" "$@"; fi
  }
  echo "fuzz-bundle: $(nproc) cores, glibc: $mode; ${secs}s per process; commit $(cat "$pack/commit")"
  # a driver named without =N: probe each such driver alone (one process
  # each, side by side, FUZZ_PROBE seconds), then give them, in the order
  # named, the processes that reach FUZZ_RUNS in SECONDS at the probed rate
  # while the machine's cores last; cores left over go to the first driver
  # that did not fit (it gets as far as it gets).
  runs=${FUZZ_RUNS:-10000000} probe=${FUZZ_PROBE:-15}
  free=$(nproc) auto=() specs=()
  for spec in "$@"; do
    case "$spec" in *=*) specs+=("$spec"); free=$((free - ${spec#*=})) ;; *) auto+=("$spec") ;; esac
  done
  if [ ${#auto[@]} -gt 0 ]; then
    mkdir -p "$work/probe"
    for d in "${auto[@]}"; do
      mkdir -p "$work/probe/$d"
      start "$pack/bin/$d" -max_total_time="$probe" -print_final_stats=1 -timeout=60 -rss_limit_mb=4096 \
        -artifact_prefix="$work/probe/$d/" "$work/probe/$d" "$pack/corpus/${d#fuzz_}" > "$work/probe/$d.log" 2>&1 &
    done
    wait
    short=
    for d in "${auto[@]}"; do
      e=$(awk '/stat::number_of_executed_units/ { print $2 }' "$work/probe/$d.log")
      rate=$(( ${e:-0} / probe ))
      need=$(( rate > 0 ? (runs + rate * secs - 1) / (rate * secs) : 1000000 ))
      echo "fuzz-bundle: probe: $d: $rate executions/s per process: $need processes for $runs in ${secs}s"
      if [ "$need" -le "$free" ]; then specs+=("$d=$need"); free=$((free - need))
      elif [ -z "$short" ]; then short=$d; fi
    done
    if [ -n "$short" ] && [ "$free" -gt 0 ]; then specs+=("$short=$free"); fi
    echo "fuzz-bundle: plan: ${specs[*]}"
  fi
  set -- "${specs[@]}"
  pids=()
  for spec in "$@"; do
    d=${spec%%=*} n=${spec#*=}
    mkdir -p "$work/new/${d#fuzz_}" "$work/art/$d" "$work/log"
    for i in $(seq 1 "$n"); do
      start "$pack/bin/$d" -seed="$i" -runs=$(( (runs + n - 1) / n )) -max_total_time="$secs" -print_final_stats=1 -timeout=60 \
        -rss_limit_mb=4096 -artifact_prefix="$work/art/$d/" "$work/new/${d#fuzz_}" "$pack/corpus/${d#fuzz_}" \
        > "$work/log/$d.$i.log" 2>&1 &
      pids+=($!)
    done
  done
  t0=$(date +%s)
  for p in "${pids[@]}"; do wait "$p" || true; done
  t1=$(date +%s)
  printf 'date\tcommit\tdriver\tprocesses\texecutions\tseconds\tcrashes\n' > "$out/summary.tsv"
  for spec in "$@"; do
    d=${spec%%=*} n=${spec#*=}
    execs=$(cat "$work/log/$d".*.log | awk '/stat::number_of_executed_units/ { s += $2 } END { print s + 0 }')
    crashes=$(find "$work/art/$d" -type f | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" "$(cat "$pack/commit")" "$d" "$n" "$execs" \
      $((t1 - t0)) "$crashes" >> "$out/summary.tsv"
    for f in "$work/log/$d".*.log; do tail -n 40 "$f" > "$f.tail"; done
  done
  tar -C "$work" -czf "$out/finds.tgz" new
  (cd "$work/log" && tar -czf "$out/logs.tgz" ./*.tail)
  if [ -n "$(find "$work/art" -type f)" ]; then tar -C "$work" -czf "$out/crashes.tgz" art; fi
  column -t "$out/summary.tsv" 2>/dev/null || cat "$out/summary.tsv"
  ;;
import)
  [ $# -eq 2 ] || { echo "usage: $0 import OUTDIR" >&2; exit 2; }
  here=$(cd "$(dirname "$0")/.." && pwd)
  . "$here/scripts/fuzz-lib.sh"
  out=$2
  tmp=$(mktemp -d)
  tar -C "$tmp" -xzf "$out/finds.tgz"
  export LSAN_OPTIONS="suppressions=$here/tests/lsan.supp:print_suppressions=0"
  failed=0
  tail -n +2 "$out/summary.tsv" | while IFS=$'\t' read -r date commit d n execs secs crashes; do
    seed="$here/tests/fuzz/corpus/${d#fuzz_}"
    before=$(ls "$seed" | wc -l)
    fuzz_merge "$here" "$d" "$tmp/new/${d#fuzz_}"
    echo "fuzz-bundle: $(fuzz_record "$here" "$date" "$commit" "$d" "$execs" "$secs" "$before" "$crashes" "$n" \
      "${FUZZ_RUNS:-10000000}")"
  done
  if [ -e "$out/crashes.tgz" ]; then
    echo "fuzz-bundle: crash inputs in $out/crashes.tgz"; failed=1
  fi
  exit $failed
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
  ;;
esac
