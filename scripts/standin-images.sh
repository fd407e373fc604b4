#!/usr/bin/env bash
# Builds the images that stand in for the public ones deploy/compose/compose.yaml names, on
# machines without a container registry: Debian's packages on the debootstrap base that
# scripts/agent-server-image.sh makes (`switchboard/debian:<suite>-minbase`).
#
#   switchboard/standin-postgres:17    for postgres:17  (Debian's postgresql-17;
#                                      scripts/standin-images/postgres/)
#   switchboard/standin-nginx:stable   for nginx:stable (Debian's nginx;
#                                      scripts/standin-images/nginx/)
#
# Compose uses them through SWITCHBOARD_POSTGRES_IMAGE and SWITCHBOARD_PROXY_IMAGE (the last
# lines printed, ready for `export`). Each image is skipped when it exists and was built from
# the same inputs (label io.switchboard.image.inputs: a hash of its directory's files, the
# suite and the host's CA certificates), unless --rebuild.
#
# Usage: scripts/standin-images.sh [--suite SUITE] [--rebuild] [--no-host-ca]
#   --suite SUITE  the Debian base's suite [trixie] (scripts/agent-server-image.sh makes it)
#   --rebuild      build again (no layer cache) even when the images exist
#   --no-host-ca   do not add the host's /usr/local/share/ca-certificates/*.crt (added by
#                  default so that apt works through a TLS-inspecting proxy the host trusts)
# Needs: a running Docker daemon and the base image. Exit status non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
suite=trixie
rebuild=""
host_ca=1
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite="${2:?--suite needs a value}"; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    --no-host-ca) host_ca=""; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "standin-images: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
base="switchboard/debian:${suite}-minbase"

step() { printf '==> %s\n' "$*"; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
if ! docker info >/dev/null 2>&1; then
  echo "standin-images: no Docker daemon answers (start dockerd, or see scripts/ci-docker.sh)" >&2
  exit 1
fi
if ! image_exists "$base"; then
  echo "standin-images: no base image $base (scripts/agent-server-image.sh --suite $suite makes it)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/standin-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

# build NAME TAG: the image of scripts/standin-images/NAME as TAG.
build() {
  local name="$1" tag="$2" src="$here/standin-images/$1" context="$work/$1" inputs built_from
  mkdir -p "$context/ca"
  cp -a "$src/." "$context/"
  if [ -n "$host_ca" ]; then
    for crt in /usr/local/share/ca-certificates/*.crt; do
      [ -f "$crt" ] && cp "$crt" "$context/ca/"
    done
  fi
  inputs=$( (cd "$context" && find . -type f | LC_ALL=C sort | xargs sha256sum; echo "$suite") |
    sha256sum | cut -c1-16)
  if [ -z "$rebuild" ] && image_exists "$tag"; then
    built_from=$(docker image inspect --format '{{index .Config.Labels "io.switchboard.image.inputs"}}' "$tag")
    if [ "$built_from" = "$inputs" ]; then
      step "$tag exists, built from these inputs (use --rebuild to build it again)"
      return
    fi
  fi
  local args=(--build-arg "BASE_IMAGE=$base" --label "io.switchboard.image.inputs=$inputs" --tag "$tag")
  [ -n "$rebuild" ] && args+=(--no-cache)
  local previous t=$SECONDS
  previous=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  step "docker build $tag from $base (Debian's packages)"
  if ! DOCKER_BUILDKIT=0 docker build "${args[@]}" "$context" >"$work/$name.log" 2>&1; then
    tail -n 30 "$work/$name.log" >&2
    echo "standin-images: docker build of $tag failed" >&2
    exit 1
  fi
  step "$tag built in $((SECONDS - t)) s"
  if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
    docker rmi "$previous" >/dev/null 2>&1 || true
  fi
}

build postgres switchboard/standin-postgres:17
build nginx switchboard/standin-nginx:stable
echo "SWITCHBOARD_POSTGRES_IMAGE=switchboard/standin-postgres:17"
echo "SWITCHBOARD_PROXY_IMAGE=switchboard/standin-nginx:stable"
