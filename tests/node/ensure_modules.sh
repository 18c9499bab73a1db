# tests/node/ensure_modules.sh — sourced by the tests that use the pinned npm
# references in tests/node/package.json (parity.sh, http_reference.sh,
# unicode/check_compat.sh):
# `ensure_node_modules DIE_FUNCTION` installs them with `npm ci` when any
# installed version differs from the pin, and calls DIE_FUNCTION (which must
# exit) when Node or npm is missing or the install fails: a reference that
# cannot run fails the test, it never skips it. Tests running at once take
# a lock (tests/node/.install.lock), so only one installs.
# `--ignore-scripts`: onnxruntime-node's postinstall would download more
# files; its CPU library is in the package itself.
ensure_node_modules() {
  local die=$1 nodedir rc=0
  nodedir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  command -v node >/dev/null || "$die" "node is not installed (the references run on Node)"
  # one test installs while the others that ctest -j runs at the same time
  # wait on the lock, then find the pins in place (two npm ci runs in one
  # directory at once fail: ENOTEMPTY, or one sees the other's half tree)
  (
    flock 9
    want=$(node -e "const p=require('$nodedir/package.json').dependencies;console.log(Object.entries(p).map(e=>e.join('@')).sort().join(' '))")
    have=$(node -e "
      const p=require('$nodedir/package.json').dependencies;
      try { console.log(Object.keys(p).map(k=>k+'@'+require('$nodedir/node_modules/'+k+'/package.json').version).sort().join(' ')); }
      catch (e) { console.log('missing'); }")
    [ "$want" = "$have" ] && exit 0
    command -v npm >/dev/null || exit 3
    echo "installing $want into tests/node/node_modules" >&2
    (cd "$nodedir" && npm ci --ignore-scripts --no-audit --no-fund >&2) || exit 4
  ) 9>"$nodedir/.install.lock" || rc=$?
  [ $rc -ne 3 ] || "$die" "npm is not installed (needed to install tests/node's pinned references)"
  [ $rc -eq 0 ] || "$die" "npm ci failed in tests/node"
}
