#!/usr/bin/env bash
# tests/integration/serve_soak.sh — a bounded soak on loopback against the
# shipped configuration (configs/serving.yaml: the default family and the
# generation lane), issue #17 point 5:
#   - SOAK_S seconds (default 60; 30 under the sanitizer build, which is ~5x
#     slower) of open-loop Poisson load at 3x the measured capacity, plus 48
#     closed-loop clients that resend every 429 at once, plus a trickle of
#     /v1/completions;
#   - every request answered exactly once: each client's count by status
#     equals the server's anytime_requests_total by status over the soak
#     (no transport errors, no status other than 200 and 429);
#   - memory bounded: the server's RSS at the end within 10 % of the
#     highest RSS sampled between one and two thirds into the soak
#     (sanitizer build: 50 %, its allocator keeps freed memory in
#     quarantine), or, past that, holding within 2 % through a third of
#     the soak's length more load (a step of the heap, not a leak);
#   - SIGTERM while load is still arriving: the server exits 0 with no
#     sanitizer report (serve_drain.sh checks what each request in flight
#     is answered).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
san=${ANYTIME_TEST_SANITIZED:-0}
SOAK_S=${SOAK_S:-$([ "$san" = 1 ] && echo 30 || echo 60)}
bound=$([ "$san" = 1 ] && echo 1.50 || echo 1.10)
start_server "$ANYTIME_SOURCE_DIR/configs/serving.yaml"
# texts from the held-out reviews: every request's body differs, as independent
# clients' do (identical bodies on a pooled connection look like one client's
# early retry to the hold rule, holdq.h, and are held to their slot)
lg() { "$ANYTIME_BIN" loadgen --url "$BASE/predict" --json "$@"; }
num() { sed -E "s/.*\"$1\":([0-9.]+).*/\1/"; }
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$SERVER_PID/status"; }
counters() { # status -> the server's /predict answers with that status
  curl -s "$BASE/metrics" | awk -v st="$1" '
    /^anytime_requests_total\{route="\/predict"/ && $0 ~ "status=\"" st "\"" { n += $2 }
    END { printf "%d\n", n }'
}
others() { # /predict answers with any status but 200 and 429
  curl -s "$BASE/metrics" | awk '
    /^anytime_requests_total\{route="\/predict"/ && $0 !~ /status="(200|429)"/ { n += $2 }
    END { printf "%d\n", n }'
}

# capacity: 4 clients back to back for 2 s
cap=$(lg --clients 4 --duration 2 | num answered_rps)
rate=$(awk -v c="$cap" 'BEGIN { printf "%d", 3 * c }')
echo "soak: capacity ${cap%.*} req/s, open loop at $rate req/s + 48 retrying clients for ${SOAK_S}s"

# warm-up at the soak's load, then the RSS the bound is measured against
lg --rate "$rate" --duration 5 >/dev/null
lg --clients 48 --think-ms 20 --retry now --duration 5 >/dev/null
ok0=$(counters 200) rej0=$(counters 429) oth0=$(others)

lg --rate "$rate" --duration "$SOAK_S" --seed 7 --out "$SERVE_TMP/open.csv" > "$SERVE_TMP/open.json" &
p1=$!
lg --clients 48 --think-ms 20 --retry now --duration "$SOAK_S" --seed 8 --out "$SERVE_TMP/closed.csv" \
  > "$SERVE_TMP/closed.json" &
p2=$!
gen_fail=0
start=$(date +%s) end=$(( $(date +%s) + SOAK_S )) rss0="" rss_third=""
while [ "$(date +%s)" -lt "$end" ]; do # a trickle of generations beside it
  # the reference RSS: the highest sampled (once a second) between one and
  # two thirds into the soak. After a 5 s warm-up the heap had not settled
  # (CI: 77.7 MB then, 90.7 MB at the end, while sampled every 10 s through
  # a 60 s soak it stayed at 84.8-84.9 MB); a third in was still too early
  # on a loaded CI host (2026-12-02: 77.8 MB a third in, 90.7 at the end,
  # twice in three CI runs, while a quiet run read 84.2 and 84.2). A leak
  # still shows: it grows through the last third as well.
  el=$(( $(date +%s) - start ))
  if [ "$el" -ge $(( SOAK_S / 3 )) ] && [ "$el" -le $(( 2 * SOAK_S / 3 )) ]; then
    r=$(rss_kb)
    [ -z "$rss_third" ] && rss_third=$r
    [ -z "$rss0" ] || [ "$r" -gt "$rss0" ] && rss0=$r
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/completions" \
              -d '{"prompt":"the film","max_tokens":8}')
  case "$code" in 200|429) ;; *) gen_fail=$((gen_fail + 1)) ;; esac
  sleep 1
