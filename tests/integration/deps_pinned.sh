#!/usr/bin/env bash
# tests/integration/deps_pinned.sh — ctest `deps_pinned`: the Debian packages
# installed here are the versions scripts/deps.txt pins (issue #21, item 5).
# scripts/install-deps.sh installs a pin, and falls back to the archive's
# current version when the pin has left the archive; this test is what makes
# that fallback visible: a package at another version fails it, naming the
# package, the pin and the installed version, until deps.txt is updated on
# purpose (for libutf8proc-dev, with src/text/tk_compat.h regenerated: ctest
# text_unicode_compat says whether it must be).
#
# Groups `build` and `test` (what the suite needs) must be installed; a
# `bench` or `train` package need not be, but if it is, it must be the pin.
# Also checked: libutf8proc2, the library the binary loads, is the version
# libutf8proc-dev's pin requires.
#
# Seen to fail (2026-12-01, on this host before install-deps.sh enforced
# versions): "FAIL: curl: scripts/deps.txt pins 7.88.1-10+deb12u15 (group
# build), installed is 7.88.1-10+deb12u14" — install-deps.sh then checked
# only that a package was installed, not its version.
set -euo pipefail
root=${ANYTIME_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v dpkg-query >/dev/null || { echo "FAIL: no dpkg-query: the pins are Debian package versions" >&2; exit 1; }
bad=0 n=0
check() { # package pin group required
  local have
  # (`|| true`: dpkg-query fails for a package never installed, which under
  # pipefail ended this script silently, exit 1 and no message, on a fresh
  # machine without the optional bench group: seen 2026-12-02)
  have=$(dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^install ok installed //p' || true)
  if [ -z "$have" ]; then
    if [ "$4" = yes ]; then echo "FAIL: $1: scripts/deps.txt pins $2 (group $3), not installed" >&2; bad=1; fi
    return 0
  fi
  n=$((n + 1))
  if [ "$have" != "$2" ]; then
    echo "FAIL: $1: scripts/deps.txt pins $2 (group $3), installed is $have" >&2
    bad=1
  fi
}
while read -r grp spec; do
  [ -n "$grp" ] || continue
  pkg=${spec%%=*} ver=${spec#*=}
  [ "$pkg" != "$spec" ] || { echo "FAIL: scripts/deps.txt: '$spec' has no =version" >&2; bad=1; continue; }
  case "$grp" in build|test) req=yes ;; *) req=no ;; esac
  check "$pkg" "$ver" "$grp" "$req"
  if [ "$pkg" = libutf8proc-dev ]; then check libutf8proc2 "$ver" "$grp (libutf8proc-dev's library)" "$req"; fi
done < <(grep -v '^#' "$root/scripts/deps.txt")
if [ $bad -ne 0 ]; then
  echo "FAIL: installed packages differ from scripts/deps.txt: run scripts/install-deps.sh build test," \
       "or, if the archive has moved on, update the pin deliberately" >&2
  exit 1
fi
echo "PASS: $n installed packages match their pins in scripts/deps.txt"
