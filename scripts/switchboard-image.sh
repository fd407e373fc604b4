#!/usr/bin/env bash
# Builds the Switchboard image from a binary built on this host: `switchboard/switchboard:local`
# (or --tag), the `prebuilt` target of the repository's Dockerfile (the one definition of the
# image: docs/deployment.md) on the minimal Debian base that scripts/agent-server-image.sh makes
# with debootstrap (`switchboard/debian:<suite>-minbase`; no container registry is used). The
# image runs Switchboard on Kubernetes (deploy/kubernetes/), with Compose (deploy/compose/) and
# in CI (scripts/deploy-check.sh); nothing is compiled inside Docker.
#
# Usage: scripts/switchboard-image.sh [--tag TAG] [--suite SUITE] [--no-strip] [--no-host-ca]
#                                     [--rebuild] [BINARY]
#   BINARY        the switchboard binary [target/release/switchboard]; it must run on the
#                 base's glibc (one built on Debian 12 or 13 does)
#   --tag TAG     image to build [$SWITCHBOARD_IMAGE or switchboard/switchboard:local]
#   --suite SUITE the Debian base's suite [trixie]; scripts/agent-server-image.sh makes the
#                 base (run it first)
#   --no-strip    copy the binary as it is (by default its debug symbols are stripped from the
#                 copy: a debug build shrinks to a fraction)
#   --no-host-ca  do not add the host's /usr/local/share/ca-certificates/*.crt to the image
#   --rebuild     build again even when the image was built from the same binary
# Needs: a running Docker daemon; `strip` (binutils) unless --no-strip. Skips the build when
# the image exists with the same inputs (label io.switchboard.image.inputs: a hash of the
# binary, the Dockerfile and the suite). Prints progress as `==> ...` and, last, one line
# `image TAG id ID size SIZE`. Exit status non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
dockerfile="$root/Dockerfile"

tag="${SWITCHBOARD_IMAGE:-switchboard/switchboard:local}"
suite=trixie
strip=1
host_ca=1
rebuild=""
binary="$root/target/release/switchboard"
# The Dockerfile's runtime packages (`ldd` of the binary: libssl.so.3 and libcrypto.so.3, from
# trixie's libssl3t64; the PostgreSQL and SQLite clients are linked in statically).
packages="libssl3t64 ca-certificates"

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --suite) suite="${2:?--suite needs a value}"; shift 2 ;;
    --no-strip) strip=""; shift ;;
    --no-host-ca) host_ca=""; shift ;;
    --rebuild) rebuild=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "switchboard-image: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    *) binary="$1"; shift ;;
  esac
done
base="switchboard/debian:${suite}-minbase"

step() { printf '==> %s\n' "$*"; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
summary() {
  local id size
  id=$(docker image inspect --format '{{.Id}}' "$tag")
  size=$(docker image inspect --format '{{.Size}}' "$tag")
  printf 'image %s id %s size %s MB\n' "$tag" "${id#sha256:}" "$((size / 1000 / 1000))"
}

[ -x "$binary" ] || { echo "switchboard-image: no executable $binary (cargo build --release -p switchboard --bin switchboard)" >&2; exit 1; }
if ! docker info >/dev/null 2>&1; then
  echo "switchboard-image: no Docker daemon answers (start dockerd, or see scripts/ci-docker.sh)" >&2
  exit 1
fi
if ! image_exists "$base"; then
  echo "switchboard-image: no base image $base (scripts/agent-server-image.sh --suite $suite makes it)" >&2
  exit 1
fi

# Refuse a binary needing a library the image would not have.
missing=$(ldd "$binary" | awk '/=>/ {print $1}' |
  grep -v -E '^(linux-vdso|libc|libm|libdl|libpthread|librt|libgcc_s|ld-linux[^ ]*)\.so' |
  grep -v -E '^lib(ssl|crypto)\.so' || true)
if [ -n "$missing" ]; then
  echo "switchboard-image: $binary links libraries this image does not install: $missing" >&2
  exit 1
fi

inputs=$( { sha256sum <"$binary"; cat "$dockerfile"; echo "$suite $packages $strip"; } |
  sha256sum | cut -c1-16)
if [ -z "$rebuild" ] && image_exists "$tag"; then
  built_from=$(docker image inspect --format '{{index .Config.Labels "io.switchboard.image.inputs"}}' "$tag")
  if [ "$built_from" = "$inputs" ]; then
    step "$tag exists, built from these inputs (use --rebuild to build it again)"
    summary
    exit 0
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
context="$work/context"
# The context of the Dockerfile's `prebuilt` target: the Dockerfile, the binary and the site
# CA directory.
mkdir -p "$context/deploy/docker/ca"
cp "$dockerfile" "$context/Dockerfile"
if [ -n "$strip" ]; then
  command -v strip >/dev/null 2>&1 || { echo "switchboard-image: strip not found (apt-get install binutils, or --no-strip)" >&2; exit 1; }
  strip --strip-debug -o "$context/switchboard" "$binary"
else
  cp "$binary" "$context/switchboard"
fi
chmod 0755 "$context/switchboard"
if [ -n "$host_ca" ]; then
  for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$crt" ] || continue
    cp "$crt" "$context/deploy/docker/ca/"
    step "adding the host's CA certificate $(basename "$crt") (--no-host-ca to leave it out)"
  done
fi

previous=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
step "docker build $tag from $base and $binary ($(du -m "$context/switchboard" | cut -f1) MB in the image)"
# The classic builder, as scripts/agent-server-image.sh uses (Debian's docker.io has no buildx;
# a newer client without buildx cannot use BuildKit); `--target prebuilt` builds no compile
# stage with either builder.
if ! DOCKER_BUILDKIT=0 docker build --target prebuilt --build-arg "BASE_IMAGE=$base" \
  --build-arg "RUNTIME_PACKAGES=$packages" --label "io.switchboard.image.inputs=$inputs" --tag "$tag" "$context" 2>&1 |
  { grep -v -e '^DEPRECATED: The legacy builder' -e 'BuildKit is currently disabled' \
    -e 'Install the buildx component' -e 'https://docs.docker.com/go/buildx/' -e '^ *$' || true; }; then
  echo "switchboard-image: docker build failed" >&2
  exit 1
fi
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  docker rmi "$previous" >/dev/null 2>&1 && step "removed the previous image ${previous#sha256:}"
fi
summary
