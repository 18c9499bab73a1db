#!/usr/bin/env bash
# tests/data/hf/make_hub.sh HUB_DIR — build a Hugging Face hub cache layout in
# HUB_DIR around the test models, the way huggingface_hub writes it:
# models--ORG--NAME/blobs/<sha256> (content-addressed files),
# snapshots/<commit>/<path> (relative symlinks into ../../blobs),
# refs/<revision> (a file holding the commit hash). Used by the unit and
# integration tests of model resolution and the artifact cache.
#
# Repositories made:
#   anytime-test/tiny-sentiment  refs/main -> C_MAIN: config (3 labels), vocab.txt,
#                                onnx/model.onnx, onnx/model_quantized.onnx;
#                                refs/v1 -> C_V1: top-level model.onnx, other config;
#                                snapshot C_AMBIG shares a 12-digit prefix with C_MAIN
#   anytime-test/tiny-embedder   refs/main: onnx/model.onnx (sentence_embedding), vocab.txt
#   anytime-test/no-onnx         refs/main: config.json only
#   anytime-test/evil            refs/main holds "../../../../etc" (not a hash);
#                                refs/outside -> a snapshot that is a symlink out of the repo;
#                                refs/leaky -> a snapshot whose model.onnx links out of the repo
set -euo pipefail
hub=${1:?usage: make_hub.sh HUB_DIR}
here=$(cd "$(dirname "$0")" && pwd)
models=$here/../models
C_MAIN=abcdef123456aaaaaaaaaaaaaaaaaaaaaaaaaaaa
C_AMBIG=abcdef123456bbbbbbbbbbbbbbbbbbbbbbbbbbbb
C_V1=0123456789abcdef0123456789abcdef01234567
C_EMB=fedcba9876543210fedcba9876543210fedcba98

# put REPO COMMIT RELPATH SRCFILE — store SRCFILE as a blob and link it.
put() {
  local repo=$hub/models--$1 commit=$2 rel=$3 src=$4
  mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$commit/$(dirname "$rel")"
  local sha; sha=$(sha256sum "$src" | cut -d' ' -f1)
  [ -e "$repo/blobs/$sha" ] || cp "$src" "$repo/blobs/$sha"
  local up="../.." d=$rel
  while [ "$(dirname "$d")" != "." ]; do up="../$up"; d=$(dirname "$d"); done
  ln -sfn "$up/blobs/$sha" "$repo/snapshots/$commit/$rel"
}
ref() { mkdir -p "$(dirname "$hub/models--$1/refs/$2")"; printf '%s' "$3" > "$hub/models--$1/refs/$2"; }

R=anytime-test--tiny-sentiment
put $R $C_MAIN config.json "$here/config_classifier.json"
put $R $C_MAIN vocab.txt "$here/vocab.txt"
put $R $C_MAIN onnx/model.onnx "$models/tiny_encoder.onnx"
put $R $C_MAIN onnx/model_quantized.onnx "$models/tiny_encoder.onnx"
ref $R main $C_MAIN
put $R $C_V1 config.json "$here/config_classifier_v1.json"
put $R $C_V1 vocab.txt "$here/vocab.txt"
put $R $C_V1 model.onnx "$models/tiny_encoder.onnx"
ref $R v1 $C_V1
put $R $C_AMBIG model.onnx "$models/tiny_encoder.onnx"

R=anytime-test--tiny-embedder
put $R $C_EMB config.json "$here/config_embedder.json"
put $R $C_EMB vocab.txt "$here/vocab.txt"
put $R $C_EMB onnx/model.onnx "$here/tiny_embedder.onnx"
ref $R main $C_EMB

R=anytime-test--no-onnx
put $R $C_MAIN config.json "$here/config_classifier.json"
ref $R main $C_MAIN

R=anytime-test--evil
mkdir -p "$hub/models--$R/snapshots" "$hub/outside-snapshot"
cp "$models/tiny_encoder.onnx" "$hub/outside-snapshot/model.onnx"
ref $R main "../../../../etc"
ln -sfn "$hub/outside-snapshot" "$hub/models--$R/snapshots/$C_V1"
ref $R outside $C_V1
mkdir -p "$hub/models--$R/snapshots/$C_EMB"
ln -sfn "$hub/outside-snapshot/model.onnx" "$hub/models--$R/snapshots/$C_EMB/model.onnx"
ref $R leaky $C_EMB
