#!/usr/bin/env bash
# Makes Docker usable for CI's Docker tests, or says plainly why it cannot.
#
#   1. Installs Debian's `docker.io` (and `debootstrap`, for the image's base) when missing, as
#      .ci/run installs packages: apt-get with a policy-rc.d guard so that no package script
#      starts a service.
#   2. Starts `dockerd` in the background when no daemon answers (there is no init system on
#      CI machines): detached, logging to $DOCKERD_LOG [/var/log/dockerd.log]; waits up to
#      $DOCKERD_WAIT seconds [30] for `docker info`. The daemon is left running.
#   3. Builds the agent-server image with scripts/agent-server-image.sh (skipped when it
#      exists; $AGENT_SERVER_IMAGE overrides the tag) and runs one container of it.
#   4. gVisor (issue 18): installs Debian's `runsc` when missing, registers it in
#      /etc/docker/daemon.json as the runtime `runsc` (keeping every other key; the JSON is
#      checked before it replaces the file), sends dockerd SIGHUP (no restart) and runs one
#      container of the image under it. Prints `GVISOR_OK=1`, or one line `gvisor: not
#      available (<reason>)`; either way Docker itself stays usable.
#
# When Docker cannot be used (no root, the install fails, the daemon does not start, the image
# does not build, a container does not run) it prints one line `docker: not available
# (<reason>)` and exits 0, so CI can skip the Docker tests and say why; with --require it exits
# 1 instead. When Docker is usable the last line is `DOCKER_OK=1`. Nothing is exported: callers
# read the last line, e.g. `[ "$(bash scripts/ci-docker.sh | tail -n 1)" = DOCKER_OK=1 ]`.
#
# Usage: scripts/ci-docker.sh [--require]
set -euo pipefail
cd "$(dirname "$0")/.."

require=""
case "${1:-}" in
  --require) require=1 ;;
  "") ;;
  *) echo "ci-docker: unknown argument: $1" >&2; exit 2 ;;
esac
dockerd_log="${DOCKERD_LOG:-/var/log/dockerd.log}"
dockerd_wait="${DOCKERD_WAIT:-30}"
image="${AGENT_SERVER_IMAGE:-switchboard/agent-server:local}"

unavailable() {
  echo "docker: not available ($*)"
  if [ -n "$require" ]; then exit 1; fi
  exit 0
}

# Root for apt-get, dockerd and debootstrap: ourselves, or password-less sudo. Not needed when
# the daemon already answers this user (e.g. a member of group `docker`) and the image's base
# exists.
sudo=()
if [ "$(id -u)" != 0 ] && ! docker info >/dev/null 2>&1; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    unavailable "not root, no password-less sudo, and no Docker daemon answering this user"
  fi
fi

daemon_answers() { "${sudo[@]}" docker info >/dev/null 2>&1; }

