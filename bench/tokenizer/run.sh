#!/usr/bin/env bash
# bench/tokenizer/run.sh — single-threaded tokenizer throughput, anytime vs
# Hugging Face tokenizers (npm binding, batch API), on the same corpus (all
# 5500 Pang & Lee texts + the adversarial set) and the same tokenizer.json
# (bert-base-uncased WordPiece and GPT-2 byte-level BPE, built by HF itself:
# tests/parity/build_refs.js). Median of PASSES passes with the range.
#
#   bench/tokenizer/run.sh [BUILD_DIR] [PASSES]     (defaults: build, 7)
# Prints a Markdown table for docs/benchmarks.md ("## Tokenizer throughput").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
passes=${2:-7}
bin="$build/bench/bench_tokenizer"
[ -x "$bin" ] || bin=$(find "$build" -name bench_tokenizer -type f -perm -u+x | head -n 1)
[ -x "$bin" ] || { echo "bench_tokenizer not built in $build" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root/tests/node" && [ -d node_modules/tokenizers ] || npm ci --no-audit --no-fund >&2)
"$root/tools/train/fetch_data.sh" >/dev/null
data=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
node "$root/tests/parity/build_refs.js" "$work/refs" >/dev/null
node "$root/tests/parity/make_texts.js" "$data/pattern/usr/share/doc/python3-pattern/test/corpora" "$work/texts.jsonl" >/dev/null
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 RAYON_RS_NUM_CPUS=1
echo "host: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; texts: $(wc -l < "$work/texts.jsonl")"
echo
echo "| tokenizer | implementation | MB/s median (min–max) | tokens/s median (min–max) |"
echo "|---|---|---|---|"
for tk in bert-base-uncased gpt2; do
  for impl in anytime hf; do
    if [ $impl = anytime ]; then
      out=$("$bin" "$work/refs/$tk/tokenizer.json" "$work/texts.jsonl" "$passes")
    else
      out=$(node "$root/bench/tokenizer/hf_bench.js" "$work/refs/$tk/tokenizer.json" "$work/texts.jsonl" "$passes")
    fi
    node -e '
      const r = JSON.parse(process.argv[1]);
      const f = (x) => x.toFixed(2), g = (x) => (x / 1e6).toFixed(2) + "M";
      console.log(`| ${process.argv[2]} | ${r.impl} | ${f(r.mb_s_median)} (${f(r.mb_s_min)}–${f(r.mb_s_max)}) | ${g(r.tok_s_median)} (${g(r.tok_s_min)}–${g(r.tok_s_max)}) |`);
    ' "$out" "$tk"
  done
done
