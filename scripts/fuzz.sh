#!/usr/bin/env bash
# Build the libFuzzer drivers (clang, ASan+UBSan) in build-fuzz/ and run each
# for a bounded time over its seed corpus (tests/fuzz/corpus/<name>/).
#
#   scripts/fuzz.sh              # every driver, 20 s each (FUZZ_SECONDS overrides)
#   scripts/fuzz.sh fuzz_onnx_meta 300   # one driver, 300 s
#
# New inputs libFuzzer finds go to build-fuzz/corpus/<name>/; a crash leaves
# build-fuzz/crash-* and makes this script fail. FUZZ_KEEP=1 then merges what
# was found into the committed seeds (libFuzzer -merge=1: only inputs that
# add coverage), so the next run, here or in CI, starts where this one ended:
#
#   FUZZ_KEEP=1 scripts/fuzz.sh fuzz_graph_io 300 && git add tests/fuzz/corpus
#
# The drivers are built at -O1 with ASan+UBSan (as OSS-Fuzz builds them):
# 1.3-2.4x the executions per second of -O0 on this host, the same checks.
#
#   scripts/fuzz.sh --build [driver...]   # only configure and build them
#
# The long run (issue 17: not in CI; hours on this host; on a machine with
# more cores, scripts/fuzz-bundle.sh packs the drivers to run there):
#
#   scripts/fuzz.sh --long [driver...]
#
# runs each driver (all by default) until it has executed FUZZ_RUNS inputs
# (default 10,000,000) or FUZZ_LONG_CAP seconds have passed (default 7200;
# one input may take FUZZ_UNIT_TIMEOUT seconds, default 60 — a niced fuzzer
# beside other work once stopped at 10 s on an input that runs in
# milliseconds — and a timeout is counted only if the input times out again
# when run alone; a run stopped by hand, SIGINT, is recorded and reported
# as interrupted, not as a finding),
# merges what it found into the committed seeds (as FUZZ_KEEP=1), and adds
# one line per driver to results/fuzz_long.tsv (FUZZ_TSV: another file;
# scripts/fuzz-lib.sh does both for it and for fuzz-bundle.sh): date, commit, driver,
# executions, seconds, executions per second, seeds before and after,
# crashes, whether it reached FUZZ_RUNS, and the processes that ran it (1
# here; scripts/fuzz-bundle.sh imports runs of several). docs/security.md
# quotes it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/fuzz-lib.sh"
long=0 build_only=0
if [ "${1:-}" = --long ]; then long=1; shift; fi
if [ "${1:-}" = --build ]; then build_only=1; shift; fi
secs=${2:-${FUZZ_SECONDS:-20}}
cmake -S "$here" -B "$here/build-fuzz" -DAT_FUZZ=ON -DCMAKE_C_COMPILER=clang \
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
      -DAT_BUILD_TESTS=ON -DAT_BUILD_BENCH=OFF >/dev/null
