#!/usr/bin/env bash
# A real two-node Kubernetes (v1.20, built from Debian 12's `kubernetes` source package) on this
# machine, for the Kubernetes runtime's tests (issue 32; docs/kubernetes.md).
#
#   up [--with-image]  installs the Debian packages it needs, builds kube-apiserver,
#                      kube-controller-manager, kube-scheduler and kubelet once into $KUBE_CACHE
#                      (keyed on the source package's version), makes the PKI, tokens and
#                      kubeconfigs, starts etcd and the control plane, node-a (containerd +
#                      kubelet on the host) and node-b (the same in its own network namespace),
#                      imports the agent-server image into both nodes' containerd (when Docker
#                      has it; --with-image builds it first with scripts/agent-server-image.sh),
#                      creates the namespace `switchboard-sandboxes` and the `local` storage
#                      (a pool of hostPath PVs per node, recycled by Kubernetes), and waits until
#                      both nodes are Ready. Last line: KUBECONFIG=<path>. On a running cluster it
#                      says so and prints the same line.
#   down [--purge]     stops every process `up` started, removes the network namespace, veth,
#                      bridge, iptables rules, cgroups and the state directory; --purge also
#                      removes the build cache.
#   kubeconfig         prints the admin kubeconfig's path (exit 1 when the cluster is not up).
#   status             prints each node's readiness (exit 1 when a node is not Ready).
#   packages           only installs the Debian packages (`up` does it too);
#   build              only builds (or finds) the cached binaries and images.
#   smoke              one agent-server pod with a PVC on each node: Ready, /alive from the host,
#                      a file on the PVC outlives the pod; prints timings (scripts/kube-cluster/smoke.sh).
#
# Where it cannot run (not root, no writable cgroup v1, a package that does not install, a
# step that fails) the last line is `kube-cluster: <reason>` and the exit status is 1; a failed
# step names its log under $KUBE_STATE/log. Run `down` to remove what a failed `up` left.
#
# Knobs: KUBE_STATE [${TMPDIR:-/tmp}/switchboard-kube] (everything the cluster makes, with its
# pids), KUBE_CACHE [${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-kube] (the build),
# AGENT_SERVER_IMAGE [switchboard/agent-server:local], KUBE_PVS_PER_NODE [16],
# KUBE_UP_TIMEOUT [180] (seconds for the nodes to be Ready), KUBE_DISK_SIZE [20G] (the sparse
# file the nodes' data lives on), KUBE_DEBIAN_MIRROR, KUBE_DEBIAN_SUITE [bookworm].
#
# Networking stays on this machine: the control plane listens on 10.89.0.1 (the host's end of
# node-b's veth), node-a's pods are 10.88.0.0/24 on the bridge sbkube0, node-b's 10.88.1.0/24
# inside its namespace; pods have routes to 10.88.0.0/15 only, and iptables chains SBKUBE-IN
# and SBKUBE-FWD accept traffic within 10.88.0.0/15 and drop the rest to or from it.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_STATE="${KUBE_STATE:-${TMPDIR:-/tmp}/switchboard-kube}"
KUBE_CACHE="${KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-kube}"
IMAGE="${AGENT_SERVER_IMAGE:-switchboard/agent-server:local}"
PVS_PER_NODE="${KUBE_PVS_PER_NODE:-16}"
UP_TIMEOUT="${KUBE_UP_TIMEOUT:-180}"
PAUSE_IMAGE=registry.k8s.io/pause:3.6
SCRUB_IMAGE=switchboard/kube-busybox:local
NAMESPACE=switchboard-sandboxes
LOGS="$KUBE_STATE/log"
KUBECONFIG_PATH="$KUBE_STATE/admin.kubeconfig"
HERE=scripts/kube-cluster

# The addresses (docs/kubernetes.md): 10.88.0.0/15, none of it routed off this machine.
NET_ALL=10.88.0.0/15
HOST_IP=10.89.0.1
NODE_B_IP=10.89.0.2
LINK_PREFIX=24
POD_NET_A=10.88.0.0/24
POD_NET_B=10.88.1.0/24
SERVICE_NET=10.89.128.0/24
SERVICE_IP=10.89.128.1
NETNS_B=sbkube-b
VETH_HOST=sbkube-b
BRIDGE_A=sbkube0
BRIDGE_B=sbkube1
CGROUP_TOP=sbkube

note() { echo "kube-cluster: $*" >&2; }
# The one line CI and tests read: the reason, last, and a non-zero exit.
fail() {
  echo "kube-cluster: $*"
  exit 1
}

# Runs one step of `up`, timing it: `step NAME FUNCTION [ARGS]`.
STEP=""
step() {
  local name="$1" started
  shift
  STEP=$name
  started=$(date +%s.%N)
  "$@"
  awk -v s="$started" -v e="$(date +%s.%N)" -v n="$name" \
    'BEGIN { printf "kube-cluster: %-34s %6.1f s\n", n, e - s }' >&2
}

. "$HERE/build.sh"
. "$HERE/pki.sh"
. "$HERE/disk.sh"
. "$HERE/network.sh"
. "$HERE/processes.sh"
. "$HERE/control-plane.sh"
. "$HERE/nodes.sh"
. "$HERE/storage.sh"

# kubectl on this cluster, its discovery cache in the state directory (not ~/.kube).
kubectl_() { kubectl --kubeconfig "$KUBECONFIG_PATH" --cache-dir "$KUBE_STATE/kubectl-cache" "$@"; }

