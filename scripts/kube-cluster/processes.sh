# Sourced by scripts/kube-cluster.sh: the cluster's processes and cgroups, and putting the host
# back as it was.
#
# Every daemon `up` starts (etcd, the control plane, each node's containerd and kubelet) is
# moved into the pids cgroup /sbkube/system and records its pid in $KUBE_STATE/pids/NAME.pid;
# containerd's shims inherit that cgroup, and the pods' containers live under each kubelet's
# cgroupRoot /sbkube/node-a or /sbkube/node-b (in every cgroup v1 hierarchy). So `down` finds
# every process the cluster ever ran in /sys/fs/cgroup/pids/sbkube, whatever restarted what.

CGROUP_PIDS="/sys/fs/cgroup/pids/$CGROUP_TOP"

# The cgroup v1 hierarchies (one directory per mount, symlinked aliases skipped).
cgroup_hierarchies() {
  local dir
  for dir in /sys/fs/cgroup/*; do
    [ -L "$dir" ] && continue
    [ -f "$dir/cgroup.procs" ] && echo "$dir"
  done
}

# /sbkube/{system,node-a,node-b} in every hierarchy (the kubelets need their cgroupRoot first);
# cpuset's new groups get their parent's CPUs and memory nodes.
cgroups_up() {
  local h sub
  for h in $(cgroup_hierarchies); do
    for sub in "" /system /node-a /node-b; do
      mkdir -p "$h/$CGROUP_TOP$sub"
      if [ -f "$h/cpuset.cpus" ]; then
        cat "$h/cpuset.cpus" >"$h/$CGROUP_TOP$sub/cpuset.cpus"
        cat "$h/cpuset.mems" >"$h/$CGROUP_TOP$sub/cpuset.mems"
      fi
    done
  done
}

# Starts a daemon detached, in the pids cgroup /sbkube/system, logging to $LOGS/NAME.log:
# `start_daemon NAME COMMAND...`. The daemon runs at the normal priority (nice 0, where the
# system allows it) even when `up` itself runs niced, as CI runs it so the Kubernetes build
# yields to the compiler: a kubelet or controller starved behind the tests' own processes
# misses its lease, and a node that stops reporting for that reason looks lost.
start_daemon() {
  local name="$1"
  shift
  mkdir -p "$KUBE_STATE/pids"
  setsid bash -c 'echo $$ >"$1"; echo $$ >"$2/cgroup.procs"; shift 2
    renice -n 0 -p $$ >/dev/null 2>&1 || true; exec "$@"' \
    _ "$KUBE_STATE/pids/$name.pid" "$CGROUP_PIDS/system" "$@" \
    >"$LOGS/$name.log" 2>&1 </dev/null &
}

# Waits until $KUBE_STATE/pids/NAME.pid names a live process (up to 10 s).
wait_pidfile() {
  local i
  for i in $(seq 1 100); do
    [ -s "$KUBE_STATE/pids/$1.pid" ] && kill -0 "$(cat "$KUBE_STATE/pids/$1.pid")" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# The pids of every process in the cgroup tree $1.
cgroup_pids() {
  [ -d "$1" ] || return 0
  find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null
}

# Sends SIGNAL to the processes named in $KUBE_STATE/pids/NAME.pid: `signal_named SIGNAL NAME...`.
signal_named() {
  local sig="$1" name pid
  shift
  for name in "$@"; do
    pid=$(cat "$KUBE_STATE/pids/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then kill "-$sig" "$pid" 2>/dev/null || true; fi
  done
}

# Whether the process named in $KUBE_STATE/pids/$1.pid is alive.
named_alive() {
  local pid
  pid=$(cat "$KUBE_STATE/pids/$1.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Whether any of the named processes is alive.
any_alive() {
  local name
  for name in "$@"; do named_alive "$name" && return 0; done
  return 1
}

# Waits up to $2 seconds for the cgroup tree $1 to hold no process.
wait_cgroup_empty() {
  local i
  for i in $(seq 1 $(( $2 * 10 ))); do
    [ -z "$(cgroup_pids "$1")" ] && return 0
    sleep 0.1
  done
  return 1
}

# The kubelets first (so that nothing restarts a pod), then the pods' processes, then
# containerd and the control plane with SIGTERM; whatever is left in the cgroups after 10 s
# gets SIGKILL.
stop_processes() {
  signal_named TERM kubelet-a kubelet-b
  local i
  for i in $(seq 1 50); do
    any_alive kubelet-a kubelet-b || break
    sleep 0.1
  done
  local pid
  for pid in $(cgroup_pids "$CGROUP_PIDS/node-a") $(cgroup_pids "$CGROUP_PIDS/node-b"); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  local daemons=(containerd-a containerd-b node-a node-b kube-scheduler kube-controller-manager
    kube-apiserver etcd)
  signal_named TERM "${daemons[@]}"
  for i in $(seq 1 100); do
    any_alive "${daemons[@]}" || break
    sleep 0.1
  done
  # containerd's shims outlive containerd by design (and would keep the pods' file systems).
  for pid in $(cgroup_pids "$CGROUP_PIDS"); do kill -KILL "$pid" 2>/dev/null || true; done
  wait_cgroup_empty "$CGROUP_PIDS" 10 ||
    note "processes left in $CGROUP_PIDS: $(cgroup_pids "$CGROUP_PIDS" | tr '\n' ' ')"
}

# Removes /sbkube in every hierarchy, deepest first.
remove_cgroups() {
  local h
  for h in $(cgroup_hierarchies); do
    [ -d "$h/$CGROUP_TOP" ] || continue
    find "$h/$CGROUP_TOP" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "$h/$CGROUP_TOP" ] || note "cannot remove the cgroup $h/$CGROUP_TOP"
  done
}

# Puts back the sysctls `up` or the kubelets changed (recorded in $KUBE_STATE/host/sysctl),
# removes the directories made on the host (listed in $KUBE_STATE/host/made; deepest first) and
# any mount left under $KUBE_STATE.
restore_host() {
  local line
  if [ -f "$KUBE_STATE/host/sysctl" ]; then
    while IFS= read -r line; do
      [ -n "$line" ] && sysctl -q -w "$line" || true
    done <"$KUBE_STATE/host/sysctl"
  fi
  local mnt
  for mnt in $(awk -v s="$KUBE_STATE" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$mnt" 2>/dev/null || true
  done
  if [ -f "$KUBE_STATE/host/made" ]; then
    tac "$KUBE_STATE/host/made" | while IFS= read -r line; do rmdir "$line" 2>/dev/null || true; done
  fi
}

# Makes a directory on the host outside $KUBE_STATE, recording each level it creates.
make_host_dir() {
  local dir="$1" missing=()
  while [ ! -d "$dir" ]; do
    missing=("$dir" "${missing[@]}")
    dir=$(dirname "$dir")
  done
  mkdir -p "$KUBE_STATE/host"
  for dir in "${missing[@]}"; do
    mkdir "$dir"
    echo "$dir" >>"$KUBE_STATE/host/made"
  done
}

# The kernel settings the 1.20 kubelet sets at start (pkg/kubelet/cm, setupKernelTunables):
# recorded before it runs, so that `down` restores them.
record_kubelet_sysctls() {
  local key
  mkdir -p "$KUBE_STATE/host"
  for key in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes; do
    grep -q "^$key=" "$KUBE_STATE/host/sysctl" 2>/dev/null ||
      echo "$key=$(sysctl -n "$key")" >>"$KUBE_STATE/host/sysctl"
  done
}
