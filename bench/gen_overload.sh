#!/usr/bin/env bash
# bench/gen_overload.sh — the generation lane under overload, one `anytime
# serve` on configs/serving.yaml per (mode, load): with and without forecast
# admission (generator.admission: slo | queue), and with one decoder variant
# or a cheaper fallback variant chosen per request (generator.variant,
# generator.fallback_variant).
#
# A mode is ADMISSION[:VARIANT[+FALLBACK]], e.g. "queue", "slo:fp32",
# "slo:fp32+int8" (fp32 first, int8 when fp32's forecast misses the
# budgets), "slo:int8"; no VARIANT keeps the config's.
# Load, LOAD=closed (default): `hey` (a third-party load tool) keeps C
# clients sending POST /v1/completions back to back for SECS seconds, a
# refused client sending again at once (a retrying client). LOAD=open:
# `anytime loadgen --completions` sends at R requests per second (Poisson,
# open loop) whatever was answered. Every request has MAX_TOKENS tokens,
# temperature 0.7 and the budgets x-ttft-ms / x-tpot-ms. Modes alternate
# within a pass; PASSES passes. Per run: answered (200) and refused (429)
# requests, p50 / p99 latency of the answered, goodput (answers within
# TTFT + MAX_TOKENS * TPOT, per second, and in tokens per second: that
# times the tokens per answer), tokens/s from the server's counter
# (anytime_gen_tokens_total), the share admission gave the fallback
# variant (anytime_gen_variant_chosen_total), and with LOAD=open the TTFT
# and TPOT attainment: answers whose server-measured time to first token /
# per output token (x-time-to-first-token, x-time-per-output-token) is
# within its budget, over all requests sent. Rows go to OUT.csv; with
# gnuplot, OUT.png plots goodput and the answered p99 against the load
# (median over passes, bars from the smallest to the largest).
#
#   bench/gen_overload.sh [LOADS ("8 64 256" clients, or rates)] [SECS (15)] [PASSES (2)]
#   env: MODES ("queue slo") LOAD (closed|open) TTFT_MS (500) TPOT_MS (50)
#        MAX_TOKENS (32) BIN (build/anytime)
#        GEN_MODEL (decoder: models/decoder as the generator; chat for models/chat)
#        OUT (results/gen_overload -> .csv and .png)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/anytime}
conc=${1:-"8 64 256"} secs=${2:-15} passes=${3:-2}
ttft=${TTFT_MS:-500} tpot=${TPOT_MS:-50} ntok=${MAX_TOKENS:-32}
modes=${MODES:-"queue slo"} load=${LOAD:-closed}
# the plain decoder writes until max_tokens (the chat model, the default
# generator, answers a plain prompt in a few tokens and stops)
gen_model=${GEN_MODEL:-decoder}
case $load in
  closed) command -v hey >/dev/null || { echo "gen_overload: needs hey (apt-get install hey)" >&2; exit 1; } ;;
  open) ;;
  *) echo "gen_overload: LOAD must be closed or open" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
out=${OUT:-$here/results/gen_overload}
mkdir -p "$(dirname "$out")"
echo "mode,load,pass,answered,refused,other,p50_ms,p99_ms,goodput_rps,tokens_per_s,goodput_tokens_per_s,fallback_share,ttft_attained,tpot_attained" > "$out.csv"
deadline_s=$(awk -v a="$ttft" -v b="$tpot" -v n="$ntok" 'BEGIN{printf "%.4f", (a + n * b) / 1e3}')
prompt="the film is a masterpiece of quiet observation , and"
body="{\"prompt\":\"$prompt\",\"max_tokens\":$ntok,\"temperature\":0.7}"
metric() { # base name [variant] -> the sum of the metric's samples (of that variant)
  curl -s "$1/metrics" | awk -v m="$2" -v v="${3:+variant=\"$3\"}" '
    index($1, m "{") == 1 && index($1, v) { s += $2 } END { printf "%d", s }'
}