# ---------------------------------------------------------------- 1. packages
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || "${sudo[@]}" docker image inspect \
  "switchboard/debian:trixie-minbase" >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || unavailable "${missing[*]} missing and no apt-get"
  echo "ci-docker: installing ${missing[*]}"
  # Keep package scripts from starting services (docker.io's would try systemd).
  policy=/usr/sbin/policy-rc.d
  created_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    created_policy=1
  fi
  remove_policy() { if [ -n "$created_policy" ]; then "${sudo[@]}" rm -f "$policy"; fi; }
  trap remove_policy EXIT
  apt_log=$(mktemp "${TMPDIR:-/tmp}/ci-docker-apt.XXXXXX")
  if ! { "${sudo[@]}" apt-get update &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    remove_policy
    unavailable "apt-get install ${missing[*]} failed"
  fi
  rm -f "$apt_log"
  remove_policy
  trap - EXIT
fi
command -v docker >/dev/null 2>&1 || unavailable "no docker client after installing docker.io"

# ---------------------------------------------------------------- 2. daemon
if ! daemon_answers; then
  echo "ci-docker: starting dockerd (log: $dockerd_log)"
  # Detached from this shell and its output, so CI's pipes close when this script ends.
  "${sudo[@]}" sh -c "setsid dockerd >>'$dockerd_log' 2>&1 </dev/null &"
  waited=0
  until daemon_answers; do
    if [ "$waited" -ge "$dockerd_wait" ]; then
      reason=$("${sudo[@]}" tail -n 3 "$dockerd_log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)
      unavailable "dockerd did not answer within ${dockerd_wait}s: ${reason:-no log}"
    fi
    sleep 1
    waited=$((waited + 1))
  done
fi
driver=$("${sudo[@]}" docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}, cgroup v{{.CgroupVersion}}' 2>/dev/null || true)
echo "ci-docker: daemon answers (engine $driver)"

# ---------------------------------------------------------------- 3. image
build_log=$(mktemp "${TMPDIR:-/tmp}/ci-docker-build.XXXXXX")
if ! "${sudo[@]}" env AGENT_SERVER_IMAGE="$image" bash scripts/agent-server-image.sh >"$build_log" 2>&1; then
  tail -n 30 "$build_log" >&2
  unavailable "building $image failed (scripts/agent-server-image.sh)"
fi
grep -E '^(==>|image )' "$build_log" || true
rm -f "$build_log"
if ! out=$("${sudo[@]}" docker run --rm --entrypoint python3 "$image" -c 'print("ok")' 2>&1) ||
  [ "$out" != ok ]; then
  unavailable "cannot run a container of $image: $(echo "$out" | tail -n 1 | cut -c1-200)"
fi
# ---------------------------------------------------------------- 4. gVisor
gvisor_unavailable() { echo "gvisor: not available ($*)"; }
# Whether the daemon lists a runtime named runsc (no `grep -q` in a pipe: with pipefail, an
# early exit of grep fails the pipe).
runsc_registered() {
  local runtimes
  runtimes=$("${sudo[@]}" docker info --format '{{json .Runtimes}}' 2>/dev/null || true)
  case "$runtimes" in *'"runsc"'*) return 0 ;; *) return 1 ;; esac
}
gvisor() {
  if ! command -v runsc >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || { gvisor_unavailable "runsc missing and no apt-get"; return; }
    echo "ci-docker: installing runsc"
    if ! { "${sudo[@]}" apt-get update &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends runsc; } >/tmp/ci-docker-runsc.log 2>&1; then
      tail -n 5 /tmp/ci-docker-runsc.log >&2
      gvisor_unavailable "apt-get install runsc failed"
      return
    fi
  fi
  local runsc_path
  runsc_path=$(command -v runsc)
  if ! runsc_registered; then
    # ptrace: works without KVM and inside VMs; --network=host: the sandbox uses the
    # container's own network namespace (Docker's bridge), which this runsc needs.
    if ! "${sudo[@]}" python3 - "$runsc_path" <<'PY'
import json, os, sys
path = "/etc/docker/daemon.json"
config = {}
if os.path.exists(path):
    with open(path) as f:
        config = json.load(f)
config.setdefault("runtimes", {})["runsc"] = {
    "path": sys.argv[1], "runtimeArgs": ["--platform=ptrace", "--network=host"]}
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path + ".tmp", "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
with open(path + ".tmp") as f:
    json.load(f)
os.replace(path + ".tmp", path)
PY
    then
      gvisor_unavailable "cannot register runsc in /etc/docker/daemon.json"
      return
    fi
    local pid
    pid=$(pidof dockerd 2>/dev/null || pgrep -x dockerd 2>/dev/null || true)
    [ -n "$pid" ] || { gvisor_unavailable "no dockerd process to reload"; return; }
    "${sudo[@]}" kill -HUP $pid
    local waited=0
    until runsc_registered; do
      if [ "$waited" -ge 10 ]; then gvisor_unavailable "dockerd did not load the runsc runtime"; return; fi
      sleep 1
      waited=$((waited + 1))
    done
    echo "ci-docker: runsc registered in /etc/docker/daemon.json (dockerd reloaded)"
  fi
  local out
  if ! out=$("${sudo[@]}" docker run --rm --runtime runsc --entrypoint python3 "$image" -c 'print("ok")' 2>&1) ||
    [ "$out" != ok ]; then
    gvisor_unavailable "cannot run a container under runsc: $(echo "$out" | tail -n 1 | cut -c1-200)"
    return
  fi
  echo "ci-docker: $("$runsc_path" --version 2>/dev/null | head -n 1) runs the image"
  echo "GVISOR_OK=1"
}
gvisor
echo "DOCKER_OK=1"
