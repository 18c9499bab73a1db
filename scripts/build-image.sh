#!/usr/bin/env bash
# Build the container image from the repository's Dockerfile with podman on a
# Debian 12 host that can reach no image registry, then smoke-test it.
#
#   scripts/build-image.sh            # base image (if missing), build, smoke test
#   scripts/build-image.sh --no-smoke # base image (if missing), build only
#
# 1. Base image: unless podman already has localhost/debian:12, debootstrap a
#    minimal Debian 12 (bookworm, variant minbase) from the Debian mirror
#    (http://deb.debian.org/debian), give it the same apt sources as the
#    official debian:12 image (bookworm, bookworm-updates, bookworm-security),
#    import it as localhost/debian:12 and also tag it docker.io/library/debian:12
#    so that the Dockerfile's `FROM debian:12` resolves to it; the build runs
#    with --pull=never and never contacts a registry.
# 2. Build the Dockerfile (podman build) as localhost/anytime:dev.
# 3. Smoke test: run the image with 127.0.0.1:$PORT published on its port 8080,
#    wait for /v2/health/ready to answer 200, POST a clearly positive and a
#    clearly negative sentence to /predict, check each answer's first label,
#    stop the container.
#
# Needs root, podman, runc, curl, and debootstrap when the base image is missing
# (scripts/install-deps.sh image). The podman flags and why they are there:
# docs/deployment.md, "Container image and the artifact cache".
# Environment: ANYTIME_IMAGE (tag, default localhost/anytime:dev),
# ANYTIME_IMAGE_PORT (smoke-test port, default 18080), ANYTIME_PODMAN_STORAGE
# (storage driver, default overlay; vfs where overlay mounts are forbidden).
# ANYTIME_BUILD_CA (a CA bundle npm in the build must trust; see step 2 here).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

IMAGE=${ANYTIME_IMAGE:-localhost/anytime:dev}
BASE=localhost/debian:12
BASE_ALIAS=docker.io/library/debian:12
MIRROR=http://deb.debian.org/debian
SECURITY_MIRROR=http://deb.debian.org/debian-security
PORT=${ANYTIME_IMAGE_PORT:-18080}
STORAGE=${ANYTIME_PODMAN_STORAGE:-overlay}
smoke=1
for a in "$@"; do
  case "$a" in
    --no-smoke) smoke=0 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done

