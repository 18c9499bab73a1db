#!/bin/sh
# bench/bucket_batching.sh — length-bucketed batching against arrival order
# and batch 1 on the MiniLM- and BERT-base-size stand-ins, fp32 and int8
# (bench/bucket_batching.c; docs/benchmarks.md, "Length-bucketed batching").
# Prints `uptime` before and after every model so the load is on record.
# Env: PASSES (3), B (8), F (1.25), W (100000), TEXTS_MINILM (400),
# TEXTS_BERT (200), BUILD (build-dev).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-dev}
PASSES=${PASSES:-3} B=${B:-8} F=${F:-1.25} W=${W:-100000}
DATA=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}/pang-lee/test.csv
DIRS=$(tools/testmodels/size_standins.sh minilm bertbase)
for d in $DIRS; do
  case "$d" in *-cls) ;; *) continue ;; esac
  case "$d" in *bertbase*) n=${TEXTS_BERT:-200} ;; *) n=${TEXTS_MINILM:-400} ;; esac
  for v in model_quantized.onnx model.onnx; do
    echo "## $(basename "$d") $v  $(date -u +%H:%M:%S)  $(uptime | sed 's/.*load/load/')"
    "$BUILD/bench/bench_bucket_batching" "$d" "onnx/$v" "$DATA" 2 "$PASSES" "$n" "$B" "$F" "$W"
  done
done
echo "## end $(date -u +%H:%M:%S)  $(uptime | sed 's/.*load/load/')"
