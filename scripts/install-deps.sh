#!/usr/bin/env bash
# Install what anytime needs and this machine lacks: Debian packages from
# scripts/deps.txt (by group), Node.js + npm when no `node` is on PATH, and
# the pinned ONNX Runtime SDK (scripts/fetch-ort.sh, sha256-checked).
#
#   scripts/install-deps.sh build test     # groups: build test bench train image
#
# Runs apt-get as root (directly, or through sudo). Does nothing for what is
# already installed at its pinned version, so it is cheap to call every
# time; a package at another version is installed at the pin.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
groups=${*:-build}
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO=sudo || { echo "install-deps: need root or sudo for apt-get" >&2; exit 1; }
fi
missing=()
for g in $groups; do
  case "$g" in build|test|bench|train|image) ;; *) echo "install-deps: unknown group '$g'" >&2; exit 2 ;; esac
  while read -r grp spec; do
    [ "$grp" = "$g" ] || continue
    pkg=${spec%%=*} ver=${spec#*=}
    # missing, or installed at another version than the pin (the image's
    # own older curl, say): both get the pinned version. ctest deps_pinned
    # fails while they differ.
    # (`|| true`: dpkg-query fails for a package never installed, which under
    # pipefail would end this script, silently, on a fresh system.)
    have=$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null | sed -n 's/^install ok installed //p' || true)
    if [ "$have" != "$ver" ]; then
      [ -n "$have" ] && echo "install-deps: $pkg is $have, deps.txt pins $ver" >&2
      missing+=("$spec")
    fi
  done < <(grep -v '^#' "$here/scripts/deps.txt")
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  if ! $SUDO apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}"; then
    echo "install-deps: WARNING: a pinned version is no longer in the archive; installing" \
         "the archive's current versions of: ${missing[*]%%=*} (ctest deps_pinned will name" \
         "each package that now differs from its pin)" >&2
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]%%=*}"
  fi
else
  echo "install-deps: Debian packages for '$groups' already installed"
fi
bash "$here/scripts/fetch-ort.sh"
