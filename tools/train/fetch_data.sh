#!/bin/sh
# Fetch the Pang & Lee polarity corpus (inside Debian's python3-pattern
# package) into ${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data} and write
# pang-lee/{train,val,test}.csv from the committed split (splits.json).
# Idempotent: when the corpus is already unpacked and the CSVs match, it only
# re-checks them (well under a second).  The corpus is for research use and is
# never committed or redistributed.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${ANYTIME_DATA_DIR:-$HOME/.cache/anytime/data}
CORPUS="$DATA/pattern/usr/share/doc/python3-pattern/test/corpora/polarity-en-pang&lee2.csv"
PY=/usr/bin/python3
mkdir -p "$DATA/dl"

if [ ! -f "$CORPUS" ]; then
    deb=$(ls "$DATA"/dl/python3-pattern_*_all.deb 2>/dev/null | head -n 1 || true)
    if [ -z "$deb" ]; then
        echo "fetch_data: downloading python3-pattern with apt-get download" >&2
        if ! (cd "$DATA/dl" && apt-get download python3-pattern); then
            # A fresh machine may have no package lists yet.
            if [ "$(id -u)" = 0 ]; then
                apt-get update >&2
                (cd "$DATA/dl" && apt-get download python3-pattern)
            else
                echo "fetch_data: apt-get download failed (run 'apt-get update' as root first)" >&2
                exit 1
            fi
        fi
        deb=$(ls "$DATA"/dl/python3-pattern_*_all.deb | head -n 1)
    fi
    rm -rf "$DATA/pattern.tmp"
    mkdir -p "$DATA/pattern.tmp"
    dpkg-deb -x "$deb" "$DATA/pattern.tmp"
    rm -rf "$DATA/pattern"
    mv "$DATA/pattern.tmp" "$DATA/pattern"
fi

exec "$PY" "$HERE/data.py" --data-dir "$DATA"
