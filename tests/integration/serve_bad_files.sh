#!/usr/bin/env bash
# tests/integration/serve_bad_files.sh — issue 17's file faults against the
# real server: the compiled-artifact cache on a full disk and on a
# read-only one, and tokenizer.json files that are valid JSON but
# inconsistent.
#   * cache on a full disk (a 4 KiB tmpfs) and a read-only one: the server
#     starts, says once that the cache is not usable, answers exactly as a
#     server without the cache does, leaves no half-written entry behind
#     and exits 0 on SIGTERM. The mounts live in a private mount namespace
#     (`unshare -rm`: no root needed where user namespaces are enabled).
#   * a tokenizer whose vocabulary gives "movie" the id 9000 (config.json:
#     8000 ids), served beside the same model with its own tokenizer: a
#     warning at start naming both sizes; a text with "movie" is answered
#     500 naming the id, alone, and never reaches a batch, so 40 concurrent
#     requests, half of them such texts, give 20 x 500 and 20 x 200 with the
#     good model's answers; a text without it is answered as the good model
#     answers it. A tokenizer whose post-processor gives [CLS] the id 12345
#     is refused the same way for every text.
#   * a tokenizer whose unk_token is not in its vocabulary (loaded, as
#     Hugging Face's tokenizers load it): a text with a character it cannot
#     spell is answered 500 naming that (the server's files are at fault,
#     not the text); texts it can spell are answered as the good model does.
# Seen to fail: before 2026-12-02 the server did not start on the full disk
# ("SaveToOrtFormat Failed to save ORT format model": ONNX Runtime writes
# the artifact while creating the session, and the failed write failed the
# model); without the id check in src/serve/textjob.c the id 9000 reached a
# batch and the Run failed, taking the good requests batched with it
# ("FAIL: good answers under the mix: 16 of 20 (16 200, 4 500)"; the bad
# texts got ONNX Runtime's Gather error, not a message naming the id).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v unshare >/dev/null || fail "unshare (util-linux) is needed"
ROOT=$(cd "$ANYTIME_TEST_DATA/../.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# --- 1. the artifact cache on a full disk and on a read-only one
cat > "$W/tiny.yaml" <<EOF
server: {host: 127.0.0.1, port: 0}
engine: {workers: 1}
planner: {deadline_ms: 5000}
models:
  - name: tiny-classifier
    task: classify
    tokenizer: $ANYTIME_TEST_DATA/models/tiny/vocab.txt
    config: $ANYTIME_TEST_DATA/models/tiny/config.json
    variants:
      - {name: a, path: $ANYTIME_TEST_DATA/models/tiny_encoder.onnx, accuracy: 0.9}
EOF
# the answer without any cache, to compare with
start_server_args --config "$W/tiny.yaml" --no-cache
req POST /predict '{"inputs":"the movie was good","raw_scores":true}'; expect 200
want=$BODY
stop_server
cat > "$W/inner.sh" <<'EOF'
# runs in a private mount namespace: $1 = rw|ro, $2 = work dir
set -u
d=$2
mkdir -p "$d/cache"
mount -t tmpfs -o size=4k tmpfs "$d/cache" || { echo "mount failed" > "$d/rc"; exit 1; }
[ "$1" = ro ] && mount -o remount,ro "$d/cache"
"$ANYTIME_BIN" serve --config "$d/../tiny.yaml" --cache-dir "$d/cache" --port 0 \
    --port-file "$d/port" > "$d/log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$d/port" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if [ -s "$d/port" ]; then
  curl -s "http://127.0.0.1:$(cat "$d/port")/predict" -d '{"inputs":"the movie was good","raw_scores":true}' > "$d/answer"
  kill -TERM $pid
fi
wait $pid; echo $? > "$d/rc"
find "$d/cache" -mindepth 1 -name '.tmp-*' > "$d/leftover"
du -sk "$d/cache" | cut -f1 > "$d/used_kb"
EOF
for mode in rw ro; do
  d="$W/$mode"; mkdir -p "$d"
  ANYTIME_BIN="$ANYTIME_BIN" unshare -rm bash "$W/inner.sh" "$mode" "$d" ||
    fail "$mode: unshare -rm failed (user namespaces off?): $(cat "$d/rc" 2>/dev/null)"
  what="cache on a $( [ $mode = rw ] && echo full || echo read-only ) disk"
  [ -s "$d/port" ] || fail "$what: the server did not start: $(tail -3 "$d/log")"
  [ "$(cat "$d/rc")" = 0 ] || fail "$what: the server exited $(cat "$d/rc")"
  [ "$(cat "$d/answer")" = "$want" ] || fail "$what: answered $(cat "$d/answer"), without a cache $want"
  [ "$(grep -c 'is not usable' "$d/log")" = 1 ] || fail "$what: want one 'not usable' warning: $(grep cache "$d/log")"
  [ ! -s "$d/leftover" ] || fail "$what: left behind $(cat "$d/leftover")"
  echo "$what: served without it, one warning: $(grep -o 'is not usable ([^)]*' "$d/log" | cut -c1-90)"
done

# --- 2. tokenizers that are valid JSON but inconsistent
S="$ROOT/models/sentiment-small"
mkdir -p "$W/tok"
# node, not Python: tests use Node where they need a scripting language
node -e '
const fs = require("fs"); const [src, dir] = process.argv.slice(1);
const load = () => JSON.parse(fs.readFileSync(src, "utf8"));
let t = load(); t.model.vocab["movie"] = 9000; fs.writeFileSync(dir + "/high.json", JSON.stringify(t));
t = load(); t.post_processor.special_tokens["[CLS]"].ids = [12345]; fs.writeFileSync(dir + "/post.json", JSON.stringify(t));
t = load(); t.model.unk_token = "[NOPE]"; fs.writeFileSync(dir + "/unk.json", JSON.stringify(t));
' "$S/tokenizer.json" "$W/tok"
model_entry() { # name tokenizer
  printf '  - name: %s\n    task: classify\n    tokenizer: %s\n    config: %s\n    variants:\n      - {name: s, path: %s, accuracy: 0.7}\n' \
    "$1" "$2" "$S/config.json" "$S/onnx/model.onnx"
}
{ printf 'server: {host: 127.0.0.1, port: 0}\nengine: {workers: 2}\nbatching: {max_batch_size: 8, max_queue_delay_us: 2000}\nplanner: {deadline_ms: 5000}\nmodels:\n'
  model_entry good "$S/tokenizer.json"; model_entry high "$W/tok/high.json"; model_entry post "$W/tok/post.json"
} > "$W/tok.yaml"
start_server "$W/tok.yaml"
grep -q "model 'high': the tokenizer ($W/tok/high.json) has 9001 ids but config.json's vocab_size is 8000" "$SERVER_LOG" ||
  fail "no warning about the tokenizer's 9001 ids: $(grep -i tokenizer "$SERVER_LOG")"
req POST /predict '{"model":"high","inputs":"the movie was fine"}'; expect 500 'token id 9000'
req POST /predict '{"model":"post","inputs":"a good plot"}'; expect 500 'token id 12345'
req POST /predict '{"model":"good","inputs":"a good plot","raw_scores":true}'; expect 200; good=$BODY
req POST /predict '{"model":"high","inputs":"a good plot","raw_scores":true}'; expect 200
[ "$BODY" = "$good" ] || fail "a text without 'movie': $BODY, the good model: $good"
# the mix: 20 texts with the bad id and 20 good ones at once
pids=()
for i in $(seq 1 20); do
  curl -s -o "$W/b$i" -w '%{http_code}\n' "$BASE/predict" -d "{\"model\":\"high\",\"inputs\":\"movie $i\"}" > "$W/bs$i" &
  pids+=($!)
  curl -s -o "$W/g$i" -w '%{http_code}\n' "$BASE/predict" -d '{"model":"high","inputs":"a good plot","raw_scores":true}' > "$W/gs$i" &
  pids+=($!)
done
wait "${pids[@]}" # (a bare wait would wait for the server too)
bad_ok=0 good_ok=0
for i in $(seq 1 20); do
  [ "$(cat "$W/bs$i")" = 500 ] && grep -q 'token id 9000' "$W/b$i" && bad_ok=$((bad_ok + 1))
  [ "$(cat "$W/gs$i")" = 200 ] && [ "$(cat "$W/g$i")" = "$good" ] && good_ok=$((good_ok + 1))
done
[ $good_ok = 20 ] || fail "good answers under the mix: $good_ok of 20 ($(cat "$W"/gs* | sort | uniq -c | tr '\n' ' '))"
[ $bad_ok = 20 ] || fail "500s naming the id under the mix: $bad_ok of 20"
req GET /metrics
grep -q '^anytime_planner_inflight_texts{model="high"} 0' <<<"$BODY" ||
  fail "texts left in the planner's books: $(grep inflight_texts <<<"$BODY")"
stop_server
# unk_token missing from the vocabulary: loaded as Hugging Face loads it;
# a text it cannot spell is the tokenizer's failure (500 naming it), the
# others are served
{ printf 'server: {host: 127.0.0.1, port: 0}\nmodels:\n'; model_entry unk "$W/tok/unk.json"; } > "$W/unk.yaml"
start_server "$W/unk.yaml"
req POST /predict "$(printf '{"inputs":"the \342\230\203 movie"}')"; expect 500 'unk token missing from the vocabulary'
req POST /predict '{"inputs":"a good plot","raw_scores":true}'; expect 200
[ "$BODY" = "$good" ] || fail "unk model, a text it can spell: $BODY, the good model: $good"
stop_server
echo "inconsistent tokenizers: 500 naming the problem for the texts it affects, the others served"
