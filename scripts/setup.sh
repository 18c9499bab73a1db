#!/usr/bin/env bash
# The main job in one command: install what is missing (Debian packages,
# Node.js/npm if absent, the pinned ONNX Runtime SDK), build anytime in
# build/, and serve the default model family (configs/serving.yaml, the
# models committed under models/) on http://127.0.0.1:8000 until Ctrl-C.
#
#   scripts/setup.sh                 # install, build, serve
#   scripts/setup.sh --no-serve      # install and build only
#   scripts/setup.sh -- --port 9000  # arguments after -- go to `anytime serve`
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
serve=1; extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-serve) serve=0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target anytime_cli
build/anytime version
if [ $serve = 1 ]; then
  echo "setup: serving the default family; try:  curl -s localhost:8000/predict -d '{\"inputs\":\"a gripping, funny film\"}'"
  exec build/anytime serve "${extra[@]}"
fi
