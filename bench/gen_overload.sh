#!/usr/bin/env bash
# bench/gen_overload.sh — the generation lane under closed-loop overload,
# with and without forecast admission (generator.admission: slo | queue).
# One `anytime serve` on configs/serving.yaml per (mode, concurrency); `hey`
# (a third-party load tool) keeps C clients sending POST /v1/completions
# (MAX_TOKENS tokens, temperature 0.7) back to back for SECS seconds, each
# request with the budgets x-ttft-ms / x-tpot-ms. Modes alternate within a
# pass; PASSES passes. Per run it reports answered (200) and refused (429)
# requests, p50 / p99 latency of the answered, goodput (answers within
# TTFT + MAX_TOKENS * TPOT, per second) and tokens/s from the server's own
# counter (anytime_gen_tokens_total). Rows also go to OUT.csv; with gnuplot,
# OUT.png plots goodput and the answered p99 against clients (median over
# passes, bars from the smallest to the largest).
#
#   bench/gen_overload.sh [CONC ("8 64 256")] [SECS (15)] [PASSES (2)]
#   env: TTFT_MS (500) TPOT_MS (50) MAX_TOKENS (32) BIN (build/anytime)
#        GEN_MODEL (decoder: models/decoder as the generator; chat for models/chat)
#        OUT (results/gen_overload -> .csv and .png)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/anytime}
conc=${1:-"8 64 256"} secs=${2:-15} passes=${3:-2}
ttft=${TTFT_MS:-500} tpot=${TPOT_MS:-50} ntok=${MAX_TOKENS:-32}
# the plain decoder writes until max_tokens (the chat model, the default
# generator, answers a plain prompt in a few tokens and stops)
gen_model=${GEN_MODEL:-decoder}
command -v hey >/dev/null || { echo "gen_overload: needs hey (apt-get install hey)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
out=${OUT:-$here/results/gen_overload}
mkdir -p "$(dirname "$out")"
echo "admission,clients,pass,answered,refused,other,p50_ms,p99_ms,goodput_rps,tokens_per_s" > "$out.csv"
deadline_s=$(awk -v a="$ttft" -v b="$tpot" -v n="$ntok" 'BEGIN{printf "%.4f", (a + n * b) / 1e3}')
body="{\"prompt\":\"the film is a masterpiece of quiet observation , and\",\"max_tokens\":$ntok,\"temperature\":0.7}"

run() { # mode conc pass
  sed -e "s/^  admission: .*/  admission: $1/" -e "s|^  model: \.\./models/chat$|  model: ../models/$gen_model|" \
    "$here/configs/serving.yaml" > "$here/configs/.gen_overload_$1.yaml"
  grep -q "^  admission: $1\$" "$here/configs/.gen_overload_$1.yaml" ||
    { echo "gen_overload: configs/serving.yaml has no generator 'admission:' line" >&2; exit 1; }
  rm -f "$tmp/port"
  "$bin" serve --config "$here/configs/.gen_overload_$1.yaml" --port 0 --port-file "$tmp/port" \
    >"$tmp/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  local base="http://127.0.0.1:$(cat "$tmp/port")"
  curl -s "$base/v1/completions" -d "$body" >/dev/null  # warm
  local t0 t1
  t0=$(curl -s "$base/metrics" | awk '/^anytime_gen_tokens_total/{print $2}')
  hey -z "${secs}s" -c "$2" -m POST -T application/json -H "x-ttft-ms: $ttft" \
    -H "x-tpot-ms: $tpot" -d "$body" -o csv "$base/v1/completions" > "$tmp/hey.csv" 2>/dev/null || true
  t1=$(curl -s "$base/metrics" | awk '/^anytime_gen_tokens_total/{print $2}')
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$here/configs/.gen_overload_$1.yaml"
  # hey csv: response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset
  awk -F, 'NR > 1 && $7 == 200 {print $1}' "$tmp/hey.csv" | sort -g > "$tmp/lat"
  local ok refused other
  ok=$(wc -l < "$tmp/lat")
  refused=$(awk -F, 'NR > 1 && $7 == 429' "$tmp/hey.csv" | wc -l)
  other=$(awk -F, 'NR > 1 && $7 != 200 && $7 != 429' "$tmp/hey.csv" | wc -l)
  awk -v mode="$1" -v c="$2" -v secs="$secs" -v dl="$deadline_s" -v tok=$((t1 - t0)) \
      -v refused="$refused" -v other="$other" -v pass="$3" -v csv="$out.csv" '
    { lat[NR] = $1; if ($1 <= dl) good++ }
    END {
      n = NR
      p50 = n ? lat[int(0.50 * (n - 1)) + 1] : 0; p99 = n ? lat[int(0.99 * (n - 1)) + 1] : 0
      printf "| %s | %d | %d | %d | %d | %.0f | %.0f | %.1f | %.0f | %.1f |\n", mode, c, n, refused, other,
             p50 * 1e3, p99 * 1e3, good / secs, tok / secs, n ? tok / n : 0
      printf "%s,%d,%d,%d,%d,%d,%.1f,%.1f,%.2f,%.0f\n", mode, c, pass, n, refused, other,
             p50 * 1e3, p99 * 1e3, good / secs, tok / secs >> csv
    }' "$tmp/lat"
}

echo "# host: $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
echo "# budgets: x-ttft-ms $ttft, x-tpot-ms $tpot, $ntok tokens: an answer counts within ${deadline_s}s"
echo "# generator: models/$gen_model"
echo "| admission | clients | answered | refused | other | p50 ms | p99 ms | goodput req/s | tokens/s | tokens/answer |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for p in $(seq 1 "$passes"); do
  for c in $conc; do
    for mode in queue slo; do run "$mode" "$c" "$p"; done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# the figure: per (admission, clients) the median and range over passes
med() { sort -g | awk '{ v[NR] = $1 } END { n = NR; if (!n) exit
  printf "%s %s %s", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n] }'; }