done
wait "$p1" "$p2"
ok1=$(counters 200) rej1=$(counters 429) oth1=$(others)
rss1=$(rss_kb)

o_ok=$(num answered < "$SERVE_TMP/open.json") o_rej=$(num rejected < "$SERVE_TMP/open.json")
o_err=$(num errors < "$SERVE_TMP/open.json") o_sent=$(num sent < "$SERVE_TMP/open.json")
c_ok=$(num answered < "$SERVE_TMP/closed.json") c_rej=$(num rejected < "$SERVE_TMP/closed.json")
c_err=$(num errors < "$SERVE_TMP/closed.json") c_sent=$(num sent < "$SERVE_TMP/closed.json")
echo "soak: open loop sent $o_sent (200: $o_ok, 429: $o_rej, errors: $o_err);" \
     "closed loop sent $c_sent (200: $c_ok, 429: $c_rej, errors: $c_err)"
echo "soak: server 200 +$((ok1 - ok0)), 429 +$((rej1 - rej0)), other +$((oth1 - oth0));" \
     "RSS ${rss_third} kB a third in, at most ${rss0} kB until two thirds in, ${rss1} kB at the end"
if [ "$o_err" != 0 ] || [ "$c_err" != 0 ]; then
  for f in open closed; do # status column: what the errors were
    echo "$f: $(head -1 "$SERVE_TMP/$f.csv")"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i; next }
             $c != 200 && $c != 429 { n[$c]++ } END { for (k in n) print "  status " k ": " n[k] }' "$SERVE_TMP/$f.csv"
  done
  fail "transport errors or unexpected statuses at the clients"
fi
[ $((o_ok + o_rej)) = "$o_sent" ] && [ $((c_ok + c_rej)) = "$c_sent" ] ||
  fail "a client's answers do not add up to what it sent"
[ $((ok1 - ok0)) = $((o_ok + c_ok)) ] || fail "200s: server $((ok1 - ok0)), clients $((o_ok + c_ok))"
[ $((rej1 - rej0)) = $((o_rej + c_rej)) ] || fail "429s: server $((rej1 - rej0)), clients $((o_rej + c_rej))"
[ $((oth1 - oth0)) = 0 ] || fail "the server answered $((oth1 - oth0)) requests with another status"
[ "$gen_fail" = 0 ] || fail "$gen_fail generation requests answered with neither 200 nor 429"
[ "$o_ok" -gt 0 ] && [ "$c_ok" -gt 0 ] && [ "$o_rej" -gt 0 ] ||
  fail "the soak did not overload the server (no 429 in the open loop) or answered nothing"
# A leak grows while load lasts; a one-time step of the heap (CI, 2026-12-04:
# flat at 95.4 MB from a third to two thirds in, 107.1 MB at the end) stops.
# Past the bound, the same load runs SOAK_S / 3 s more: the RSS must then
# hold within 2 % of the end value, or it is a leak.
if ! awk -v a="$rss0" -v b="$rss1" -v k="$bound" 'BEGIN { exit !(b <= a * k) }'; then
  lg --rate "$rate" --duration $(( SOAK_S / 3 )) --seed 9 >/dev/null
  rss2=$(rss_kb)
  awk -v b="$rss1" -v c="$rss2" 'BEGIN { exit !(c <= b * 1.02) }' ||
    fail "RSS grew from $rss0 kB to $rss1 kB (bound x$bound) and on to $rss2 kB in $(( SOAK_S / 3 )) s more load"
  echo "soak: RSS stepped from $rss0 kB to $rss1 kB (past x$bound) and then held: $rss2 kB after $(( SOAK_S / 3 )) s more load"
fi

# SIGTERM under load: exit 0, no sanitizer report
term=$(mktemp) # outside SERVE_TMP, which goes with the server
lg --clients 16 --think-ms 0 --retry now --duration 4 > "$term" &
p3=$!
sleep 1.5
kill -TERM "$SERVER_PID"
wait_server_exit
wait "$p3" || true
t_sent=$(num sent < "$term") t_ok=$(num answered < "$term")
t_rej=$(num rejected < "$term") t_err=$(num errors < "$term")
echo "soak: during SIGTERM sent $t_sent (200: $t_ok, 429/503 and refused connections after it: $t_rej / $t_err)"
[ "${t_ok:-0}" -gt 0 ] 2>/dev/null || fail "nothing answered before SIGTERM ($(head -c 300 "$term"))"
rm -f "$term"
echo "serve_soak: PASS"
