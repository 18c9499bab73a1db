#!/usr/bin/env bash
# The test command: install whatever is missing, then build and run the whole
# test suite twice — a normal build (build/) and an AddressSanitizer +
# UndefinedBehaviorSanitizer build (build-asan/) — and finish with a short,
# bounded libFuzzer run of every fuzz driver (build-fuzz/).
#
#   scripts/test.sh              # everything (what .ci/run calls)
#   scripts/test.sh --no-asan    # skip the sanitizer build (quicker local loop)
#   FUZZ_SECONDS=60 scripts/test.sh   # longer fuzzing (default 10 s per driver)
#
# Needs network access only the first time (Debian packages, the ONNX Runtime
# SDK and test packages from npm, the Pang & Lee corpus); all are cached.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
asan=1
for a in "$@"; do
  case "$a" in
    --no-asan) asan=0 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
jobs=$(nproc 2>/dev/null || echo 2)
t0=$(date +%s)
step() { printf '\n=== %s (%ss)\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "installing what is missing"
bash scripts/install-deps.sh build test
bash scripts/fetch-ort.sh --alt          # a second ORT release, for the version-lock test
bash tools/train/fetch_data.sh >/dev/null  # Pang & Lee corpus + held-out split CSVs

run_suite() { # dir, extra cmake args...
  local dir=$1; shift
  step "configure + build $dir"
  cmake -S . -B "$dir" -DAT_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  step "ctest in $dir"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900)
}
run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAT_BUILD_TESTS=ON -DAT_BUILD_BENCH=ON
if [ $asan = 1 ]; then
  run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DAT_SANITIZE=ON -DAT_BUILD_TESTS=ON -DAT_BUILD_BENCH=OFF
fi
step "bounded fuzz run"
FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash scripts/fuzz.sh
step "all tests passed"
