#!/usr/bin/env bash
# tests/integration/profile.sh — `anytime profile` end to end on the tiny
# family: it writes the serving config and the raw-figures JSON (and the
# written config loads in `anytime serve`); --length-buckets fits the
# length model, writes its two keys into the config (which serves, and
# which a profile of it without buckets carries over) and prints the check
# table; with --agreement-tolerance 0.001
# the engine-vs-plain-session cross-check disagrees and it must abort
# without writing anything.
set -euo pipefail
: "${ANYTIME_BIN:?run through ctest}" "${ANYTIME_TEST_DATA:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
# written configs must sit beside the family file: their model paths are relative to it
profiled="$ANYTIME_TEST_DATA/serve/.profiled-$$.yaml" profiled_small="$ANYTIME_TEST_DATA/serve/.profiled-small-$$.yaml"
trap 'rm -rf "$tmp" "$profiled" "$profiled_small"' EXIT
# serves CONFIG NAME: start `anytime serve` on CONFIG, wait for its port ($tmp/NAME.port); sets pid
serves() {
  timeout 120 "$ANYTIME_BIN" serve --config "$1" --port 0 --port-file "$tmp/$2.port" 2>"$tmp/$2.log" &
  pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/$2.port" ] && break; sleep 0.1; done  # 64 sessions load slowly beside other tests
  [ -s "$tmp/$2.port" ] || { cat "$tmp/$2.log"; fail "the $2 config does not serve"; }
}
fam="$ANYTIME_TEST_DATA/serve/tiny.yaml"
data="$ANYTIME_TEST_DATA/text/tiny_labelled.csv"
# The tiny test model runs in ~10 us, where a worker's wake-up and cold caches
# alone make the engine's batch-1 time 10-50% longer than a hot serial loop
# (and, beside other tests on two cores, 3.3x: 0.0202 against 0.0062 ms was
# seen on 2026-12-01, which failed a 200 % bar); the real models (0.1-1 ms)
# meet the default 15%. So the success path does not judge the tiny models'
# timing (the prediction cross-check still holds), and the abort path uses
# the issue's 0.001.
"$ANYTIME_BIN" profile --family "$fam" --data "$data" --repeats 2 --iters 5 --batch-sizes 1,2,4 \
    --length-buckets 3 --agreement-tolerance 1000 --out-config "$tmp/serving.yaml" \
    --out-json "$tmp/profiles.json" 2>"$tmp/log" || { cat "$tmp/log"; fail "profile failed"; }
grep -q "service_ms: {1: " "$tmp/serving.yaml" || fail "no service table in the written config"
# --length-buckets: s(b) per length bucket in the JSON, with each bucket's
# mean length and the length model's estimate beside the measurement, and
# the check table at the end (the tiny models run in ~10 us, too little for
# a length slope to be sure: on or off, the table is printed)
grep -q '"by_length"' "$tmp/profiles.json" || fail "no per-length-bucket s(b) in the JSON"
grep -q '"mean_tokens"' "$tmp/profiles.json" || fail "no bucket mean length in the JSON"
grep -q '"model_ms"' "$tmp/profiles.json" || fail "no length-model estimate in the JSON"
grep -q '"length_model"' "$tmp/profiles.json" || fail "no length-model fit in the JSON"
grep -q "texts of 1\.\." "$tmp/log" || fail "no per-length-bucket line in the log"
grep -q "^profile: length model of " "$tmp/log" || { cat "$tmp/log"; fail "no length-model check table"; }
grep -q "estimate / measured: one table " "$tmp/log" || fail "no ratio summary in the check table"
! grep -q "max_pad_factor" "$tmp/serving.yaml" || fail "bucketing written into the config"
grep -q '"service_time_spread_pct"' "$tmp/profiles.json" || fail "no spread in the JSON"
grep -q '"ort_version": "' "$tmp/profiles.json" || fail "no ORT version in the JSON"
grep -q '"host_cpu"' "$tmp/profiles.json" || fail "no host CPU in the JSON"
# the written configuration is a valid serving configuration (paths were made relative)
cp "$tmp/serving.yaml" "$profiled"
serves "$profiled" profiled
kill -TERM $pid; wait $pid || fail "server did not exit 0"