run() { # mode load pass
  local adm=${1%%:*} var="" fb=""
  case $1 in *:*) var=${1#*:}; fb=${var#*+}; [ "$fb" = "$var" ] && fb=""; var=${var%%+*} ;; esac
  local cfg="$here/configs/.gen_overload_$$.yaml"
  sed -e "s/^  admission: .*/  admission: $adm/" -e "s|^  model: \.\./models/chat$|  model: ../models/$gen_model|" \
    "$here/configs/serving.yaml" > "$cfg"
  grep -q "^  admission: $adm\$" "$cfg" ||
    { echo "gen_overload: configs/serving.yaml has no generator 'admission:' line" >&2; exit 1; }
  if [ -n "$var" ]; then
    sed -i "s/^  variant: .*/  variant: $var/" "$cfg"
    grep -q "^  variant: $var\$" "$cfg" || { echo "gen_overload: no generator 'variant:' line" >&2; exit 1; }
  fi
  [ -z "$fb" ] || sed -i "s/^  variant: \(.*\)/  variant: \1\n  fallback_variant: $fb/" "$cfg"
  rm -f "$tmp/port"
  "$bin" serve --config "$cfg" --port 0 --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || { echo "gen_overload: the server did not start: $(tail -n 3 "$tmp/server.log")" >&2; exit 1; }
  local base="http://127.0.0.1:$(cat "$tmp/port")"
  curl -s "$base/v1/completions" -d "$body" >/dev/null  # warm
  local t0 t1 f0 f1 c0 c1
  t0=$(metric "$base" anytime_gen_tokens_total)
  c0=$(metric "$base" anytime_gen_variant_chosen_total)
  f0=$(metric "$base" anytime_gen_variant_chosen_total "$fb")
  [ -n "$fb" ] || f0=0
  local ok refused other
  if [ "$load" = closed ]; then
    hey -z "${secs}s" -c "$2" -m POST -T application/json -H "x-ttft-ms: $ttft" \
      -H "x-tpot-ms: $tpot" -d "$body" -o csv "$base/v1/completions" > "$tmp/hey.csv" 2>/dev/null || true
    # hey csv: response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset
    awk -F, 'NR > 1 && $7 == 200 {print $1, -1, -1}' "$tmp/hey.csv" | sort -g > "$tmp/lat"
    refused=$(awk -F, 'NR > 1 && $7 == 429' "$tmp/hey.csv" | wc -l)
    other=$(awk -F, 'NR > 1 && $7 != 200 && $7 != 429' "$tmp/hey.csv" | wc -l)
  else
    "$bin" loadgen --url "$base/v1/completions" --rate "$2" --duration "$secs" --completions "$ntok" \
      --text "$prompt" --ttft-ms "$ttft" --tpot-ms "$tpot" --deadline-ms "$(awk -v d="$deadline_s" 'BEGIN { print d * 1e3 }')" \
      --connections 4096 --late-ms 1000000 --out "$tmp/lg.csv" > /dev/null 2>&1 || true
    # loadgen csv: scheduled_s,sent_s,status,latency_s,... 14 ttft_s, 15 tpot_s (the
    # server's x-time-to-first-token / x-time-per-output-token)
    awk -F, 'NR > 1 && $3 == 200 {print $4, ($14 == "" ? -1 : $14), ($15 == "" ? -1 : $15)}' \
      "$tmp/lg.csv" | sort -g > "$tmp/lat"
    refused=$(awk -F, 'NR > 1 && $3 == 429' "$tmp/lg.csv" | wc -l)
    other=$(awk -F, 'NR > 1 && $3 != 200 && $3 != 429' "$tmp/lg.csv" | wc -l)
  fi
  t1=$(metric "$base" anytime_gen_tokens_total)
  c1=$(metric "$base" anytime_gen_variant_chosen_total)
  f1=$(metric "$base" anytime_gen_variant_chosen_total "$fb")
  [ -n "$fb" ] || f1=0
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$cfg"
  awk -v mode="$1" -v c="$2" -v secs="$secs" -v dl="$deadline_s" -v tok=$((t1 - t0)) \
      -v refused="$refused" -v other="$other" -v pass="$3" -v csv="$out.csv" \
      -v fb=$((f1 - f0)) -v chosen=$((c1 - c0)) -v bt="$ttft" -v bp="$tpot" '
    { lat[NR] = $1; if ($1 <= dl) good++
      if ($2 >= 0) { timed++; if ($2 * 1e3 <= bt) t_ok++; if ($3 * 1e3 <= bp) p_ok++ } }
    END {
      n = NR
      p50 = n ? lat[int(0.50 * (n - 1)) + 1] : 0; p99 = n ? lat[int(0.99 * (n - 1)) + 1] : 0
      tpa = n ? tok / n : 0; share = chosen ? fb / chosen : 0
      # TTFT / TPOT attained: answers within each budget over all requests
      # sent (a refusal attains neither); only where the load tool keeps the
      # answer headers (loadgen), "-" for hey
      sent = n + refused + other
      ta = timed && sent ? sprintf("%.3f", t_ok / sent) : "-"
      pa = timed && sent ? sprintf("%.3f", p_ok / sent) : "-"
      printf "| %s | %s | %d | %d | %d | %.0f | %.0f | %.1f | %.0f | %.0f | %.2f | %.1f | %s | %s |\n", mode, c, n,
             refused, other, p50 * 1e3, p99 * 1e3, good / secs, tok / secs, good * tpa / secs, share, tpa, ta, pa
      printf "%s,%s,%d,%d,%d,%d,%.1f,%.1f,%.2f,%.0f,%.0f,%.3f,%s,%s\n", mode, c, pass, n, refused, other,
             p50 * 1e3, p99 * 1e3, good / secs, tok / secs, good * tpa / secs, share, ta, pa >> csv
    }' "$tmp/lat"
}

