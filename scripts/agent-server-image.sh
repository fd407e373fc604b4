#!/usr/bin/env bash
# Builds the agent-server image for Switchboard's Docker runtime without any container
# registry: `switchboard/agent-server:local` (or --tag) holding the OpenHands agent server
# (openhands-agent-server, -sdk and -tools 1.58.2 from PyPI) on a minimal Debian.
#
#   1. Base: a Debian root file system made with `debootstrap --variant=minbase` from Debian's
#      package archive (suite trixie: Python 3.13; the agent server needs 3.12+), imported with
#      `docker import` as `switchboard/debian:<suite>-minbase`. Skipped when that image exists.
#   2. `docker build` of scripts/agent-server-image/Dockerfile on that base: python3 + venv,
#      tmux, git, ca-certificates, the agent server in /opt/agent-server (installed with uv and
#      the certifi override the 1.58.x wheels need), user `openhands` (uid 10001), workspace
#      /workspace/project, entry point `agent-server --host 0.0.0.0` + the container's arguments
#      (default `--port 8000`).
#   Skips everything when the image exists and was built from the same inputs (label
#   io.switchboard.image.inputs: a hash of the Dockerfile, entrypoint.sh, the agent server's
#   version and the suite), unless --rebuild.
#
# Usage: scripts/agent-server-image.sh [--tag TAG] [--rebuild] [--rebuild-base]
#                                       [--suite SUITE] [--mirror URL] [--no-host-ca]
#   --tag TAG        image to build [$AGENT_SERVER_IMAGE or switchboard/agent-server:local]
#   --rebuild        build the image again (no layer cache) even when it exists
#   --rebuild-base   also make the Debian base again with debootstrap
#   --suite SUITE    Debian suite for the base [trixie]; its python3 must be 3.12+
#   --mirror URL     Debian archive for debootstrap and apt [http://deb.debian.org/debian]
#   --no-host-ca     do not add the host's /usr/local/share/ca-certificates/*.crt to the image
#                    (they are added by default so that a TLS-inspecting proxy that the host
#                    trusts is trusted for the PyPI install too)
# Needs: a running Docker daemon, root (debootstrap), and debootstrap (apt-get install
# debootstrap) when the base image is missing. Prints progress as `==> ...` and, last, one line
# `image TAG id ID size SIZE`. Exit status non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
context_src="$here/agent-server-image"

tag="${AGENT_SERVER_IMAGE:-switchboard/agent-server:local}"
suite=trixie
mirror=http://deb.debian.org/debian
agent_server_version=1.58.2
rebuild=""
rebuild_base=""
host_ca=1

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    --rebuild-base) rebuild=1; rebuild_base=1; shift ;;
    --suite) suite="${2:?--suite needs a value}"; shift 2 ;;
    --mirror) mirror="${2:?--mirror needs a value}"; shift 2 ;;
    --no-host-ca) host_ca=""; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "agent-server-image: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
base="switchboard/debian:${suite}-minbase"

started=$SECONDS
step() { printf '==> %s\n' "$*"; }
elapsed() { printf '%ss' "$((SECONDS - ${1:-$started}))"; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
summary() {
  local id size
  id=$(docker image inspect --format '{{.Id}}' "$tag")
  size=$(docker image inspect --format '{{.Size}}' "$tag")
  printf 'image %s id %s size %s MB\n' "$tag" "${id#sha256:}" "$((size / 1000 / 1000))"
}

if ! docker info >/dev/null 2>&1; then
  echo "agent-server-image: no Docker daemon answers (start dockerd, or see scripts/ci-docker.sh)" >&2
  exit 1
fi

# What the image is built from; an image with another hash is stale.
inputs=$(cat "$context_src/Dockerfile" "$context_src/entrypoint.sh" |
  { sha256sum; echo "$agent_server_version $suite"; } | sha256sum | cut -c1-16)
if [ -z "$rebuild" ] && image_exists "$tag"; then
  built_from=$(docker image inspect --format '{{index .Config.Labels "io.switchboard.image.inputs"}}' "$tag")
  if [ "$built_from" = "$inputs" ]; then
    step "$tag exists, built from these inputs (use --rebuild to build it again)"
    summary
    exit 0
  fi
  step "$tag exists but was built from other inputs (${built_from:-unknown}, now $inputs): building"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/agent-server-image.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

# ---------------------------------------------------------------- 1. Debian base
if [ -n "$rebuild_base" ] || ! image_exists "$base"; then
  if [ "$(id -u)" != 0 ]; then
    echo "agent-server-image: debootstrap needs root to make $base" >&2
    exit 1
  fi
  command -v debootstrap >/dev/null 2>&1 || {
    echo "agent-server-image: debootstrap not found (apt-get install debootstrap)" >&2
    exit 1
  }
  t=$SECONDS
  step "debootstrap --variant=minbase $suite from $mirror (about a minute; log: $work/debootstrap.log)"
  if ! debootstrap --variant=minbase "$suite" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    echo "agent-server-image: debootstrap failed" >&2
    exit 1
  fi
  # No package caches in the image; apt fetches fresh lists in the build.
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/var/log/*.log
  step "docker import as $base"
  tar --numeric-owner --xattrs -C "$work/rootfs" -c . |
    docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/bash"]' \
      --message "debootstrap --variant=minbase $suite $mirror" \
      - "$base" >/dev/null
  rm -rf "$work/rootfs"
  step "base ready in $(elapsed "$t")"
else
  step "base $base exists (use --rebuild-base to make it again)"
fi

# ---------------------------------------------------------------- 2. agent server image
context="$work/context"
mkdir -p "$context/ca"
cp "$context_src/Dockerfile" "$context_src/entrypoint.sh" "$context/"
chmod 0755 "$context/entrypoint.sh"
if [ -n "$host_ca" ]; then
  for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$crt" ] || continue
    cp "$crt" "$context/ca/"
    step "adding the host's CA certificate $(basename "$crt") (--no-host-ca to leave it out)"
  done
fi

build_args=(--build-arg "BASE_IMAGE=$base" --build-arg "AGENT_SERVER_VERSION=$agent_server_version"
  --label "io.switchboard.image.inputs=$inputs" --tag "$tag")
[ -n "$rebuild" ] && build_args+=(--no-cache)
previous=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
t=$SECONDS
step "docker build $tag (openhands-agent-server $agent_server_version; a few minutes from nothing)"
# The classic builder: it comes with every engine, Debian's docker.io has no buildx.
# (The filter drops the newer clients' notice about it; pipefail keeps the build's status.)
if ! DOCKER_BUILDKIT=0 docker build "${build_args[@]}" "$context" 2>&1 |
  { grep -v -e '^DEPRECATED: The legacy builder' -e 'BuildKit is currently disabled' \
    -e 'Install the buildx component' -e 'https://docs.docker.com/go/buildx/' -e '^ *$' || true; }; then
  echo "agent-server-image: docker build failed" >&2
  exit 1
fi
step "built in $(elapsed "$t"); total $(elapsed)"
# The image this one replaces, now untagged: remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  if docker rmi "$previous" >/dev/null 2>&1; then
    step "removed the previous image ${previous#sha256:}"
  fi
fi
summary