# The table with the whole worker pool busy. The tiny models run in ~20 us,
# less than a worker takes to wake, so two of their Runs rarely overlap; the
# real small int8 model (~0.2 ms) is profiled on the same 40 texts instead.
# Its timing cross-check at 200 %: measured 7-34 % apart while a CI run
# shared the cores (2026-12-02); the prediction cross-check is what binds.
# Under the sanitizers the workers keep ORT's arena here: without it every
# tensor goes to the sanitizer's allocator, whose cost on the workers'
# threads put the engine's s(1) at 3.8-4.6x the plain session's (seen in a
# clean-clone CI and alone, 2026-12-05), past any tolerance that still
# checks something. The arena-less path runs under the sanitizers in every
# serving test; this one checks profile's cross-check.
arena=false; [ "${ANYTIME_TEST_SANITIZED:-0}" = 1 ] && arena=true
src="${ANYTIME_SOURCE_DIR:?run through ctest}"
cat > "$tmp/small.yaml" <<EOF
engine:
  workers: 2
  intra_op_threads: 1
  cpu_arena: $arena
models:
  - name: sentiment
    task: classify
    tokenizer: $src/models/sentiment-small/tokenizer.json
    config: $src/models/sentiment-small/config.json
    variants:
      - name: small-int8
        path: $src/models/sentiment-small/onnx/model_quantized.onnx
EOF
# Every other text of the split repeated 8 times (~60 tokens against ~8),
# so that --length-buckets 2 finds a length slope well past the noise: on
# the split itself (5 against 11 tokens on average) one run in five
# measured the shorter half slower, and the fit is then off. Under the
# sanitizers every Run carries ~1 ms of their own fixed cost, and at 8
# times a clean-clone CI measured the longer half faster (1.31 against
# 1.41 ms, 2026-12-05): there the long texts are 32 times the short ones.
rep=7; [ "${ANYTIME_TEST_SANITIZED:-0}" = 1 ] && rep=31
awk -F, -v rep="$rep" 'NR == 1 { print; next } { t = substr($0, index($0, ",") + 1); gsub(/"/, "", t); r = t
  if (NR % 2) for (i = 0; i < rep; i++) r = r " " t
  printf "%s,\"%s\"\n", $1, r }' "$data" > "$tmp/long.csv"
"$ANYTIME_BIN" profile --family "$tmp/small.yaml" --data "$tmp/long.csv" --repeats 2 --iters 10 --batch-sizes 1,2 \
    --length-buckets 2 --agreement-tolerance 2 --out-config "$tmp/small-serving.yaml" --out-json "$tmp/small.json" 2>"$tmp/log3" || { cat "$tmp/log3"; fail "profile of the small model failed"; }
grep -q "service_busy_ms: {1: " "$tmp/small-serving.yaml" || { cat "$tmp/log3"; fail "no busy-pool service table in the written config"; }
grep -q '"busy_service_time_ms"' "$tmp/small.json" || fail "no busy-pool service time in the JSON"
# --length-buckets 2: the length model goes into the config (measured:
# s(1) 0.08 ms at 8 tokens, 0.19-0.31 ms at 60, five runs of five)
grep -Eq "^ +len_ref_tokens: [1-9][0-9.]*$" "$tmp/small-serving.yaml" &&
  grep -Eq "^ +len_cost_per_token: 0\.[0-9e.-]+$" "$tmp/small-serving.yaml" ||
  { cat "$tmp/log3"; cat "$tmp/small-serving.yaml"; fail "no length model in the written config"; }
grep -q "^profile: length model of sentiment/small-int8: s(1) = " "$tmp/log3" ||
  { cat "$tmp/log3"; fail "no check table for the small model"; }
lenkeys=$(grep -E "^ +len_(ref_tokens|cost_per_token): " "$tmp/small-serving.yaml")
# a configuration written again keeps them: profile the written one without buckets
"$ANYTIME_BIN" profile --family "$tmp/small-serving.yaml" --data "$tmp/long.csv" --repeats 2 --iters 3 --batch-sizes 1 \
    --agreement-tolerance 1000 --out-config "$tmp/small-again.yaml" --out-json "$tmp/small-again.json" 2>"$tmp/log5" ||
  { cat "$tmp/log5"; fail "profile of the profiled small model failed"; }
