#!/usr/bin/env bash
# bench/run_cost.sh — what a served answer costs against a bare ONNX Runtime
# Run that shares no code with anytime (bench/bare_ort/bare_ort.c), per
# sequence length L, and anytime's throughput against the Node.js peer.
#
#   bench/run_cost.sh [MODEL_DIR [VARIANT.onnx]]
#       default: models/sentiment-large onnx/model_quantized.onnx
#   env: LENS ("3 11 30 100"), ROUNDS (3), SECS (5), CONC (8), C1_N (400),
#        PEER_CONCS ("8 32"; empty: no peer comparison), PEER_L (11),
#        ANYTIME_BIN (build/anytime), BARE_BIN (build/bench/bare_ort),
#        SERVE_EXTRA (extra `anytime serve` flags), ENGINE_EXTRA (extra keys
#        of the config's engine section, e.g. "cpu_arena: true": the arena
#        on, as before it was turned off)
#
# The texts: for each L, the shortest prefix of a fixed sentence that the
# Hugging Face tokenizers library (npm `tokenizers`, not anytime's tokenizer)
# encodes to exactly L ids; the bare loop is fed those ids, the server the
# text. The server: `anytime serve` with the one variant, 2 workers, 2 HTTP
# threads, 1 intra-op thread, max_batch_size 1, policy none.
#
# Each round, for each L, in this order (so each ratio is taken within the
# round: this host's speed swings 2x within minutes):
#   bare 1      bare_ort, 1 thread: wall time of a Run (median), CPU per Run
#   bare 2      bare_ort, 2 threads sharing the session: CPU per Run
#   c=1         C1_N sequential requests on one kept-alive connection (curl);
#               the median x-inference-time the server reports
#   c=CONC      hey -c CONC for SECS; the server's utime+stime from /proc over
#               the pass / the 200 answers = CPU per answer, also split by
#               thread name (at-worker: the Runs; MHD-worker: HTTP, JSON,
#               tokenising; the rest); and hey's own CPU per answer (it
#               shares the host's cores with the server)
#   bare beside bare_ort, 2 threads, while hey -c CONC sends GET /health to
#               the same server at the rate it just answered /predict: the
#               bare loop with the neighbours a served Run has (the client,
#               the HTTP threads, the kernel's loopback TCP) and no Run of
#               the server's; its CPU per Run
# Ratios: c=1 time / bare 1 wall; CPU per answer / bare 2 CPU per Run (the
# bare loop with as many threads as the server has workers), and the CPU
# the workers spent inside Runs per answer (the server's
# anytime_engine_run_cpu_seconds_total, read from /metrics around the pass)
# / bare beside's CPU per Run: does a served Run cost more than a bare Run
# with the same neighbours? (The workers' CPU beyond their Runs is the
# engine, batcher and callbacks.) Reported: the median over
# rounds and the range. Then, unless PEER_CONCS is empty, one
# alternating run against the Node peer (bench/peers/node-ort) on the PEER_L
# text: per concurrency, anytime with max_batch_size 1, anytime with 16 (the
# default) and the peer in turn, ROUNDS passes each, answers/s and each
# server's CPU per answer.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. bench/lib.sh
model=${1:-models/sentiment-large}; variant=${2:-onnx/model_quantized.onnx}
model=$(cd "$model" && pwd)
bin=${ANYTIME_BIN:-$here/build/anytime}
bare=${BARE_BIN:-$here/build/bench/bare_ort}
lens=${LENS:-3 11 30 100}; rounds=${ROUNDS:-3}; secs=${SECS:-5}; conc=${CONC:-8}
c1_n=${C1_N:-400}; peer_concs=${PEER_CONCS-8 32}; peer_l=${PEER_L:-11}
for t in hey curl node awk; do
  command -v $t >/dev/null || { echo "run_cost: needs $t (scripts/install-deps.sh test)" >&2; exit 1; }
done
[ -x "$bin" ] && [ -x "$bare" ] || { echo "run_cost: build $bin and $bare first" >&2; exit 1; }
(cd bench/peers/node-ort && [ -d node_modules/tokenizers ] || npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)

