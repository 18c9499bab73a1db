#!/usr/bin/env bash
# Fetch the ONNX Runtime C SDK that anytime is pinned to (cmake/ort-version.txt)
# into a per-user cache, verify each tarball's sha256 and unpack only the files
# the build needs.
#
#   scripts/fetch-ort.sh          # the pinned SDK -> $ANYTIME_ORT_CACHE/<release>+h<headers>
#   scripts/fetch-ort.sh --alt    # the alternative release's library, used by tests
#   scripts/fetch-ort.sh --print-root [--alt]   # print where it is (fetching if needed)
#
# The pinned SDK is put together from two tarballs: the library of release
# ORT_VERSION (ORT_NPM_*) and the C API headers of ORT_HEADERS_VERSION
# (ORT_HEADERS_NPM_*, with ONNX Runtime's licence), since no reachable package
# carries both for the release we run. Cache: $ANYTIME_ORT_CACHE, default
# ~/.cache/anytime/ort. Tarballs come from npm (`npm pack`, which runs no
# install scripts) and are kept in <cache>/dl. Nothing is committed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
alt=0; print_root=0
for a in "$@"; do
  case "$a" in
    --alt) alt=1 ;;
    --print-root) print_root=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch-ort: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done
val() {
  local v; v=$(sed -n "s/^$1=//p" "$here/cmake/ort-version.txt")
  [ -n "$v" ] || { echo "fetch-ort: cmake/ort-version.txt has no $1" >&2; exit 1; }
  echo "$v"
}
cache=${ANYTIME_ORT_CACHE:-$HOME/.cache/anytime/ort}
if [ $alt = 1 ]; then
  ver=$(val ORT_ALT_VERSION); root="$cache/$ver-lib"
else
  ver=$(val ORT_VERSION); hver=$(val ORT_HEADERS_VERSION); root="$cache/$ver+h$hver"
fi
log() { [ $print_root = 1 ] && echo "fetch-ort: $*" >&2 || echo "fetch-ort: $*"; }

if [ -f "$root/.complete" ]; then
  [ $print_root = 1 ] && echo "$root" || log "ONNX Runtime $ver already in $root"
  exit 0
fi

# fetch PREFIX: download (once) and check the tarball named by PREFIX_NPM_*;
# prints its path.
fetch() {
  local pkg pver sum tgz tmp got
  pkg=$(val "$1_NPM_PACKAGE"); pver=$(val "$1_NPM_VERSION"); sum=$(val "$1_NPM_SHA256")
  tgz="$cache/dl/$pkg-$pver.tgz"
  if [ ! -f "$tgz" ] || ! echo "$sum  $tgz" | sha256sum -c --status; then
    command -v npm >/dev/null ||
      { echo "fetch-ort: npm is needed to download $pkg (apt-get install npm)" >&2; exit 1; }
    log "downloading $pkg@$pver (100-150 MB, once) ..." >&2
    tmp=$(mktemp -d "$cache/dl/tmp.XXXXXX")
    (cd "$tmp" && npm pack --silent "$pkg@$pver" >/dev/null)
    mv "$tmp/$pkg-$pver.tgz" "$tgz.part" && rmdir "$tmp"
    got=$(sha256sum "$tgz.part" | cut -d' ' -f1)
    if [ "$got" != "$sum" ]; then
      rm -f "$tgz.part"
      echo "fetch-ort: sha256 mismatch for $pkg@$pver: expected $sum, got $got" >&2; exit 1
    fi
    mv "$tgz.part" "$tgz"
  fi
  log "verified sha256 of $tgz" >&2
  echo "$tgz"
}

mkdir -p "$cache/dl"
stage=$(mktemp -d "$cache/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/x"
# the library, as lib/libonnxruntime.so.1 with a libonnxruntime.so link
pfx=ORT; [ $alt = 1 ] && pfx=ORT_ALT
member=$(val "${pfx}_NPM_LIB")
tar -xzf "$(fetch $pfx)" -C "$stage/x" "$member"
mv "$stage/x/$member" "$stage/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"
if [ $alt = 0 ]; then
  hdr=$(val ORT_HEADERS_NPM_DIR)
  tar -xzf "$(fetch ORT_HEADERS)" -C "$stage/x" --no-wildcards-match-slash --wildcards \
      "$hdr/*.h" package/LICENSE
  mkdir -p "$stage/include"
  mv "$stage/x/$hdr"/*.h "$stage/include/"
  mv "$stage/x/package/LICENSE" "$stage/LICENSE"
  echo "library $ver ($(val ORT_NPM_PACKAGE)@$(val ORT_NPM_VERSION)), headers $hver" \
       "($(val ORT_HEADERS_NPM_PACKAGE)@$(val ORT_HEADERS_NPM_VERSION))" > "$stage/SOURCE"
fi
rm -rf "$stage/x"
echo "$ver" > "$stage/.complete"
mkdir -p "$cache"; rm -rf "$root"; mv "$stage" "$root"; trap - EXIT
[ $print_root = 1 ] && echo "$root" || log "ONNX Runtime $ver unpacked into $root"