if command -v gnuplot >/dev/null; then
  for mode in queue slo; do
    : > "$tmp/$mode.dat"
    for c in $conc; do
      g=$(awk -F, -v m="$mode" -v c="$c" 'NR > 1 && $1 == m && $2 == c { print $9 }' "$out.csv" | med)
      q=$(awk -F, -v m="$mode" -v c="$c" 'NR > 1 && $1 == m && $2 == c { print $8 }' "$out.csv" | med)
      echo "$c $g $q" >> "$tmp/$mode.dat"
    done
  done
  budget=$(awk -v a="$ttft" -v b="$tpot" -v n="$ntok" 'BEGIN { print a + n * b }')
  gnuplot <<GP
set terminal pngcairo size 1000,420 font ",10"
set output "$out.png"
set multiplot layout 1,2 title "generation lane, closed-loop hey clients, $ntok tokens, budget TTFT $ttft ms + $ntok x TPOT $tpot ms"
set logscale x 2
set xlabel "clients"
set ylabel "goodput (answers within budget per s)"
set yrange [0:*]
plot "$tmp/queue.dat" u 1:2:3:4 w yerrorlines t "admission: queue (before)", \
     "$tmp/slo.dat" u 1:2:3:4 w yerrorlines t "admission: slo (forecast)"
set ylabel "p99 latency of the answered (ms)"
set yrange [*:*]
set logscale y
plot "$tmp/queue.dat" u 1:5:6:7 w yerrorlines t "queue", "$tmp/slo.dat" u 1:5:6:7 w yerrorlines t "slo", \
     $budget w l dt 2 t "budget"
unset multiplot
GP
  echo "# figure: $out.png; rows: $out.csv"
else
  echo "# gnuplot is not installed: no figure (apt-get install gnuplot-nox); rows: $out.csv" >&2
fi