# shellcheck disable=SC2086
bench_length_texts "$model/tokenizer.json" "$tmp" $lens $peer_l
ids_of() { awk -F'\t' -v l="$1" '$1 == l {print $2; exit}' "$tmp/texts"; }

echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD)"
ver=$("$bin" version 2>/dev/null || true)
echo "# model: $model/$variant; ONNX Runtime: $(sed -n 's/^ONNX Runtime library: *//p' <<<"$ver" | head -1); anytime's malloc: $(sed -n 's/^malloc: *//p' <<<"$ver"); the bare loop's: glibc"
echo "# load before: $(uptime)"

bench_one_variant_config "$tmp/serve.yaml" "$model" "$variant" 1 "${ENGINE_EXTRA:-}"
# shellcheck disable=SC2086
"$bin" serve --config "$tmp/serve.yaml" --port-file "$tmp/port" ${SERVE_EXTRA:-} 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "run_cost: server did not start: $(tail -3 "$tmp/serve.log")" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$tmp/port")/predict"
for l in $lens; do # warm up, and check the server sees the same length
  curl -sf "$url" -H 'content-type: application/json' -d @"$tmp/body_$l.json" >/dev/null
done

bare_beside() { # L answers_per_s -> CPU µs per Run of bare 2 threads beside hey -> /health
  local q=$(( ($2 + conc - 1) / conc )) hp b
  hey -z "$((secs + 1))s" -c "$conc" -q "$q" "${url%/predict}/health" > "$tmp/hey_health" &
  hp=$!
  sleep 0.5
  b=$(bare_run "$1" 2 | cut -d' ' -f2)
  wait "$hp"
  grep -q '^ *\[200\]' "$tmp/hey_health" || { echo "run_cost: /health gave no 200 answers" >&2; exit 1; }
  echo "$b"
}
bare_run() { # L threads -> "wall_us cpu_us" (the csv line: wall_us is field 7, CPU per Run 8)
  "$bare" --model "$model/$variant" --ids "$(ids_of "$1")" --threads "$2" --seconds "$secs" \
    --passes 1 --csv | awk -F, '/^csv,/ {print $7, $8}'
}
c1_run() { # L -> median x-inference-time in µs over C1_N sequential kept-alive requests
  local args=() i
  for ((i = 0; i < c1_n; i++)); do args+=("$url" -o /dev/null); done
  curl -s -H 'content-type: application/json' -d @"$tmp/body_$1.json" \
    -w '%header{x-inference-time}\n' "${args[@]}" |
    sort -g | awk '{a[NR]=$1} END {printf "%.1f\n", (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2 * 1000}'
}
thread_ticks() { # pid -> "name ticks" per thread
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' _ < "$t/comm")" "$(awk '{print $14 + $15}' "$t/stat")"
  done 2>/dev/null
}
run_cpu_s() { # the server's anytime_engine_run_cpu_seconds_total
  curl -sf "${url%/predict}/metrics" | awk '/^anytime_engine_run_cpu_seconds_total / {print $2}'
}
load_run() { # L -> "cpu_us worker_us http_us other_us answers_per_s in_run_us hey_us"
  thread_ticks "$spid" > "$tmp/t0"
  local c0 c1 r0 r1; c0=$(awk '{print $14 + $15}' "/proc/$spid/stat"); r0=$(run_cpu_s)
  # hey in a subshell whose `times` (its children's user and system time)
  # is hey's own CPU: the load generator shares this host's cores
  (hey -z "${secs}s" -c "$conc" -m POST -T application/json -D "$tmp/body_$1.json" "$url" > "$tmp/hey"
   times > "$tmp/hey_times")
  c1=$(awk '{print $14 + $15}' "/proc/$spid/stat"); r1=$(run_cpu_s)
  thread_ticks "$spid" > "$tmp/t1"
  local ok rps; ok=$(awk '$1 == "[200]" {print $2}' "$tmp/hey"); rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/hey")
  [ -n "$ok" ] && [ "$ok" -gt 0 ] || { echo "run_cost: no 200 answers under load" >&2; cat "$tmp/hey" >&2; exit 1; }
  [ -n "$r0" ] && [ -n "$r1" ] || { echo "run_cost: no anytime_engine_run_cpu_seconds_total in /metrics" >&2; exit 1; }
  # threads are matched by position (the server starts none during a pass)
  # times' second line: "0m1.234s 0m0.567s", the children's user and system
  local hey_s; hey_s=$(awk 'NR == 2 {s = 0; for (i = 1; i <= 2; i++) {split($i, a, "m"); s += a[1] * 60 + a[2]} print s}' "$tmp/hey_times")
  paste -d' ' "$tmp/t0" "$tmp/t1" | awk -v n="$ok" -v t="$tck" -v all=$((c1 - c0)) -v rps="$rps" \
      -v inrun="$(awk -v a="$r0" -v b="$r1" 'BEGIN {print b - a}')" -v hey_s="$hey_s" '
    {d = $4 - $2; if ($1 == "at-worker") w += d; else if ($1 == "MHD-worker") h += d; else o += d}
    END {f = 1e6 / t / n; printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", all * f, w * f, h * f, o * f, rps, inrun * 1e6 / n, hey_s * 1e6 / n}'
}

: > "$tmp/rows"
for r in $(seq 1 "$rounds"); do
  for l in $lens; do
    read -r b1_wall b1_cpu < <(bare_run "$l" 1)
    read -r _ b2_cpu < <(bare_run "$l" 2)
    c1=$(c1_run "$l")
    read -r cpu w h o rps inrun heyc < <(load_run "$l")
    beside=$(bare_beside "$l" "$rps")
    echo "$l $r $b1_wall $b1_cpu $b2_cpu $c1 $cpu $w $h $o $rps $beside $inrun $heyc" >> "$tmp/rows"
    echo "# round $r L=$l: bare 1 thread ${b1_wall} us wall, ${b1_cpu} us CPU; bare 2 threads ${b2_cpu} us CPU per Run;" \
         "c=1 ${c1} us; c=$conc ${cpu} us CPU per answer (workers $w, of it inside Runs $inrun; HTTP $h, other $o)," \
         "$rps answers/s, hey's own CPU ${heyc} us per answer; bare 2 threads beside the HTTP load ${beside} us CPU per Run" >&2
  done
done

# cell L C [FMT]: median (min–max) of column C of the rows for length L
cell() { awk -v l="$1" -v c="$2" '$1 == l {print $c}' "$tmp/rows" | sort -g |
  awk -v f="${3:-%.0f}" '{a[NR]=$1} END {m = (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2; printf f " (" f "–" f ")", m, a[1], a[NR]}'; }
ratio() { awk -v l="$1" -v a="$2" -v b="$3" '$1 == l {print $a / $b}' "$tmp/rows" | sort -g |
  awk '{a[NR]=$1} END {m = (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2; printf "**%.2fx** (%.2f–%.2f)", m, a[1], a[NR]}'; }
echo
echo "| L (ids) | bare Run, 1 thread: wall µs | c=1 x-inference-time µs | c=1 / bare | bare CPU per Run, 2 threads µs | server CPU per answer, c=$conc µs | of which workers (inside Runs) / HTTP / rest µs | CPU / bare | answers/s | hey's CPU per answer µs | bare beside µs | Run CPU / bare beside |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for l in $lens; do
  echo "| $l | $(cell "$l" 3) | $(cell "$l" 6) | $(ratio "$l" 6 3) | $(cell "$l" 5) | $(cell "$l" 7) | $(cell "$l" 8 | cut -d' ' -f1) ($(cell "$l" 13 | cut -d' ' -f1)) / $(cell "$l" 9 | cut -d' ' -f1) / $(cell "$l" 10 | cut -d' ' -f1) | $(ratio "$l" 7 5) | $(cell "$l" 11) | $(cell "$l" 14) | $(cell "$l" 12) | $(ratio "$l" 13 12) |"
done
echo
echo "(medians over $rounds rounds, ranges in brackets; each ratio is taken within its round)"

if [ -n "$peer_concs" ]; then
  cp "$tmp/body_$peer_l.json" "$tmp/body_peer.json"
  # a second anytime with batching on (max_batch_size 16, the default)
  bench_one_variant_config "$tmp/serve16.yaml" "$model" "$variant" 16 "${ENGINE_EXTRA:-}"
  "$bin" serve --config "$tmp/serve16.yaml" --port-file "$tmp/port16" 2>"$tmp/serve16.log" &
  spid16=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port16" ] && break; sleep 0.1; done
  [ -s "$tmp/port16" ] || { echo "run_cost: second server did not start: $(tail -3 "$tmp/serve16.log")" >&2; exit 1; }
  url16="http://127.0.0.1:$(cat "$tmp/port16")/predict"
  pport=$(( $(cat "$tmp/port") + 1 ))
  node bench/peers/node-ort/server.js "$model" "$variant" "$pport" 2>"$tmp/peer.log" &
  ppid=$!
  purl="http://127.0.0.1:$pport/predict"
  for u in "$url16" "$purl"; do
    for _ in $(seq 1 100); do curl -sf "$u" -d @"$tmp/body_peer.json" >/dev/null && break; sleep 0.1; done
  done
  hey_point() { # url conc pid -> "answers_per_s cpu_us_per_answer"
    local c0 c1; c0=$(awk '{print $14 + $15}' "/proc/$3/stat")
    hey -z "${secs}s" -c "$2" -m POST -T application/json -D "$tmp/body_peer.json" "$1" > "$tmp/hp"
    c1=$(awk '{print $14 + $15}' "/proc/$3/stat")
    awk -v d=$((c1 - c0)) -v t="$tck" '$1 == "[200]" {n = $2} /Total:/ {s = $2}
      END {printf "%.0f %.0f\n", n / s, d / t * 1e6 / n}' "$tmp/hp"; }
  m() { sort -g "$1" | awk -v f="$2" '{a[NR]=$1} END {m = (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2; printf f " (" f "–" f ")", m, a[1], a[NR]}'; }
  echo
  echo "Against the Node peer (onnxruntime-node $(node -p 'require("./bench/peers/node-ort/node_modules/onnxruntime-node/package.json").version'), same graph, no batching), L = $peer_l; anytime with max_batch_size 1 (as above) and 16 (the default); the three in turn, $rounds passes of $secs s each; CPU per answer of each server process:"
  echo
  echo "| concurrency | anytime, batch 1: answers/s | CPU µs | anytime, batch ≤ 16: answers/s | CPU µs | Node peer: answers/s | CPU µs | anytime batch 1 / peer | anytime batch ≤ 16 / peer |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for c in $peer_concs; do
    : > "$tmp/pa"; : > "$tmp/pac"; : > "$tmp/pb"; : > "$tmp/pbc"; : > "$tmp/pp"; : > "$tmp/ppc"; : > "$tmp/pr1"; : > "$tmp/pr16"
    for _ in $(seq 1 "$rounds"); do
      read -r a ac < <(hey_point "$url" "$c" "$spid")
      read -r b bc < <(hey_point "$url16" "$c" "$spid16")
      read -r p pc < <(hey_point "$purl" "$c" "$ppid")
      echo "$a" >> "$tmp/pa"; echo "$ac" >> "$tmp/pac"; echo "$b" >> "$tmp/pb"; echo "$bc" >> "$tmp/pbc"
      echo "$p" >> "$tmp/pp"; echo "$pc" >> "$tmp/ppc"
      awk -v a="$a" -v p="$p" 'BEGIN {print a / p}' >> "$tmp/pr1"
      awk -v a="$b" -v p="$p" 'BEGIN {print a / p}' >> "$tmp/pr16"
      echo "# c=$c: anytime b1 $a/s ($ac us), anytime b16 $b/s ($bc us), peer $p/s ($pc us)" >&2
    done
    echo "| $c | $(m "$tmp/pa" %.0f) | $(m "$tmp/pac" %.0f) | $(m "$tmp/pb" %.0f) | $(m "$tmp/pbc" %.0f) | $(m "$tmp/pp" %.0f) | $(m "$tmp/ppc" %.0f) | **$(m "$tmp/pr1" %.2fx)** | **$(m "$tmp/pr16" %.2fx)** |"
  done
  kill "$ppid" "$spid16" 2>/dev/null || true
fi
kill "$spid"; wait "$spid" 2>/dev/null || true
echo
echo "# load after: $(uptime)"