# Whether the cluster in $KUBE_STATE answers and both nodes are Ready.
cluster_ready() {
  [ -f "$KUBECONFIG_PATH" ] || return 1
  local ready
  ready=$(kubectl_ get nodes --request-timeout=5s -o \
    jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}' \
    2>/dev/null) || return 1
  [[ "$ready" == *"node-a=True"* && "$ready" == *"node-b=True"* ]]
}

# What a machine must offer, or the reason it does not.
preflight() {
  [ "$(id -u)" = 0 ] || fail "needs root (network namespaces, mounts, cgroups, iptables)"
  [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/pids ] ||
    fail "no cgroup v1 hierarchies under /sys/fs/cgroup (the 1.20 kubelet needs cgroup v1)"
  mkdir "/sys/fs/cgroup/pids/$CGROUP_TOP-probe.$$" 2>/dev/null &&
    rmdir "/sys/fs/cgroup/pids/$CGROUP_TOP-probe.$$" || fail "cannot create cgroups under /sys/fs/cgroup"
  local tool
  for tool in ip iptables unshare nsenter setsid openssl awk; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing"
  done
}

# Before `up` makes anything: the address range and etcd's ports are free.
preflight_up() {
  network_free
  ports_free
}

cmd_up() {
  local with_image=""
  case "${1:-}" in --with-image) with_image=1 ;; "") ;; *) fail "unknown argument to up: $1" ;; esac
  preflight
  if cluster_ready; then
    note "already up ($KUBE_STATE)"
    echo "KUBECONFIG=$KUBECONFIG_PATH"
    return 0
  fi
  # What a cluster leaves (its pids, what it changed on the host), not just logs.
  if [ -d "$KUBE_STATE/pids" ] || [ -d "$KUBE_STATE/host" ]; then
    note "a cluster that is not Ready is in $KUBE_STATE: removing it first"
    cmd_down >/dev/null
  fi
  preflight_up
  # A command that fails unexpectedly still ends with the reason line.
  set -E
  trap 'fail "step \"$STEP\" failed at ${BASH_SOURCE[0]}:$LINENO (logs: $LOGS)"' ERR
  local started
  started=$(date +%s)
  mkdir -p "$LOGS" "$KUBE_CACHE"
  step "packages" install_packages
  step "source package version" resolve_source
  step "binaries ($SOURCE_VERSION)" build_binaries
  step "data disk" disk_up
  step "PKI, tokens, kubeconfigs" make_pki
  step "network (netns, veth, iptables)" network_up
  step "etcd and control plane" control_plane_up
  step "node-a and node-b" nodes_up
  step "images into both nodes" import_images "$with_image"
  step "nodes Ready" wait_nodes_ready
  step "namespace and local storage" storage_up
  note "up in $(( $(date +%s) - started )) s; state in $KUBE_STATE"
  echo "KUBECONFIG=$KUBECONFIG_PATH"
}

cmd_down() {
  local purge=""
  case "${1:-}" in --purge) purge=1 ;; "") ;; *) fail "unknown argument to down: $1" ;; esac
  [ "$(id -u)" = 0 ] || fail "needs root"
  local started
  started=$(date +%s)
  stop_processes
  network_down
  remove_cgroups
  disk_down
  restore_host
  rm -rf "$KUBE_STATE"
  if [ -n "$purge" ]; then rm -rf "$KUBE_CACHE"; fi
  note "down in $(( $(date +%s) - started )) s${purge:+ (build cache removed)}"
}

cmd_status() {
  [ -f "$KUBECONFIG_PATH" ] || fail "not up (no $KUBECONFIG_PATH)"
  kubectl_ get nodes --request-timeout=5s -o wide 2>&1 || fail "the API server does not answer"
  cluster_ready || fail "a node is not Ready"
}

cmd_kubeconfig() {
  cluster_ready || fail "not up (scripts/kube-cluster.sh up)"
  echo "$KUBECONFIG_PATH"
}

# Freezes (SIGSTOP) or thaws (SIGCONT) a node's kubelet: `freeze node-b` makes the node stop
# reporting, as a lost machine does (its containers keep running), until `thaw node-b`. The
# Kubernetes runtime's node-loss test uses it.
cmd_freeze() {
  local signal="$1" node="${2:-}" pidfile
  case "$node" in node-a | node-b) ;; *) fail "freeze/thaw: name node-a or node-b" ;; esac
  pidfile="$KUBE_STATE/pids/kubelet-${node#node-}.pid"
  [ -f "$pidfile" ] || fail "not up (no $pidfile)"
  kill "-$signal" "$(cat "$pidfile")" || fail "no kubelet process for $node"
  note "$node's kubelet: SIG$signal"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  freeze) shift; cmd_freeze STOP "$@" ;;
  thaw) shift; cmd_freeze CONT "$@" ;;
  down) shift; cmd_down "$@" ;;
  status) cmd_status ;;
  kubeconfig) cmd_kubeconfig ;;
  smoke) cluster_ready || fail "not up (scripts/kube-cluster.sh up)"; . "$HERE/smoke.sh"; smoke ;;
  packages)
    # Only the Debian packages (CI installs them before its other apt-get users).
    preflight; mkdir -p "$LOGS"; install_packages; note "packages ready" ;;
  build)
    # Only the cached binaries and images (no cluster): what `up` does first.
    preflight; mkdir -p "$LOGS" "$KUBE_CACHE"; install_packages; resolve_source; build_binaries
    echo "BIN=$BIN" ;;
  *) echo "usage: scripts/kube-cluster.sh up [--with-image] | down [--purge] | kubeconfig | status | smoke | freeze NODE | thaw NODE" >&2; exit 2 ;;
esac
