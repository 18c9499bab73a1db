#!/usr/bin/env bash
# bench/cluster_sim.sh — the cluster simulation of docs/deployment.md
# ("Planning past one host"): `anytime simulate --cluster` runs the real
# planner in N = 1, 2, 4, 8, 16, 64 replicas behind a least-connections
# balancer that resends a 429 once, under open-loop and OpenAI-SDK clients,
# and this script keeps its table and JSON in results/ and draws
# docs/img/cluster_sim.png (goodput per replica against the pooled oracle's,
# and the share of attempts the balancer resent). Deterministic: the same
# binary and configuration give the same numbers on any host.
#
#   bench/cluster_sim.sh [BUILD_DIR]   (default build/; needs gnuplot)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build}/anytime
[ -x "$bin" ] || { echo "cluster_sim: no $bin (build first)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "cluster_sim: gnuplot is not installed (scripts/install-deps.sh test)" >&2; exit 1; }
cd "$here"
mkdir -p results docs/img
echo "cluster_sim: anytime simulate --cluster (a few minutes)" >&2
"$bin" simulate --cluster > results/cluster_sim.txt
"$bin" simulate --cluster --json > results/cluster_sim.jsonl
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# one data file per kind of client and load: N, good/rep, oracle/rep, resent share
for c in poisson openai; do
  for l in 0.8 1.3 2 3; do
    jq -r --arg c "$c" --argjson l "$l" 'select(.clients == $c and .load == $l) | [(.replicas // 1),
        (.goodput_per_replica_rps // .goodput_rps), (.oracle_rps / (.replicas // 1)),
        ((.retried // 0) / .sent)] | @tsv' results/cluster_sim.jsonl > "$tmp/$c-$l.tsv"
  done
done
cat > "$tmp/plot.gp" <<EOF
set terminal pngcairo size 1400,800 font 'sans,10'
set output 'docs/img/cluster_sim.png'
set multiplot layout 2,2 title 'anytime cluster simulation: N replicas, least-connections balancer, one resend of a 429 (anytime simulate --cluster)'
set logscale x 2
set xlabel 'replicas N'
set grid
set key outside right
do for [c in "poisson openai"] {
  set ylabel sprintf('%s: goodput per replica (req/s)', c)
  plot for [l in "0.8 1.3 2 3"] sprintf('$tmp/%s-%s.tsv', c, l) u 1:2 w linespoints t sprintf('rho %s', l), \
       for [l in "0.8 1.3 2 3"] sprintf('$tmp/%s-%s.tsv', c, l) u 1:3 w lines dt 2 lc 'gray40' t (l eq "3" ? 'oracle (pooled workers)' : '')
  set ylabel sprintf('%s: share of attempts resent', c)
  plot for [l in "0.8 1.3 2 3"] sprintf('$tmp/%s-%s.tsv', c, l) u 1:4 w linespoints t sprintf('rho %s', l)
}
unset multiplot
EOF
gnuplot "$tmp/plot.gp"
echo "cluster_sim: wrote results/cluster_sim.txt, results/cluster_sim.jsonl, docs/img/cluster_sim.png" >&2