echo "# host: $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
echo "# budgets: x-ttft-ms $ttft, x-tpot-ms $tpot, $ntok tokens: an answer counts within ${deadline_s}s"
echo "# generator: models/$gen_model; load: $load ($([ "$load" = closed ] && echo "hey clients" || echo "requests/s, Poisson"))"
echo "| mode | load | answered | refused | other | p50 ms | p99 ms | goodput req/s | tokens/s | goodput tokens/s | fallback share | tokens/answer | TTFT attained | TPOT attained |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for p in $(seq 1 "$passes"); do
  for c in $conc; do
    for mode in $modes; do run "$mode" "$c" "$p"; done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# the figure: per (admission, clients) the median and range over passes
med() { sort -g | awk '{ v[NR] = $1 } END { n = NR; if (!n) exit
  printf "%s %s %s", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n] }'; }
if command -v gnuplot >/dev/null; then
  plots_g="" plots_q="" i=0
  for mode in $modes; do
    i=$((i + 1))
    : > "$tmp/m$i.dat"
    for c in $conc; do
      g=$(awk -F, -v m="$mode" -v c="$c" 'NR > 1 && $1 == m && $2 == c { print $9 }' "$out.csv" | med)
      q=$(awk -F, -v m="$mode" -v c="$c" 'NR > 1 && $1 == m && $2 == c { print $8 }' "$out.csv" | med)
      echo "$c $g $q" >> "$tmp/m$i.dat"
    done
    plots_g="$plots_g${plots_g:+, }\"$tmp/m$i.dat\" u 1:2:3:4 w yerrorlines t \"$mode\""
    plots_q="$plots_q${plots_q:+, }\"$tmp/m$i.dat\" u 1:5:6:7 w yerrorlines t \"$mode\""
  done
  budget=$(awk -v a="$ttft" -v b="$tpot" -v n="$ntok" 'BEGIN { print a + n * b }')
  xlabel=$([ "$load" = closed ] && echo "clients (hey, closed loop)" || echo "offered requests/s (open loop)")
  gnuplot <<GP
set terminal pngcairo size 1000,420 font ",10"
set output "$out.png"
set multiplot layout 1,2 title "generation lane, $ntok tokens, budget TTFT $ttft ms + $ntok x TPOT $tpot ms"
set logscale x 2
set xlabel "$xlabel"
set ylabel "goodput (answers within budget per s)"
set yrange [0:*]
plot $plots_g
set ylabel "p99 latency of the answered (ms)"
set yrange [*:*]
set logscale y
plot $plots_q, $budget w l dt 2 t "budget"
unset multiplot
GP
  echo "# figure: $out.png; rows: $out.csv"
else
  echo "# gnuplot is not installed: no figure (apt-get install gnuplot-nox); rows: $out.csv" >&2
fi
