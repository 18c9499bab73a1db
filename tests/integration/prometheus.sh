#!/usr/bin/env bash
# tests/integration/prometheus.sh — a real Prometheus (Debian's 2.42)
# scraping a real server (issue 19, item 5):
#   * `promtool check metrics` finds nothing wrong in /metrics after
#     traffic on every lane (classify, embed, a refusal, a generation);
#   * deploy/prometheus/anytime.rules.yml passes `promtool check rules`
#     and loads into a Prometheus that scrapes the server every second;
#   * after 60 answered requests and 5 refused ones the Prometheus HTTP
#     API gives exactly the server's own counters (answers by status,
#     refusals by reason, the variant's admitted texts), and every
#     recording rule has produced a series (goodput, refusal rate, the
#     variant mix = 1 for the only variant, refused share);
#   * every expression in deploy/grafana/anytime-dashboard.json names only
#     series the exposition or the rules define.
# Seen to fail: with the refusal counter misnamed in the rules
# (anytime_rejected_total), "FAIL: anytime:refused:rate1m: no series".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
for t in prometheus promtool jq; do
  command -v $t >/dev/null || fail "$t is not installed (scripts/install-deps.sh test)"
done
ROOT=$(cd "$ANYTIME_TEST_DATA/../.." && pwd)
RULES="$ROOT/deploy/prometheus/anytime.rules.yml"
DASH="$ROOT/deploy/grafana/anytime-dashboard.json"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
PW="$SERVE_TMP/prom"; mkdir -p "$PW"

# traffic on every lane, then the exposition through promtool
for i in $(seq 1 60); do curl -s -o /dev/null -X POST "$BASE/predict" -d '{"inputs":"the movie was good"}'; done
for i in $(seq 1 5); do curl -s -o /dev/null -X POST "$BASE/predict" -H 'x-deadline-ms: 0.001' -d '{"inputs":"a"}'; done
req POST /embed '{"inputs":"an embedding"}'; expect 200
req POST /v1/completions '{"prompt":"the","max_tokens":4}'; expect 200
req GET /metrics
printf '%s\n' "$BODY" > "$PW/metrics.txt"
promtool check metrics < "$PW/metrics.txt" > "$PW/lint" 2>&1 || fail "promtool check metrics: $(cat "$PW/lint")"
promtool check rules "$RULES" > "$PW/rules" 2>&1 || fail "promtool check rules: $(cat "$PW/rules")"

# Prometheus on a free loopback port, scraping every second. The port is
# taken below the kernel's ephemeral range: a port there can be the local
# end of another test's client connection, which a connect probe does not
# see and bind refuses (seen 2026-12-02 in CI beside serve_soak's 300,000
# requests: "bind: address already in use" on 34840). Prometheus is
# started again on another port if its bind still fails.
eph_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$eph_lo" -gt 12000 ] 2>/dev/null || eph_lo=32768
free_port() {
  local p
  for p in $(shuf -i 10000-$((eph_lo - 1)) -n 20); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    echo "$p"; return 0
  done
  return 1
}
cat > "$PW/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$PW/rules.yml"]
scrape_configs:
  - job_name: anytime
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
EOF
# the shipped rules, evaluated every second here (15 s in the file)
sed 's/interval: 15s/interval: 1s/' "$RULES" > "$PW/rules.yml"
PROM_PID=""
trap 'kill -9 "$SERVER_PID" $PROM_PID 2>/dev/null; rm -rf "$SERVE_TMP"' EXIT
for attempt in 1 2 3; do
  pport=$(free_port) || fail "no free port for Prometheus below $eph_lo"
  rm -rf "$PW/data"
  prometheus --config.file="$PW/prometheus.yml" --storage.tsdb.path="$PW/data" \
    --web.listen-address="127.0.0.1:$pport" > "$PW/prometheus.log" 2>&1 &
  PROM_PID=$!
  sleep 0.5
  grep -q "address already in use" "$PW/prometheus.log" || break
  kill -9 $PROM_PID 2>/dev/null; wait $PROM_PID 2>/dev/null || true
  echo "prometheus: port $pport taken, trying another" >&2
