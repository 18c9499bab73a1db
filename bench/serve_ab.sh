#!/usr/bin/env bash
# bench/serve_ab.sh — two `anytime serve` processes on the run-cost
# configuration (bench/run_cost.sh: sentiment-large int8 alone, 2 workers, 2
# HTTP threads, 1 intra-op thread, policy none, max_batch_size MB), differing
# only by serve flags, driven in turn by `hey` so the host's drift hits both
# alike. Per pass: the server's CPU per answer (utime + stime from /proc),
# answers/s, hey's p50 and p99, and the server's involuntary context
# switches per answer; per round, B over A for CPU and answers/s.
#
#   A_EXTRA="--set server.http_batch_sched=false" bench/serve_ab.sh
#   A_ENV="GLIBC_TUNABLES=glibc.malloc.mxfast=0" bench/serve_ab.sh
#   A_BIN=/tmp/glibc-build/anytime bench/serve_ab.sh   (two builds)
#   env: A_EXTRA, B_EXTRA (serve flags; default both empty), A_ENV, B_ENV
#        (VAR=value words put in that server's environment), A_BIN, B_BIN
#        (the binary each server runs; default ANYTIME_BIN), ROUNDS (3),
#        SECS (4), CONCS ("8"), LENS ("11 30": the texts of bench/run_cost.sh),
#        MB (1), ANYTIME_BIN (build/anytime), MODEL (models/sentiment-large),
#        VARIANT (onnx/model_quantized.onnx)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. bench/lib.sh
bin=${ANYTIME_BIN:-$here/build/anytime}
model=$(cd "${MODEL:-models/sentiment-large}" && pwd); variant=${VARIANT:-onnx/model_quantized.onnx}
rounds=${ROUNDS:-3}; secs=${SECS:-4}; concs=${CONCS:-8}; lens=${LENS:-11 30}
a_extra=${A_EXTRA:-}; b_extra=${B_EXTRA:-}; a_env=${A_ENV:-}; b_env=${B_ENV:-}
a_bin=${A_BIN:-$bin}; b_bin=${B_BIN:-$bin}
for t in hey curl node awk; do
  command -v $t >/dev/null || { echo "serve_ab: needs $t (scripts/install-deps.sh test bench)" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
bench_length_texts "$model/tokenizer.json" "$tmp" $lens
bench_one_variant_config "$tmp/serve.yaml" "$model" "$variant" "${MB:-1}" ""
start() { # NAME FLAGS ENV BIN
  # shellcheck disable=SC2086
  env $3 "$4" serve --config "$tmp/serve.yaml" --port-file "$tmp/port_$1" $2 2>"$tmp/log_$1" &
  echo $! > "$tmp/pid_$1"
}
start A "$a_extra" "$a_env" "$a_bin"; start B "$b_extra" "$b_env" "$b_bin"
for _ in $(seq 1 300); do [ -s "$tmp/port_A" ] && [ -s "$tmp/port_B" ] && break; sleep 0.1; done
[ -s "$tmp/port_A" ] && [ -s "$tmp/port_B" ] ||
  { echo "serve_ab: a server did not start: $(tail -2 "$tmp"/log_*)" >&2; exit 1; }
tck=$(getconf CLK_TCK)
invol() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^nonvoluntary/ {n += $2} END {print n + 0}'; }
pass() { # NAME L C -> "cpu_us answers_per_s p50_ms p99_ms involuntary_per_answer"
  local pid port c0 c1 i0 i1 ok
  pid=$(cat "$tmp/pid_$1"); port=$(cat "$tmp/port_$1")
  c0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); i0=$(invol "$pid")
  hey -z "${secs}s" -c "$3" -m POST -T application/json -D "$tmp/body_$2.json" \
    "http://127.0.0.1:$port/predict" > "$tmp/hey"
  c1=$(awk '{print $14 + $15}' "/proc/$pid/stat"); i1=$(invol "$pid")
  ok=$(awk '$1 == "[200]" {print $2}' "$tmp/hey")
  [ -n "$ok" ] && [ "$ok" -gt 0 ] || { echo "serve_ab: no 200 answers from $1" >&2; cat "$tmp/hey" >&2; exit 1; }
  awk -v ok="$ok" -v c=$((c1 - c0)) -v t="$tck" -v inv=$((i1 - i0)) \
      -v rps="$(awk '/Requests\/sec/ {print $2}' "$tmp/hey")" \
      -v p50="$(awk '/ 50% in/ {print $3}' "$tmp/hey")" -v p99="$(awk '/ 99% in/ {print $3}' "$tmp/hey")" \
      'BEGIN {printf "%.0f %.0f %.2f %.2f %.2f\n", c * 1e6 / t / ok, rps, p50 * 1e3, p99 * 1e3, inv / ok}'
}
for s in A B; do for l in $lens; do # warm up
  curl -sf "http://127.0.0.1:$(cat "$tmp/port_$s")/predict" -H 'content-type: application/json' \
    -d @"$tmp/body_$l.json" > /dev/null
done; done
echo "# bench/serve_ab.sh: A '$a_env${a_env:+ }$a_extra' ($a_bin), B '$b_env${b_env:+ }$b_extra' ($b_bin); $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD)"
echo "# round L conc | A: cpu_us/answer answers/s p50_ms p99_ms invol/answer | B: the same | B/A cpu, B/A answers/s"
: > "$tmp/rows"
for r in $(seq 1 "$rounds"); do for l in $lens; do for c in $concs; do
  a=$(pass A "$l" "$c"); b=$(pass B "$l" "$c")
  row="$r $l $c | $a | $b | $(echo "$a $b" | awk '{printf "%.3f %.3f", $6 / $1, $7 / $2}')"
  echo "$row"; echo "$row" >> "$tmp/rows"
done; done; done
# medians of B/A per L and concurrency, with their range
med() { sort -g | awk '{a[NR] = $1} END {m = (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2; printf "%.3f (%.3f-%.3f)", m, a[1], a[NR]}'; }
for l in $lens; do for c in $concs; do
  sel() { awk -v l="$l" -v c="$c" -v f="$1" '$2 == l && $3 == c {print $(NF - f)}' "$tmp/rows"; }
  echo "L=$l c=$c: B/A CPU per answer $(sel 1 | med), answers/s $(sel 0 | med), $rounds rounds"
done; done