shopt -s nullglob
drivers=$(fuzz_drivers "$here")
if { [ $long = 1 ] || [ $build_only = 1 ]; } && [ $# -gt 0 ]; then drivers="$*"
elif [ $long = 0 ] && [ -n "${1:-}" ]; then drivers=$1; fi
cmake --build "$here/build-fuzz" -j2 --target $drivers >/dev/null
[ $build_only = 0 ] || exit 0
export LSAN_OPTIONS="suppressions=$here/tests/lsan.supp:print_suppressions=0"
if [ $long = 1 ]; then
  runs=${FUZZ_RUNS:-10000000} cap=${FUZZ_LONG_CAP:-7200} unit_timeout=${FUZZ_UNIT_TIMEOUT:-60}
  tsv=$(fuzz_tsv "$here")
  commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
  failed=0
  for d in $drivers; do
    seed="$here/tests/fuzz/corpus/${d#fuzz_}"
    work="$here/build-fuzz/long/${d#fuzz_}"
    art="$here/build-fuzz/long/crashes-${d#fuzz_}/"
    # crash inputs of an earlier run are not this run's: a fixed one belongs
    # in the seeds as a regression input (tests/fuzz/corpus/<name>/regress-*)
    rm -rf "$art"
    mkdir -p "$work" "$art" "$seed"
    before=$(ls "$seed" | wc -l)
    echo "fuzz --long: $d: up to $runs executions or ${cap}s ($(date -u +%H:%M) UTC)"
    t0=$(date +%s)
    rc=0
    (cd "$here/build-fuzz" && "./tests/fuzz/$d" -runs="$runs" -max_total_time="$cap" \
        -print_final_stats=1 -timeout="$unit_timeout" -rss_limit_mb=2048 -artifact_prefix="$art" \
        "$work" "$seed" > "$here/build-fuzz/long/$d.log" 2>&1) || rc=$?
    t1=$(date +%s)
    execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$here/build-fuzz/long/$d.log" | tail -1)
    execs=${execs:-0}
    fuzz_merge "$here" "$d" "$work" || true
    # a timeout (and libFuzzer's slow-unit report, past 10 s) is a wall-clock
    # one: a fuzzer starved of CPU by other work (it runs for hours, often
    # niced) can hit it on an input that runs in milliseconds. Each such
    # input is run again alone; one that finishes within the limit is set
    # aside (unconfirmed/), not counted, and named.
    for t in "$art"timeout-* "$art"slow-unit-*; do
      [ -e "$t" ] || continue
      if (cd "$here/build-fuzz" && timeout $((unit_timeout * 3)) "./tests/fuzz/$d" \
            -timeout="$unit_timeout" "$t" >/dev/null 2>&1); then
        mkdir -p "${art}unconfirmed"
        mv "$t" "${art}unconfirmed/"
        echo "fuzz --long: $d: $(basename "$t") ran within ${unit_timeout}s alone: not counted (starved?)"
        if [ $rc -eq 70 ]; then rc=0; fi # libFuzzer's exit for that timeout
      fi
    done
    if [ $rc -eq 72 ]; then # libFuzzer's exit code for SIGINT: stopped by hand
      echo "fuzz --long: $d: interrupted"
      rc=0
    fi
    crashes=$(ls "$art" | grep -vc '^unconfirmed$' || true)
    echo "fuzz --long: $(fuzz_record "$here" "$(date -u +%Y-%m-%d)" "$commit" "$d" "$execs" $((t1 - t0)) \
      "$before" "$crashes" 1 "$runs") (rc $rc)"
    if [ "$crashes" -gt 0 ] || [ $rc -ne 0 ]; then failed=1; tail -n 30 "$here/build-fuzz/long/$d.log"; fi
  done
  [ $failed = 0 ] || { echo "fuzz --long: crashes above (inputs in build-fuzz/long/crashes-*/)"; exit 1; }
  echo "fuzz --long: all drivers ran clean; ${tsv#$here/}"
  exit 0
fi
for d in $drivers; do
  seed="$here/tests/fuzz/corpus/${d#fuzz_}"
  work="$here/build-fuzz/corpus/${d#fuzz_}"
  mkdir -p "$work"
  echo "fuzz: $d for ${secs}s (seeds: ${seed#$here/})"
  (cd "$here/build-fuzz" && "./tests/fuzz/$d" -max_total_time="$secs" -print_final_stats=0 \
      -timeout=10 -rss_limit_mb=2048 "$work" "$seed" 2>&1 | tail -n 3)
  if [ "${FUZZ_KEEP:-0}" = 1 ]; then
    before=$(ls "$seed" | wc -l)
    fuzz_merge "$here" "$d" "$work"
    echo "fuzz: $d: seeds $before -> $(ls "$seed" | wc -l) (merged, minimised)"
  fi
done
echo "fuzz: all drivers ran clean"
