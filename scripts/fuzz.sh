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
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${2:-${FUZZ_SECONDS:-20}}
cmake -S "$here" -B "$here/build-fuzz" -DAT_FUZZ=ON -DCMAKE_C_COMPILER=clang \
      -DCMAKE_BUILD_TYPE=Debug -DAT_BUILD_TESTS=ON -DAT_BUILD_BENCH=OFF >/dev/null
shopt -s nullglob
drivers=$(sed -n 's/^at_fuzz_driver(\([a-z_0-9]*\) .*/\1/p' "$here"/tests/fuzz/CMakeLists.txt "$here"/tests/fuzz/*.cmake | sort -u)
if [ -n "${1:-}" ]; then drivers=$1; fi
cmake --build "$here/build-fuzz" -j2 --target $drivers >/dev/null
export LSAN_OPTIONS="suppressions=$here/tests/lsan.supp:print_suppressions=0"
for d in $drivers; do
  seed="$here/tests/fuzz/corpus/${d#fuzz_}"
  work="$here/build-fuzz/corpus/${d#fuzz_}"
  mkdir -p "$work"
  echo "fuzz: $d for ${secs}s (seeds: ${seed#$here/})"
  (cd "$here/build-fuzz" && "./tests/fuzz/$d" -max_total_time="$secs" -print_final_stats=0 \
      -timeout=10 -rss_limit_mb=2048 "$work" "$seed" 2>&1 | tail -n 3)
  if [ "${FUZZ_KEEP:-0}" = 1 ]; then
    before=$(ls "$seed" | wc -l)
    (cd "$here/build-fuzz" && "./tests/fuzz/$d" -merge=1 "$seed" "$work" >/dev/null 2>&1)
    echo "fuzz: $d: seeds $before -> $(ls "$seed" | wc -l) (merged, minimised)"
  fi
done
echo "fuzz: all drivers ran clean"
