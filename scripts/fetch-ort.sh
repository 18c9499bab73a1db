#!/usr/bin/env bash
# Fetch the ONNX Runtime C SDK that anytime is pinned to (cmake/ort-version.txt)
# into a per-user cache, verify the tarball's sha256 and unpack only the files
# the build needs: headers, the Linux x64 libraries and the licence.
#
#   scripts/fetch-ort.sh          # the pinned SDK -> $ANYTIME_ORT_CACHE/<version>
#   scripts/fetch-ort.sh --alt    # the alternative release's library, used by tests
#   scripts/fetch-ort.sh --print-root [--alt]   # print where it is (fetching if needed)
#
# Cache: $ANYTIME_ORT_CACHE, default ~/.cache/anytime/ort. Nothing is committed.
# The tarball comes from npm (`npm pack`, which runs no install scripts).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
alt=0; print_root=0
for a in "$@"; do
  case "$a" in
    --alt) alt=1 ;;
    --print-root) print_root=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch-ort: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done
val() { sed -n "s/^$1=//p" "$here/cmake/ort-version.txt"; }
if [ $alt = 1 ]; then
  ver=$(val ORT_ALT_VERSION); pkg=$(val ORT_ALT_NPM_PACKAGE)
  pver=$(val ORT_ALT_NPM_VERSION); sum=$(val ORT_ALT_NPM_SHA256)
else
  ver=$(val ORT_VERSION); pkg=$(val ORT_NPM_PACKAGE)
  pver=$(val ORT_NPM_VERSION); sum=$(val ORT_NPM_SHA256)
fi
cache=${ANYTIME_ORT_CACHE:-$HOME/.cache/anytime/ort}
root="$cache/$ver"
log() { [ $print_root = 1 ] && echo "fetch-ort: $*" >&2 || echo "fetch-ort: $*"; }

if [ -f "$root/.complete" ]; then
  [ $print_root = 1 ] && echo "$root" || log "ONNX Runtime $ver already in $root"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-ort: npm is needed to download the SDK (apt-get install npm)" >&2; exit 1; }
mkdir -p "$cache/dl"
tgz="$cache/dl/$pkg-$pver.tgz"
if [ ! -f "$tgz" ] || ! echo "$sum  $tgz" | sha256sum -c --status; then
  log "downloading $pkg@$pver (~150 MB, once) ..."
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
log "verified sha256 of $tgz"
stage=$(mktemp -d "$cache/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/include" "$stage/lib"
if [ $alt = 1 ]; then
  tar -xzf "$tgz" -C "$stage" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
  mv "$stage/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$stage/lib/"
  ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"
else
  hdr='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
  tar -xzf "$tgz" -C "$stage" --no-wildcards-match-slash --wildcards \
      "$hdr/*.h" 'package/Plugins/Linux/x64/*.so' package/LICENSE
  mv "$stage/$hdr"/*.h "$stage/include/"
  mv "$stage"/package/Plugins/Linux/x64/*.so "$stage/lib/"
  mv "$stage/package/LICENSE" "$stage/LICENSE"
fi
rm -rf "$stage/package"
echo "$ver" > "$stage/.complete"
mkdir -p "$cache"; rm -rf "$root"; mv "$stage" "$root"; trap - EXIT
[ $print_root = 1 ] && echo "$root" || log "ONNX Runtime $ver unpacked into $root"