done
PAPI="http://127.0.0.1:$pport/api/v1"
q() { # PromQL -> the API's JSON result array
  curl -s --get "$PAPI/query" --data-urlencode "query=$1" | jq -c '.data.result'
}
qv() { q "$1" | jq -r 'if length == 1 then .[0].value[1] else "n=\(length)" end'; }
for _ in $(seq 1 150); do
  [ "$(qv 'up{job="anytime"}' 2>/dev/null)" = 1 ] && break
  kill -0 $PROM_PID 2>/dev/null || fail "Prometheus exited: $(tail -5 "$PW/prometheus.log")"
  sleep 0.2
done
[ "$(qv 'up{job="anytime"}')" = 1 ] || fail "Prometheus never scraped the server: $(tail -5 "$PW/prometheus.log")"
# keep traffic flowing for the rates, then stop and let two scrapes pass
for i in $(seq 1 3); do
  for k in $(seq 1 20); do curl -s -o /dev/null -X POST "$BASE/predict" -d '{"inputs":"a good plot"}'; done
  sleep 1
done
sleep 2.5
req GET /metrics
own() { awk -v k="$1" 'index($0, k) == 1 { print $NF }' <<<"$BODY"; }
ok200=$(own 'anytime_requests_total{route="/predict",model="tiny-classifier",variant="a",status="200",protocol="http"}')
inf=$(own 'anytime_rejections_total{model="tiny-classifier",reason="infeasible"}')
adm=$(own 'anytime_variant_admitted_total{model="tiny-classifier",variant="a",frontier="yes"}')
[ "$ok200" = 120 ] || fail "the server counted $ok200 answers, want 120"
p200=$(qv 'anytime_requests_total{route="/predict",model="tiny-classifier",status="200"}')
pinf=$(qv 'anytime_rejections_total{model="tiny-classifier",reason="infeasible"}')
padm=$(qv 'anytime_variant_admitted_total{model="tiny-classifier",variant="a"}')
[ "$p200" = "$ok200" ] || fail "Prometheus has $p200 answers, the server $ok200"
[ "$pinf" = "$inf" ] && [ "$inf" = 5 ] || fail "refusals: Prometheus $pinf, the server $inf, sent 5"
[ "$padm" = "$adm" ] || fail "admitted texts: Prometheus $padm, the server $adm"
# every recording rule has a series; the only variant's share is 1
for rule in $(awk '/record:/ { print $3 }' "$RULES"); do
  [ "$(q "$rule" | jq length)" -ge 1 ] || fail "$rule: no series"
done
share=$(qv 'anytime:variant_share:rate1m{model="tiny-classifier",variant="a"}')
awk -v s="$share" 'BEGIN { exit !(s > 0.999 && s < 1.001) }' || fail "variant share of the only variant: $share"
good=$(qv 'anytime:answered:rate1m{model="tiny-classifier"}')
awk -v g="$good" 'BEGIN { exit !(g > 0) }' || fail "goodput rule: $good"
# the dashboard names only series that exist
known=$( { grep -v '^#' "$PW/metrics.txt" | sed 's/[{ ].*//' | sed -E 's/_(bucket|sum|count)$//'
           awk '/record:/ { print $3 }' "$RULES"; } | sort -u)
for m in $(jq -r '.panels[].targets[].expr' "$DASH" | grep -oE 'anytime[a-z_:0-9]*' | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
  grep -qx "$m" <<<"$known" || fail "the dashboard uses $m, which neither /metrics nor the rules define"
done
jq -e '.panels | length > 0' "$DASH" >/dev/null || fail "dashboard has no panels"
kill -TERM $PROM_PID; wait $PROM_PID || true
stop_server
echo "prometheus: promtool clean; $p200 answers, $pinf refusals and $padm admitted texts read back through the API; $(awk '/record:/' "$RULES" | wc -l) rules evaluated"
