#!/usr/bin/env bash
# bench/cold_start/phases.sh MODEL [anytime run options...] — where one cold
# start's time goes. anytime has no phase timers of its own, so this runs the
# cold-start probe (`anytime run MODEL TEXT`, as bench/cold_start/run.sh) under
#   strace -f -ttt --seccomp-bpf -e trace=execve,openat,write,fsync,rename,exit_group
# (only those syscalls stop the process, so the probe runs at nearly full
# speed) and prints the file events that mark its phases, each with its time
# from execve and the gap since the previous event, in milliseconds:
#   tokenizer.json opened ... libonnxruntime.so opened   = tokenizer load
#   libonnxruntime.so opened ... ORT's first own file    = ORT library load
#   ORT's telemetry files (/tmp/mat-debug-PID.log, ~/.cache/Microsoft/...)
#                                                        = ORT environment
#   model.onnx / model.ort opened by ORT ... next event  = session creation
#     (read + parse, weights, graph optimisation; from the artifact: no
#     optimisation)
#   model.ort written, meta.json, fsync, rename          = artifact saved (cold)
#   answer written (fd 1) ... exit                       = Run + teardown
# Events on shared libraries, /proc, /sys, /etc and missing files are left out.
#
#   ANYTIME_CACHE_DIR=DIR bench/cold_start/phases.sh MODEL [--no-cache|--all-variants]
# Environment: ANYTIME_BIN (default build/anytime).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${ANYTIME_BIN:-$root/build/anytime}
[ $# -ge 1 ] || { echo "usage: $0 MODEL [anytime run options...]" >&2; exit 2; }
command -v strace >/dev/null || { echo "needs strace" >&2; exit 1; }
tr=$(mktemp); trap 'rm -f "$tr"' EXIT
strace -f -ttt --seccomp-bpf -e trace=execve,openat,write,fsync,rename,exit_group -o "$tr" \
  "$B" run "$@" "a quick test sentence" > /dev/null
awk '
  / execve\(/ && !t0 { t0 = $2 }
  /ENOENT|\+\+\+|resumed/ { next }
  /openat\(/ && /\.so[".]/ && !/libonnxruntime\.so/ { next }
  /openat\(/ && /"\/(proc|sys|etc|dev)\// { next }
  / write\(/ && !/ write\(1,/ { next }
  {
    t = ($2 - t0) * 1000; ev = $0; sub(/^[0-9]+ [0-9.]+ /, "", ev)
    if (length(ev) > 150) ev = substr(ev, 1, 147) "..."
    printf "%8.1f %+8.1f  %s\n", t, t - prev, ev; prev = t
  }' "$tr"
