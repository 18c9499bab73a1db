# bench/lib.sh — pieces the bench scripts share (sourced, not run).

# bench_cheap_config REPO DIR [BIN]: write DIR/both.yaml (configs/serving.yaml
# with absolute model paths) and DIR/cheap.yaml (the same with its classify
# model holding only its cheapest frontier variant, today large-int8 dropped, so a
# server on it holds only that variant), the latter by `BIN sweep
# --write-cheap-config`: the writer the sweep's cheap-only policy uses, so
# the two cannot drift apart. BIN: the anytime binary (default
# $ANYTIME_BIN, else REPO/build/anytime; a relative path is taken from REPO).
bench_cheap_config() {
  local bin=${3:-${ANYTIME_BIN:-$1/build/anytime}} log
  case "$bin" in /*) ;; *) bin="$1/$bin" ;; esac
  sed "s|\.\./models/|$1/models/|g" "$1/configs/serving.yaml" > "$2/both.yaml"
  log=$("$bin" sweep --config "$2/both.yaml" --write-cheap-config "$2/cheap.yaml" 2>&1) ||
    { echo "$log" >&2; echo "bench: $bin could not write $2/cheap.yaml" >&2; return 1; }
}

# bench_start_server BIN CONFIG DIR: start `BIN serve` on a free port in the
# background; sets BENCH_PID and BENCH_PORT, sends one warm-up request.
# Prints the server's log and returns 1 if it does not come up in 10 s.
bench_start_server() {
  rm -f "$3/port"
  "$1" serve --config "$2" --port 0 --port-file "$3/port" --no-cache >"$3/serve.log" 2>&1 &
  BENCH_PID=$!
  for _ in $(seq 200); do [ -s "$3/port" ] && break; sleep 0.05; done
  [ -s "$3/port" ] || { cat "$3/serve.log"; return 1; }
  BENCH_PORT=$(cat "$3/port")
  curl -s "127.0.0.1:$BENCH_PORT/predict" -d '{"inputs":"warm up"}' >/dev/null
}

# bench_one_variant_config OUT MODEL_DIR VARIANT MAX_BATCH [ENGINE_EXTRA]:
# write OUT, a server config serving MODEL_DIR/VARIANT alone as a classifier
# (model "bench", variant "v"), 2 workers, 2 HTTP threads, 1 intra-op
# thread, max_batch_size MAX_BATCH, no admission control (policy none), so
# every request is served. ENGINE_EXTRA: more keys of the engine section,
# e.g. "cpu_arena: true". MODEL_DIR must be absolute.
bench_one_variant_config() {
  cat > "$1" <<YAML
server: {host: 127.0.0.1, port: 0, http_threads: 2, max_inputs: 64, max_queued: 65536}
engine: {workers: 2, intra_op_threads: 1${5:+, $5}}
batching: {max_batch_size: $4, max_queue_delay_us: 0}
planner: {policy: none, deadline_ms: 100000, max_deadline_ms: 100000}
models:
  - name: bench
    task: classify
    tokenizer: $2/tokenizer.json
    config: $2/config.json
    variants:
      - {name: v, path: $2/$3, accuracy: 1}
YAML
}

# bench_length_texts TOKENIZER_JSON DIR L...: for each L, the shortest prefix
# of a fixed sentence that the Hugging Face tokenizers library (npm, not
# anytime's tokenizer) encodes to exactly L ids: DIR/texts ("L<TAB>ids<TAB>
# text" lines, bench/bare_ort/ids.js) and DIR/body_L.json ({"inputs": text}).
bench_length_texts() {
  local tok=$1 dir=$2 l; shift 2
  node "$(dirname "${BASH_SOURCE[0]}")/bare_ort/ids.js" lengths "$tok" "$@" > "$dir/texts" || return 1
  for l in "$@"; do
    printf '{"inputs": "%s"}' "$(awk -F'\t' -v l="$l" '$1 == l {print $3; exit}' "$dir/texts")" \
      > "$dir/body_$l.json"
  done
}