[ "$(grep -E "^ +len_(ref_tokens|cost_per_token): " "$tmp/small-again.yaml")" = "$lenkeys" ] ||
  { cat "$tmp/small-again.yaml"; fail "the length model did not carry over a second profile"; }
# and the planner accepts it: the written config serves and reports the factor
cp "$tmp/small-serving.yaml" "$profiled_small"
serves "$profiled_small" profiled-small
m=$(curl -s "http://127.0.0.1:$(cat "$tmp/profiled-small.port")/metrics") # no curl | grep -q: SIGPIPE under pipefail
grep -q 'anytime_planner_service_scale_pool{model="sentiment",variant="small-int8",pool="full"}' <<<"$m" \
  || fail "no full-pool factor in /metrics"
kill -TERM $pid; wait $pid || fail "server did not exit 0"

# A configuration past 64 KiB: 8 models x 8 variants (the limits) whose
# model paths are 4,095 bytes, the longest path Linux accepts (PATH_MAX,
# NUL included) and so the longest a configuration's path field holds
# (AT_PATH_CAP); one byte more is refused by name, checked below. The
# writer used a 64 KiB stack buffer that a truncated write ran past; it
# must now write every variant, and the result must load. Seen to fail
# with the old writer: 5 models of ~1,000-character paths (48 KB) were
# written fine, 8 failed with "not found: tokenizer: : no such file" — the
# overflow had overwritten the next model's configuration. Before the
# fields were AT_PATH_CAP, 1,024-byte paths were refused.
deep="$tmp/p"
while [ ${#deep} -lt 3860 ]; do deep="$deep/$(printf 'd%.0s' $(seq 200))"; done
mkdir -p "$deep" "$tmp/fam"
long="$deep/$(printf 'm%.0s' $(seq $((4095 - ${#deep} - 6)))).onnx"
[ ${#long} -eq 4095 ] || fail "the long model path is ${#long} characters, not 4,095"
cp "$ANYTIME_TEST_DATA/models/tiny_encoder.onnx" "$long"   # a copy: paths are resolved
{
  printf 'engine:\n  workers: 2\nplanner:\n  deadline_ms: 5000\nmodels:\n'
  for m in 1 2 3 4 5 6 7 8; do
    printf '  - name: big%d\n    task: classify\n    tokenizer: %s\n    config: %s\n    variants:\n' \
        "$m" "$ANYTIME_TEST_DATA/models/tiny/vocab.txt" "$ANYTIME_TEST_DATA/models/tiny/config.json"
    for v in 1 2 3 4 5 6 7 8; do printf '      - name: v%d\n        path: %s\n' "$v" "$long"; done
  done
} > "$tmp/fam/big.yaml"
# (the timing cross-check is not what this tests: with 3 iterations of a
# 10 us model, one of 64 variants can differ by 3x, so its tolerance is off)
"$ANYTIME_BIN" profile --family "$tmp/fam/big.yaml" --data "$data" --repeats 2 --iters 3 --batch-sizes 1 \
    --agreement-tolerance 1000 --out-config "$tmp/fam/big-serving.yaml" --out-json "$tmp/big.json" 2>"$tmp/logbig" ||
  { tail -5 "$tmp/logbig"; fail "profile of 64 variants with long paths failed"; }
size=$(wc -c < "$tmp/fam/big-serving.yaml")
[ "$size" -gt 65536 ] || fail "the 64-variant configuration is only $size bytes: the test no longer crosses 64 KiB"
[ "$(grep -c 'name: v[1-8]$' "$tmp/fam/big-serving.yaml")" -eq 64 ] || fail "not every variant was written"
serves "$tmp/fam/big-serving.yaml" big
kill -TERM $pid; wait $pid || fail "the server on the 64-variant configuration did not exit 0"
# one byte more: refused, naming the key and the limit (no such file can
# exist: the kernel refuses a 4,096-byte path, so the reader must refuse it
# by its length, not by a failed open)
longer="${long%.onnx}x.onnx"
sed "s|path: $long\$|path: $longer|" "$tmp/fam/big.yaml" > "$tmp/fam/longer.yaml"
if "$ANYTIME_BIN" profile --family "$tmp/fam/longer.yaml" --data "$data" --repeats 2 --iters 3 \
    --batch-sizes 1 --out-config "$tmp/fam/longer-serving.yaml" --out-json "$tmp/longer.json" 2>"$tmp/loglonger"; then
  fail "a 4,096-byte model path was accepted"
fi
grep -q "'path' is longer than 4095 bytes" "$tmp/loglonger" ||
  fail "a 4,096-byte path was not refused by name: $(tail -2 "$tmp/loglonger")"
echo "profile: 64 variants with 4,095-byte paths wrote $size bytes; a 4,096-byte path is refused by name"

# A family from one export (--model): every ONNX graph of the directory is a
# variant, and the written config serves them as one model. The multi-label
# stand-in (3 labels, as the data's) gets a second graph, as hub repos ship
# model.onnx beside model_O2.onnx.
cp -r "$ANYTIME_TEST_DATA/models/export/multilabel" "$tmp/onerepo"
cp "$tmp/onerepo/onnx/model.onnx" "$tmp/onerepo/onnx/model_O2.onnx"
"$ANYTIME_BIN" profile --model "$tmp/onerepo" --data "$data" --repeats 2 --iters 3 --batch-sizes 1 \
    --agreement-tolerance 1000 --out-config "$tmp/onerepo.yaml" --out-json "$tmp/onerepo.json" 2>"$tmp/log4" ||
  { tail -5 "$tmp/log4"; fail "profile --model failed"; }
[ "$(grep -cE '^ *#? *- name: (fp32|O2)$' "$tmp/onerepo.yaml")" -eq 2 ] || { cat "$tmp/onerepo.yaml"; fail "profile --model did not write both graphs as variants"; }
serves "$tmp/onerepo.yaml" onerepo
kill -TERM $pid; wait $pid || fail "the server on the --model configuration did not exit 0"

set +e
"$ANYTIME_BIN" profile --family "$fam" --data "$data" --repeats 2 --iters 5 --batch-sizes 1,2 \
    --agreement-tolerance 0.001 --out-config "$tmp/s2.yaml" --out-json "$tmp/p2.json" 2>"$tmp/log2"
rc=$?
set -e
cat "$tmp/log2" | grep -E "DISAGREEMENT|nothing was written" || true
[ $rc -ne 0 ] || fail "tolerance 0.001 did not abort"
grep -q "DISAGREEMENT" "$tmp/log2" || fail "no disagreement reported"
[ ! -e "$tmp/s2.yaml" ] && [ ! -e "$tmp/p2.json" ] || fail "files were written despite the abort"
# A model whose config.json is not JSON: profile fails at that model with the
# file named and exit code 1 (AT_EXIT_FAIL) — under the sanitizers a leak on
# this early return (the tokenizer was, until 2026-12-07) would exit 23 instead.
printf '{"max_position_embeddings": ' > "$tmp/bad_config.json"
sed "s|config: $src/models/sentiment-small/config.json|config: $tmp/bad_config.json|" \
    "$tmp/small.yaml" > "$tmp/bad.yaml"
set +e
"$ANYTIME_BIN" profile --family "$tmp/bad.yaml" --data "$data" --iters 3 --batch-sizes 1 \
    --out-config "$tmp/bad-out.yaml" --out-json "$tmp/bad.json" 2>"$tmp/log_bad"
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$tmp/log_bad"; fail "a corrupt config.json: exit $rc, not 1"; }
grep -q "bad_config.json: line 1" "$tmp/log_bad" || { cat "$tmp/log_bad"; fail "the error does not name the file"; }
[ ! -e "$tmp/bad-out.yaml" ] || fail "a config was written for a model that could not be read"
echo "PASS: profile writes both files; a disagreement aborts and writes nothing; a corrupt config.json is named"
