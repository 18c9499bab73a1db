#!/usr/bin/env bash
# tests/integration/serve_gen_variants.sh — the generation lane with two
# decoder variants (generator.variant fp32, generator.fallback_variant int8)
# taking turns on the same cores, through curl:
#   - at start both lanes are logged; a light request goes to the most
#     accurate variant and says so (x-variant), plain and streamed;
#   - the choice follows the rule from the server's own exported step fits:
#     with a per-token budget (over admit_fill) between the two variants'
#     idle forecasts the
#     request goes to the one whose forecast fits (int8 where it is the
#     cheaper on this host), and that lane's greedy text equals
#     `anytime generate --reference` of the same variant;
#   - a budget neither meets is refused (429) with both forecasts named;
#   - per-variant metrics count the choices;
#   - a fallback equal to the variant, or one the model does not have, stops
#     the start with a message naming the problem.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"

work=$(mktemp -d) # removed at the end (start_server's EXIT trap replaces any of ours)
# tiny.yaml with absolute paths and a fallback lane
mkcfg() { # fallback -> $work/cfg.yaml
  sed -e "s|\.\./\.\./\.\./models/|$ANYTIME_SOURCE_DIR/models/|" \
      -e "s|\.\./models/|$ANYTIME_TEST_DATA/models/|" \
      -e "s|^  variant: fp32$|  variant: fp32\n  fallback_variant: $1|" \
      "$ANYTIME_TEST_DATA/serve/tiny.yaml" > "$work/cfg.yaml"
  grep -q "^  fallback_variant: $1\$" "$work/cfg.yaml" || fail "tiny.yaml has no generator 'variant: fp32' line"
}

# 1. configuration errors stop the start, naming the problem
for bad in fp32 fp64; do
  mkcfg "$bad"
  rc=0
  ANYTIME_CACHE_DIR="$work/cache" timeout 120 "$ANYTIME_BIN" serve --config "$work/cfg.yaml" --port 0 \
    > "$work/bad.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "fallback_variant $bad: the server started"
  case $bad in
    fp32) grep -q "fallback_variant 'fp32' is the lane's own variant" "$work/bad.log" ||
            fail "fallback = variant: $(tail -n 3 "$work/bad.log")" ;;
    fp64) grep -q "fp64" "$work/bad.log" && grep -q "int8" "$work/bad.log" ||
            fail "unknown fallback: $(tail -n 3 "$work/bad.log")" ;;
  esac
done

mkcfg int8
start_server "$work/cfg.yaml"
grep -q "generation lane 'decoder' .*(variant fp32, fallback int8," "$SERVER_LOG" ||
  fail "both lanes are not logged: $(grep generation "$SERVER_LOG")"

# 2. light load: the most accurate variant, plain and streamed
P="the film is a masterpiece of quiet observation , and"
req POST /v1/completions "{\"prompt\":\"$P\",\"max_tokens\":8,\"temperature\":0}"
expect 200 '"object":"text_completion"'
grep -qi '^x-variant: fp32' <<<"$HEADERS" || fail "a light request did not go to fp32: $HEADERS"
n_prompt=$(sed -E 's/.*"prompt_tokens":([0-9]+).*/\1/' <<<"$BODY")
curl -sN -D "$work/sh" -o "$work/sse" "$BASE/v1/completions" \
  -d "{\"prompt\":\"$P\",\"max_tokens\":4,\"stream\":true}"
grep -qi '^x-variant: fp32' "$work/sh" || fail "a light stream did not say fp32: $(cat "$work/sh")"

# 3. the rule, from the server's own figures: both lanes idle, so a lane's
# per-token forecast for one sequence is its fitted step at that length
# (a + b * (prompt + 1)); a budget between the two picks the one under it
req GET /metrics
fc() { # variant -> forecast seconds per token
  awk -v v="$1" -v n="$n_prompt" -F'[ ]' '
    index($1, "anytime_gen_step_fit_seconds{") == 1 && index($1, "variant=\"" v "\"") {
      if (index($1, "term=\"fixed\"")) a = $2; else b = $2 }
    END { printf "%.9f", a + b * (n + 1) }' <<<"$BODY"
}
f32=$(fc fp32) f8=$(fc int8)
# admission takes a forecast within generator.admit_fill (0.8, the default)
# of the budget: fp32 qualifies exactly when it is the cheaper of the two
budget_ms=$(awk -v a="$f32" -v b="$f8" 'BEGIN { printf "%.6f", sqrt(a * b) / 0.8 * 1e3 }')
want=$(awk -v a="$f32" -v b="$f8" 'BEGIN { print (sqrt(a * b) >= a) ? "fp32" : "int8" }')
echo "idle forecasts per token: fp32 $f32 s, int8 $f8 s; budget $budget_ms ms -> $want"
req_h() { # budget_ms -> STATUS, BODY, HEADERS
  STATUS=$(curl -s -o "$work/b" -D "$work/h" -w '%{http_code}' "$BASE/v1/completions" \
           -H "x-tpot-ms: $1" -d "{\"prompt\":\"$P\",\"max_tokens\":12,\"temperature\":0}")
  BODY=$(cat "$work/b") HEADERS=$(cat "$work/h")
}
req_h "$budget_ms"
expect 200
grep -qi "^x-variant: $want" <<<"$HEADERS" || fail "budget $budget_ms ms: expected $want, got $(grep -i x-variant <<<"$HEADERS")"
served=$(sed -E 's/.*"text":"(([^"\\]|\\.)*)".*/\1/' <<<"$BODY")
ref=$("$ANYTIME_BIN" generate --model "$ANYTIME_SOURCE_DIR/models/decoder" --variant "$want" --reference \
      --max-tokens 12 --json "$P" | sed -E 's/.*"text":"(([^"\\]|\\.)*)".*/\1/')
[ "$served" = "$ref" ] || fail "$want lane's text differs from the reference:
  served:    $served
  reference: $ref"

# 4. a budget neither variant meets even when idle: 422 naming both idle
# forecasts, no Retry-After, and not counted as demand for the cheaper lane
req_h 0.0001
expect 422 'fp32: .* ms; int8: .* ms'
grep -qi '^retry-after' <<<"$HEADERS" && fail "the 422 invites a retry: $HEADERS"

# 5. the choices are counted per variant
req GET /metrics
c32=$(awk -F' ' '/^anytime_gen_variant_chosen_total\{.*variant="fp32"/ {print $2}' <<<"$BODY")
c8=$(awk -F' ' '/^anytime_gen_variant_chosen_total\{.*variant="int8"/ {print $2}' <<<"$BODY")
[ "$((c32 + c8))" = 3 ] || fail "3 admitted requests, counted fp32 $c32 + int8 $c8"
if [ "$want" = fp32 ]; then want_c32=3; else want_c32=2; fi
[ "$c32" = "$want_c32" ] || fail "per-variant counts fp32 $c32, int8 $c8 (the budgeted one went to $want)"
stop_server
rm -rf "$work"
echo "ok"
