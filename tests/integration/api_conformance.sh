#!/usr/bin/env bash
# tests/integration/api_conformance.sh — docs/api.md's conformance tables
# against the real server (tests/data/serve/tiny.yaml): for every route the
# "## Conformance" section has a table for, a body with a member the table
# does not name is a 400 that names it (nothing silently ignored), in the
# route's own error object; and each member the table names, sent alone, is
# not refused as unknown (the parser reads what the table says). The tables
# themselves are held to src/serve/fields.c by test_serve_routes.
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
doc="$ANYTIME_SOURCE_DIR/docs/api.md"
conf=$(sed -n '/^## Conformance/,$p' "$doc")
routes=$(sed -n 's/^### `POST \(\/[^`]*\)`$/\1/p' <<<"$conf")
[ "$(wc -l <<<"$routes")" -ge 3 ] || fail "fewer than 3 conformance tables in docs/api.md: $routes"
start_server "$ANYTIME_TEST_DATA/serve/tiny.yaml"
n=0
for path in $routes; do
  case "$path" in *"{m}"*) path=${path//\{m\}/tiny-classifier} ;; esac
  req POST "$path" '{"zz_not_a_field": 1}'
  expect 400 'zz_not_a_field'
  case "$path" in
    /v1/*) jq -e '.error.message and .error.type and .error.code == "unknown_parameter" and .error.param == "zz_not_a_field"' <<<"$BODY" >/dev/null ||
             fail "$path: not OpenAI's error object: $BODY" ;;
    /v2/*) jq -e '(.error | type) == "string"' <<<"$BODY" >/dev/null || fail "$path: not V2's error object: $BODY" ;;
    *) jq -e '.error and .error_type' <<<"$BODY" >/dev/null || fail "$path: not TEI's error object: $BODY" ;;
  esac
  # every documented member is one the parser knows
  tpath=$(sed -n "s/^### \`POST \(.*\)\`$/\1/p" <<<"$conf" | grep -Fx -- "$(sed 's/tiny-classifier/{m}/' <<<"$path")")
  fields=$(awk -v h="### \`POST $tpath\`" '$0 == h {on = 1; next} /^#/ {on = 0} on' <<<"$conf" |
           sed -n 's/^| `\([^`]*\)` |.*/\1/p')
  for f in $fields; do
    req POST "$path" "{\"$f\": null}"
    if grep -qE 'is not supported by|unknown field' <<<"$BODY"; then fail "$path refuses its documented member \"$f\" as unknown: $BODY"; fi
    n=$((n + 1))
  done
done
stop_server
echo "api_conformance: PASS ($(wc -l <<<"$routes") routes, $n documented members)"
