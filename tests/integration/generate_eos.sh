#!/usr/bin/env bash
# tests/integration/generate_eos.sh — several end-of-sequence ids (issue
# #16 item 5): Llama 3 and Qwen2 exports list eos_token_id in
# generation_config.json ([128001, 128009]); any of them must end a
# generation, on the lane (`anytime generate`), on the reference path
# (`--reference`) and through the server's /v1/completions. A copy of the
# shipped decoder gets generation_config.json's eos_token_id = [id never
# produced, the 4th id greedy decoding produces]: every path must stop
# before that 4th token with finish "stop". Ids the graph cannot produce
# are dropped.
# Seen to fail (2026-12-01): with the list read as config.json's single id
# (the code before), "lane: 8 tokens (length), want 3 (stop)".
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
command -v jq >/dev/null || fail "jq is not installed (scripts/install-deps.sh test)"
W=$(mktemp -d)
cp -r "$ANYTIME_SOURCE_DIR/models/decoder" "$W/dec"
gen() { "$ANYTIME_BIN" generate --model "$W/dec" --max-tokens 8 "$@" "the movie" 2>/dev/null; }
ids=$(gen --ids | sed -n 's/^ids: //p')
read -r -a a <<<"$ids"
[ "${#a[@]}" -eq 8 ] || fail "greedy decoding made ${#a[@]} ids, want 8: $ids"
stop=${a[3]}
# the same id must not appear earlier, or the expected stop moves
for k in 0 1 2; do [ "${a[$k]}" != "$stop" ] || fail "id $stop appears before position 3: $ids"; done
jq --argjson s "$stop" '.eos_token_id = [9999999, $s]' "$W/dec/generation_config.json" > "$W/g.json"
mv "$W/g.json" "$W/dec/generation_config.json"
for path in lane reference; do
  extra=(); [ $path = reference ] && extra=(--reference)
  out=$(gen --json "${extra[@]}")
  n=$(jq -r '.completion_tokens' <<<"$out"); f=$(jq -r '.finish_reason' <<<"$out")
  [ "$n" = 3 ] && [ "$f" = stop ] || fail "$path: $n tokens ($f), want 3 (stop): $out"
done
start_server_args --model "$W/dec" --name dec
body=$(curl -s "$BASE/v1/completions" -d '{"model": "dec", "prompt": "the movie", "max_tokens": 8, "temperature": 0}')
[ "$(jq -r '.usage.completion_tokens' <<<"$body")" = 3 ] && [ "$(jq -r '.choices[0].finish_reason' <<<"$body")" = stop ] ||
  fail "server: $body"
stop_server
rm -rf "$W"
echo "generate_eos: ok"