# Flags every podman call gets. Explicit storage driver: one choice for every
# call (podman refuses a store created with another driver). cgroupfs and a
# file events log: no systemd (and no journald) need be running, as in a
# container or VM sandbox. runc, not Debian's default crun: crun 1.8.1 refuses
# a hybrid cgroup v1/v2 host ("cgroups in hybrid mode not supported, drop all
# controllers from cgroupv2"); runc runs there and on a normal host alike.
podman_flags=(--storage-driver "$STORAGE" --cgroup-manager cgroupfs --events-backend file --runtime runc)
P() { podman "${podman_flags[@]}" "$@"; }
# Explicit rlimits for the build's RUN step and the smoke-test container:
# podman's defaults (nofile and nproc 1048576 for root) cannot be set where
# root lacks CAP_SYS_RESOURCE ("setrlimit `RLIMIT_NOFILE`: Operation not
# permitted"); this host's own hard open-files limit, and nproc 32768 (or the
# host's limit if lower), can.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
nproc=$(ulimit -Hu); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
step() { echo "build-image: [$(date -u +%H:%M:%S)] $*"; }
fail() { echo "build-image: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (podman's root store, debootstrap)"
for c in podman runc curl; do
  command -v "$c" >/dev/null || fail "'$c' is not installed (scripts/install-deps.sh image)"
done

# --- 1. base image -----------------------------------------------------------
if P image exists "$BASE"; then
  step "base image $BASE already present, not rebuilding it"
else
  command -v debootstrap >/dev/null || fail "'debootstrap' is not installed (scripts/install-deps.sh image)"
  rootfs=$(mktemp -d /var/tmp/anytime-debootstrap.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  step "debootstrap bookworm (minbase) from $MIRROR into $rootfs ..."
  t0=$(date +%s)
  nice debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" \
    || fail "debootstrap into $rootfs (see $rootfs/debootstrap/debootstrap.log if it is still there)"
  step "debootstrap done in $(( $(date +%s) - t0 )) s"
  # The official image's apt sources (deb822), and no package cache or lists.
  rm -f "$rootfs/etc/apt/sources.list"
  cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/debootstrap
  step "importing $rootfs as $BASE ..."
  tar -C "$rootfs" --numeric-owner -c . | P import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null \
    || fail "podman import of the debootstrap tree as $BASE"
  rm -rf "$rootfs"; trap - EXIT
  step "deleted $rootfs"
fi
P tag "$BASE" "$BASE_ALIAS" || fail "podman tag $BASE $BASE_ALIAS"

# --- 2. build ----------------------------------------------------------------
# A host whose HTTPS goes through a TLS-inspecting proxy trusts that proxy's CA
# through a local certificate (/usr/local/share/ca-certificates, or the bundle
# named by ANYTIME_BUILD_CA); the image does not, so npm in the RUN step fails
# with SELF_SIGNED_CERT_IN_CHAIN. Then the host's CA bundle, and an npmrc
# naming it, are bind-mounted read-only into the build (at build time only:
# neither is in the image). On a host without local CAs nothing is mounted.
build_mounts=()
ca=${ANYTIME_BUILD_CA:-}
if [ -z "$ca" ] && compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  ca=/etc/ssl/certs/ca-certificates.crt
fi
if [ -n "$ca" ]; then
  [ -r "$ca" ] || fail "CA bundle $ca is not readable"
  npmrc=$(mktemp /var/tmp/anytime-build-npmrc.XXXXXX)
  trap 'rm -f "$npmrc"' EXIT
  echo "cafile=/run/anytime-build-ca.crt" > "$npmrc"; chmod 0644 "$npmrc"
  build_mounts=(-v "$ca:/run/anytime-build-ca.crt:ro" -v "$npmrc:/etc/npmrc:ro" -v "$npmrc:/usr/etc/npmrc:ro")
  step "host has local CA certificates: npm in the build trusts $ca (mounted, not copied)"
fi
# --network host: the RUN step fetches Debian packages and the pinned ONNX
# Runtime SDK over the host's own network, with no bridge or firewall rules.
step "building $here/Dockerfile as $IMAGE (compiles anytime; several minutes) ..."
t0=$(date +%s)
nice -n 10 podman "${podman_flags[@]}" build --pull=never --network host --runtime runc "${ulimits[@]}" \
  ${build_mounts[@]+"${build_mounts[@]}"} \
  -f "$here/Dockerfile" -t "$IMAGE" "$here" \
  || fail "podman build of $here/Dockerfile (the output above names the failing step)"
build_s=$(( $(date +%s) - t0 ))
[ -z "$ca" ] || { rm -f "$npmrc"; trap - EXIT; }
step "built $IMAGE in $build_s s"
P images --filter reference="$IMAGE" --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' \
  | sed 's/^/build-image: /'

[ $smoke = 1 ] || { step "done (no smoke test)"; exit 0; }

# --- 3. smoke test -------------------------------------------------------------
name=anytime-smoke-$$
step "starting $IMAGE as $name on 127.0.0.1:$PORT ..."
P rm -f -i "$name" >/dev/null 2>&1 || true
t0=$(date +%s.%N)
P run -d --rm --name "$name" "${ulimits[@]}" -p "127.0.0.1:$PORT:8080" "$IMAGE" >/dev/null \
  || fail "podman run -p 127.0.0.1:$PORT:8080 $IMAGE"
trap 'P stop -t 10 "$name" >/dev/null 2>&1 || true' EXIT
ready=0
for _ in $(seq 1 600); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/health/ready" || true)
  [ "$code" = 200 ] && { ready=1; break; }
  P container exists "$name" || break
  sleep 0.2
done
if [ $ready != 1 ]; then
  echo "build-image: the container's log:" >&2
  P logs "$name" >&2 2>&1 || true
  fail "/v2/health/ready did not answer 200 (last status: ${code:-none})"
fi
ready_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
step "ready after $ready_s s (from podman run to the first 200 on /v2/health/ready)"
# Two sentences the default model (sentiment-large, test accuracy 0.72:
# models/training_results.json) labels right with p > 0.9, one each way, so
# a model that answers one label for everything, or a label map turned
# round, fails. A classifier answers a JSON array of {"score","label"},
# the most likely first.
predict() { # TEXT EXPECTED_LABEL
  local answer
  answer=$(curl -s -S --max-time 30 -H 'content-type: application/json' \
    -d "{\"inputs\":\"$1\"}" "http://127.0.0.1:$PORT/predict") || fail "POST /predict did not answer"
  step "POST /predict {\"inputs\":\"$1\"} -> $answer"
  local first; first=$(sed -n 's/^\[{[^}]*"label":"\([^"]*\)".*/\1/p' <<<"$answer")
  [ "$first" = "$2" ] || fail "/predict answered '${first:-no label}' first for \"$1\", not '$2'"
}
predict "a wonderful , moving film" positive
predict "terrible and boring" negative
P stop -t 10 "$name" >/dev/null || fail "podman stop $name"
trap - EXIT
step "smoke test passed; container stopped. Image $IMAGE built in $build_s s, ready in $ready_s s"
