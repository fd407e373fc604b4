# Sourced by scripts/kube-cluster.sh: the two nodes, each a containerd and a kubelet in a mount
# namespace of their own (node-b also in the network namespace sbkube-b), and the images in
# their containerd.
#
# Per node, under $DATA/<node>/ (the data disk, scripts/kube-cluster/disk.sh): containerd.toml
# (CRI with restrict_oom_score_adj, since root here lacks CAP_SYS_RESOURCE; the pause image
# registry.k8s.io/pause:3.6; network namespaces and runc's state under the node's directory),
# kubelet.yaml (cgroupfs, cgroupRoot /sbkube/<node>, serving on the node's IP with client
# certificates of the cluster CA only, no iptables chains of its own), cni/ (a bridge with
# host-local addresses, routes to 10.88.0.0/15 only), and the kubelet's fixed paths:
# /var/log (pod logs) and /var/lib/kubelet/device-plugins are bind-mounted from the node's
# directory inside its mount namespace, so the two kubelets do not share them.

node_ip() { if [ "$1" = node-a ]; then echo "$HOST_IP"; else echo "$NODE_B_IP"; fi; }

write_node_config() {
  local node="$1" dir="$DATA/$1" bridge subnet
  if [ "$node" = node-a ]; then bridge=$BRIDGE_A subnet=$POD_NET_A; else bridge=$BRIDGE_B subnet=$POD_NET_B; fi
  mkdir -p "$dir/cni/net.d" "$dir/cni/ipam" "$dir/varlog" "$dir/device-plugins" \
    "$dir/kubelet" "$dir/volume-plugins" "$dir/containerd"
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$dir/containerd/runc"
EOF
  cat >"$dir/cni/net.d/10-bridge.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "sbkube",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]],
              "routes": [{"dst": "$NET_ALL"}], "dataDir": "$dir/cni/ipam"}},
    {"type": "loopback"}
  ]
}
EOF
  # No DNS server in this cluster: a resolver in a pod asks its own loopback and gets no answer
  # at once, instead of sending queries off the machine.
  printf 'options ndots:1 timeout:1 attempts:1\n' >"$KUBE_STATE/resolv.conf"
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_TOP/$node
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
failSwapOn: false
address: $(node_ip "$node")
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $KUBE_STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
makeIPTablesUtilChains: false
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
resolvConf: $KUBE_STATE/resolv.conf
clusterDNS: []
maxPods: 110
serializeImagePulls: false
EOF
}

# Starts one node: a mount namespace (and for node-b its network namespace) in which the
# node's directories cover the kubelet's fixed paths, containerd, then the kubelet.
start_node() {
  local node="$1" dir="$DATA/$1" short=${1#node-} enter=()
  [ "$node" = node-b ] && enter=(nsenter "--net=/run/netns/$NETNS_B")
  start_daemon "$node" "${enter[@]}" unshare -m --propagation private bash -c '
    set -e
    dir=$1 short=$2 pids=$3 logs=$4 bin=$5 node=$6 ip=$7
    mount --bind "$dir/varlog" /var/log
    mount --bind "$dir/device-plugins" /var/lib/kubelet/device-plugins
    containerd --config "$dir/containerd.toml" >"$logs/containerd-$short.log" 2>&1 &
    echo $! >"$pids/containerd-$short.pid"
    for i in $(seq 1 100); do [ -S "$dir/containerd/containerd.sock" ] && break; sleep 0.1; done
    "$bin/kubelet" --config="$dir/kubelet.yaml" --kubeconfig="$dir/kubeconfig" \
      --hostname-override="$node" --node-ip="$ip" --root-dir="$dir/kubelet" \
      --cert-dir="$dir/kubelet/pki" --volume-plugin-dir="$dir/volume-plugins" \
      --container-runtime=remote --container-runtime-endpoint="unix://$dir/containerd/containerd.sock" \
      >"$logs/kubelet-$short.log" 2>&1 &
    echo $! >"$pids/kubelet-$short.pid"
    wait' _ "$dir" "$short" "$KUBE_STATE/pids" "$LOGS" "$BIN" "$node" "$(node_ip "$node")"
}

nodes_up() {
  record_kubelet_sysctls
  make_host_dir /var/lib/kubelet/device-plugins
  local node
  for node in node-a node-b; do
    write_node_config "$node"
    start_node "$node"
  done
  for node in a b; do
    wait_pidfile "containerd-$node" && wait_pidfile "kubelet-$node" ||
      fail "node-$node did not start (logs: $LOGS/node-$node.log, $LOGS/containerd-$node.log)"
  done
}

# Imports a docker-save tarball into a node's containerd: `import_into NODE TARBALL`.
import_into() {
  ctr -a "$DATA/$1/containerd/containerd.sock" -n k8s.io images import "$2" >>"$LOGS/import-$1.log" 2>&1
}

# The pause and busybox images (from the build cache) and the agent-server image (from
# Docker, when it has it) into both nodes. --with-image: build the agent-server image first.
import_images() {
  local with_image="$1" node sock
  for node in node-a node-b; do
    sock="$DATA/$node/containerd/containerd.sock"
    for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
    import_into "$node" "$BUILD/pause.tar" && import_into "$node" "$BUILD/busybox.tar" ||
      fail "importing the pause and busybox images into $node failed (log: $LOGS/import-$node.log)"
  done
  if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
    if [ -n "$with_image" ]; then
      note "building $IMAGE (scripts/agent-server-image.sh; log: $LOGS/agent-server-image.log)"
      AGENT_SERVER_IMAGE="$IMAGE" bash scripts/agent-server-image.sh >"$LOGS/agent-server-image.log" 2>&1 ||
        fail "building $IMAGE failed (log: $LOGS/agent-server-image.log)"
    else
      note "$IMAGE is not in Docker: not imported (up --with-image builds it; scripts/ci-docker.sh too)"
      return 0
    fi
  fi
  docker save "$IMAGE" -o "$DATA/agent-server.tar" 2>>"$LOGS/import-node-a.log" ||
    fail "docker save $IMAGE failed (log: $LOGS/import-node-a.log)"
  import_into node-a "$DATA/agent-server.tar" &
  local a=$!
  import_into node-b "$DATA/agent-server.tar" || fail "importing $IMAGE into node-b failed (log: $LOGS/import-node-b.log)"
  wait "$a" || fail "importing $IMAGE into node-a failed (log: $LOGS/import-node-a.log)"
  rm -f "$DATA/agent-server.tar"
  echo "$IMAGE" >"$KUBE_STATE/images"
}

wait_nodes_ready() {
  local i
  for i in $(seq 1 "$UP_TIMEOUT"); do
    cluster_ready && return 0
    sleep 1
  done
  fail "the nodes were not Ready within ${UP_TIMEOUT} s (logs: $LOGS/kubelet-a.log, $LOGS/kubelet-b.log)"
}
