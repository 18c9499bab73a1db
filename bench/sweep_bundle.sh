#!/usr/bin/env bash
# The load sweep's deep-overload points on a machine with more cores than
# this one, to tell the admission rule's shortfall at rho = 5 (README, "Where
# adaptive falls short") from the cost of a load generator that shares the
# server's two cores. Packs build/anytime, the libraries it loads (ONNX
# Runtime included), the sentiment family and the test split; the pack then
# runs the same sweep twice on the other machine, the server pinned to two
# CPUs on distinct physical cores both times:
#   shared    the load generator on those same two CPUs (this host's case);
#   separate  the load generator on two other physical cores.
#
#   bench/sweep_bundle.sh pack DIR          # here, after scripts/setup.sh --no-serve
#   DIR/sweep_bundle.sh run OUTDIR [sweep options...]   # there
#
# Default sweep options: --rhos 5 --policies adaptive,cheap-only --repeats 2
# --duration 6. The configuration is configs/serving.yaml with only the
# sentiment family (the sweep drives it alone). OUTDIR gets, per case,
# the sweep's CSV, summary and log, and the CPU layout it chose.
set -euo pipefail

case "${1:-}" in
pack)
  [ $# -eq 2 ] || { echo "usage: $0 pack DIR" >&2; exit 2; }
  here=$(cd "$(dirname "$0")/.." && pwd)
  dir=$2
  ort=$(bash "$here/scripts/fetch-ort.sh" --print-root)/lib/libonnxruntime.so.1
  data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
  [ -x "$here/build/anytime" ] && [ -f "$ort" ] && [ -f "$data" ] ||
    { echo "sweep_bundle: needs build/anytime, the ONNX Runtime library and $data (scripts/setup.sh --no-serve)" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$dir/lib" "$dir/configs" "$dir/data/pang-lee"
  cp "$here/build/anytime" "$0" "$dir/"
  cp -L "$ort" "$dir/lib/"
  ldd "$here/build/anytime" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
    case "$(basename "$lib")" in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*) ;; *) cp -L "$lib" "$dir/lib/" ;; esac
  done
  for m in sentiment-large sentiment-small; do
    mkdir -p "$dir/models/$m/onnx"
    cp "$here/models/$m/tokenizer.json" "$here/models/$m/config.json" "$dir/models/$m/"
    cp "$here/models/$m/onnx/model_quantized.onnx" "$dir/models/$m/onnx/"
  done
  # serving.yaml up to the second model
  awk '/^  - name: / { n++ } n < 2' "$here/configs/serving.yaml" > "$dir/configs/serving.yaml"
  cp "$data" "$dir/data/pang-lee/"
  git -C "$here" rev-parse --short HEAD > "$dir/commit"
  echo "sweep_bundle: $dir, $(du -sh --apparent-size "$dir" | cut -f1)"
  ;;
run)
  [ $# -ge 2 ] || { echo "usage: $0 run OUTDIR [sweep options]" >&2; exit 2; }
  pack=$(cd "$(dirname "$0")" && pwd)
  out=$2; shift 2
  [ $# -gt 0 ] || set -- --rhos 5 --policies adaptive,cheap-only --repeats 2 --duration 6
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$pack/lib" ANYTIME_ORT_LIB="$pack/lib/libonnxruntime.so.1" ANYTIME_DATA_DIR="$pack/data"
  # one CPU per physical core, in order: the server takes the first two, the
  # separate load generator the next two
  cores=$(for c in /sys/devices/system/cpu/cpu[0-9]*; do
            echo "$(cat "$c/topology/core_id" 2>/dev/null || basename "$c") $(cat "$c/topology/physical_package_id" 2>/dev/null || echo 0) ${c##*cpu}"
          done | sort -n -k3 | awk '!seen[$2 " " $1]++ { print $3 }' | head -4 | paste -sd' ')
  cores=${SWEEP_BUNDLE_CPUS:-$cores} # four CPU numbers, to choose them by hand
  read -r s1 s2 l1 l2 <<< "$cores"
  [ -n "${l2:-}" ] || { echo "sweep_bundle: fewer than 4 physical cores ($cores)" >&2; exit 1; }
  echo "sweep_bundle: commit $(cat "$pack/commit"); $(nproc) CPUs; one per core: $cores; server on $s1,$s2"
  command -v taskset >/dev/null || { echo "sweep_bundle: taskset (util-linux) is missing" >&2; exit 1; }
  cd "$pack"
  for case in shared separate; do
    gen=$s1,$s2; [ $case = separate ] && gen=$l1,$l2
    echo "sweep_bundle: $case: load generator on $gen ($(date -u +%H:%M:%S))"
    taskset -c "$gen" ./anytime sweep --config configs/serving.yaml --server-cpus "$s1,$s2" "$@" \
      --out-csv "$out/$case.csv" --out-md "$out/$case.md" --plot "$out/$case.png" > "$out/$case.log" 2>&1 ||
      echo "sweep_bundle: $case: sweep exited $?"
    grep -E '^Capacity' "$out/$case.md" | cut -c1-120 || true
    grep -E '^(\| [0-9.]+ \||\*\*)' "$out/$case.md" | cut -c1-160 || true
  done
  ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
