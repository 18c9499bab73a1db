#!/usr/bin/env bash
# tests/integration/cli_seed.sh — every `anytime` command answers --help with
# exit 0; `anytime info` describes the test model; bad arguments and bad
# model files give a clear message and a non-zero exit, never a crash.
set -euo pipefail
: "${ANYTIME_BIN:?run through ctest}" "${ANYTIME_TEST_DATA:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cmds=$("$ANYTIME_BIN" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{on=0}')
[ -n "$cmds" ] || fail "no commands listed by --help"
for c in $cmds; do
  out=$("$ANYTIME_BIN" "$c" --help) || fail "anytime $c --help exited non-zero"
  grep -qi "usage" <<<"$out" || fail "anytime $c --help prints no usage"
done
info=$("$ANYTIME_BIN" info "$ANYTIME_TEST_DATA/models/tiny_encoder.onnx")
grep -q "opset: *17" <<<"$info" || fail "opset not shown"
grep -q "input_ids *INT64 *\[batch, seq\]" <<<"$info" || fail "symbolic dims not shown"
grep -q "producer: *anytime-testmodels" <<<"$info" || fail "producer not shown"
set +e
"$ANYTIME_BIN" nosuchcommand >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command not a usage error"
msg=$("$ANYTIME_BIN" info /nonexistent.onnx 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "/nonexistent.onnx" <<<"$msg" || fail "missing model: rc=$rc msg=$msg"
tmp=$(mktemp); head -c 200 "$ANYTIME_TEST_DATA/models/tiny_encoder.onnx" > "$tmp"
msg=$("$ANYTIME_BIN" info "$tmp" 2>&1); rc=$?
rm -f "$tmp"
[ $rc -eq 1 ] && grep -q "could not load model" <<<"$msg" || fail "corrupt model: rc=$rc msg=$msg"
echo "PASS: CLI seed"
