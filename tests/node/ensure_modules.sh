# tests/node/ensure_modules.sh — sourced by the tests that use the pinned npm
# references in tests/node/package.json (parity.sh, http_reference.sh,
# unicode/check_compat.sh):
# `ensure_node_modules DIE_FUNCTION` installs them with `npm ci` when any
# installed version differs from the pin, and calls DIE_FUNCTION (which must
# exit) when Node or npm is missing or the install fails: a reference that
# cannot run fails the test, it never skips it.
# `--ignore-scripts`: onnxruntime-node's postinstall would download more
# files; its CPU library is in the package itself.
ensure_node_modules() {
  local die=$1 nodedir want have
  nodedir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  command -v node >/dev/null || "$die" "node is not installed (the references run on Node)"
  want=$(node -e "const p=require('$nodedir/package.json').dependencies;console.log(Object.entries(p).map(e=>e.join('@')).sort().join(' '))")
  have=$(node -e "
    const p=require('$nodedir/package.json').dependencies;
    try { console.log(Object.keys(p).map(k=>k+'@'+require('$nodedir/node_modules/'+k+'/package.json').version).sort().join(' ')); }
    catch (e) { console.log('missing'); }")
  if [ "$want" != "$have" ]; then
    command -v npm >/dev/null || "$die" "npm is not installed (needed to install $want)"
    echo "installing $want into tests/node/node_modules" >&2
    (cd "$nodedir" && npm ci --ignore-scripts --no-audit --no-fund >&2) || "$die" "npm ci failed in tests/node"
  fi
}
