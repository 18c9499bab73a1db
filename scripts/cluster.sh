#!/usr/bin/env bash
# scripts/cluster.sh — N anytime replicas on loopback behind nginx, which
# retries a replica's 429 on another (deploy/nginx/anytime.conf).
#
#   scripts/cluster.sh start N [--port P] [--config FILE] [--dir DIR] [-- SERVE ARGS...]
#       nginx on 127.0.0.1:P (default 8000); each replica on a free loopback
#       port the kernel picks (--port 0; `status` lists them), so replicas
#       never collide with other listeners; returns once every replica answers
#       /v2/health/ready and nginx answers
#   scripts/cluster.sh stop [--dir DIR]
#       nginx first (no new requests), then SIGTERM to every replica: each
#       finishes what it admitted and exits 0 (non-zero exit if one did not)
#   scripts/cluster.sh status [--dir DIR]
#
# State (pids, ports, logs, the generated nginx.conf) lives in DIR, default
# ${TMPDIR:-/tmp}/anytime-cluster. Needs nginx (apt-get install nginx) and a
# built anytime (ANYTIME_BIN, default build/anytime).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ANYTIME_BIN:-$here/build/anytime}
dir=${TMPDIR:-/tmp}/anytime-cluster
port=8000 config="" n=0
die() { echo "cluster: $*" >&2; exit 1; }
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

cmd=${1:-}; [ -n "$cmd" ] || { usage >&2; exit 2; }; shift
case "$cmd" in -h|--help) usage; exit 0 ;; esac
if [ "$cmd" = start ]; then
  n=${1:-}; shift || true
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "start needs a replica count 1..32"
fi
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

stop_all() {
  local rc=0
  local npid; npid=$(cat "$dir/nginx.pid" 2>/dev/null || true)
  if [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null; then
    kill -QUIT "$npid"   # graceful: finish the requests it holds
    for _ in $(seq 1 100); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
  fi
  for f in "$dir"/replica-*.pid; do
    [ -e "$f" ] || continue
    local pid; pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || continue
  done
  for f in "$dir"/replica-*.pid; do
    [ -e "$f" ] || continue
    local pid; pid=$(cat "$f")
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster: replica $pid did not exit within 30 s of SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rc=1
    fi
    # the wrapper subshell writes the exit file just after the server exits:
    # give it a moment rather than reading a file that is not there yet
    for _ in $(seq 1 100); do [ -s "${f%.pid}.exit" ] && break; sleep 0.05; done
    local code; code=$(cat "${f%.pid}.exit" 2>/dev/null || echo "?")
    if [ "$code" != 0 ]; then echo "cluster: replica $(basename "${f%.pid}") exited $code" >&2; rc=1; fi
    rm -f "$f"
  done
  rm -f "$dir/nginx.pid"
  return $rc
}

case "$cmd" in
  stop) stop_all && echo "cluster: stopped"; exit $? ;;
  status)
    [ -f "$dir/nginx.pid" ] && kill -0 "$(cat "$dir/nginx.pid")" 2>/dev/null &&
      echo "nginx: pid $(cat "$dir/nginx.pid"), http://127.0.0.1:$(cat "$dir/port")" || echo "nginx: not running"
    for f in "$dir"/replica-*.pid; do
      [ -e "$f" ] || continue
      kill -0 "$(cat "$f")" 2>/dev/null && s=running || s=gone
      echo "$(basename "${f%.pid}"): pid $(cat "$f") port $(cat "${f%.pid}.port" 2>/dev/null) $s"
    done
    exit 0 ;;
  start) ;;
  *) die "unknown command '$cmd' (start, stop, status)" ;;
esac

command -v nginx >/dev/null || die "nginx is not installed (apt-get install nginx)"
[ -x "$bin" ] || die "no anytime binary at $bin (build it, or set ANYTIME_BIN)"
mkdir -p "$dir/tmp"
[ ! -f "$dir/nginx.pid" ] || ! kill -0 "$(cat "$dir/nginx.pid")" 2>/dev/null ||
  die "a cluster is already running from $dir (scripts/cluster.sh stop --dir $dir)"
trap 'echo "cluster: start failed; stopping what started" >&2; stop_all || true' ERR

# 1. replicas
cfg_args=()
[ -n "$config" ] && cfg_args=(--config "$config")
for i in $(seq 1 "$n"); do
  rm -f "$dir/replica-$i.port" "$dir/replica-$i.exit"
  ( "$bin" serve "${cfg_args[@]}" --host 127.0.0.1 --port 0 --port-file "$dir/replica-$i.port" \
        "${extra[@]}" >"$dir/replica-$i.log" 2>&1; echo $? > "$dir/replica-$i.exit" ) &
  # the subshell's child is the server: record the server's own pid
  for _ in $(seq 1 50); do
    pid=$(pgrep -P $! -f "anytime serve" | head -n 1 || true); [ -n "$pid" ] && break; sleep 0.02
  done
  [ -n "${pid:-}" ] || die "replica $i did not start (see $dir/replica-$i.log)"
  echo "$pid" > "$dir/replica-$i.pid"
done
rport() { cat "$dir/replica-$1.port" 2>/dev/null || true; }
for i in $(seq 1 "$n"); do
  for _ in $(seq 1 1200); do
    [ -s "$dir/replica-$i.port" ] && curl -sf "http://127.0.0.1:$(rport "$i")/v2/health/ready" >/dev/null && break
    [ -e "$dir/replica-$i.exit" ] && die "replica $i exited during start-up: $(tail -n 3 "$dir/replica-$i.log")"
    sleep 0.05
  done
  [ -s "$dir/replica-$i.port" ] && curl -sf "http://127.0.0.1:$(rport "$i")/v2/health/ready" >/dev/null ||
    die "replica $i not ready after 60 s"
done

# 2. nginx, from the committed configuration with these replicas and port
servers=$(for i in $(seq 1 "$n"); do printf '    server 127.0.0.1:%d max_fails=0;\\n' "$(rport "$i")"; done)
sed -e "/# replicas: begin/,/# replicas: end/c\\    # replicas: begin\\n$servers    # replicas: end" \
    -e "s/listen 127.0.0.1:8000;/listen 127.0.0.1:$port;/" \
    "$here/deploy/nginx/anytime.conf" > "$dir/nginx.conf"
nginx -t -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx-test.log" 2>&1 || die "nginx rejects the configuration: $(cat "$dir/nginx-test.log")"
nginx -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx.out" 2>&1 &
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break
  sleep 0.05
done
curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null || die "nginx does not answer on $port: $(cat "$dir/error.log" 2>/dev/null)"
echo "$port" > "$dir/port"
trap - ERR
echo "cluster: $n replica(s) behind nginx at http://127.0.0.1:$port (state in $dir; stop: scripts/cluster.sh stop --dir $dir)"
