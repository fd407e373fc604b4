# Sourced by scripts/kube-cluster.sh: the cluster's network, all of it in 10.88.0.0/15 and on
# this machine (docs/kubernetes.md, "Networking").
#
#   host            10.89.0.1/24 on veth `sbkube-b` (the API server, node-a's kubelet)
#   netns sbkube-b  10.89.0.2/24 on its `eth0` (node-b's kubelet); route to node-a's pods
#   node-a pods     10.88.0.0/24 on the bridge sbkube0 (made by the CNI bridge plugin)
#   node-b pods     10.88.1.0/24 on the bridge sbkube1 inside sbkube-b; the host routes to them
#                   through 10.89.0.2
# iptables: chain SBKUBE-FWD (first in FORWARD, where Docker's policy is DROP) accepts
# traffic whose source and destination are both in 10.88.0.0/15 and drops any other to or from
# it; chain SBKUBE-IN (first in INPUT) drops traffic to 10.88.0.0/15 that arrives on an
# interface other than loopback, the veth or node-a's bridge. `down` removes both.

# Fails unless 10.88.0.0/15 is unused on this machine (an address or a route in it).
network_free() {
  local used
  used=$(ip -4 -o addr show | awk '$4 ~ /^10\.(88|89)\./ {print $4, "on", $2}')
  [ -z "$used" ] || fail "10.88.0.0/15 is in use on this machine: $used (another cluster? scripts/kube-cluster.sh down)"
  used=$(ip -4 route show root "$NET_ALL")
  [ -z "$used" ] || fail "a route into 10.88.0.0/15 exists: $used"
  if [ -e "/run/netns/$NETNS_B" ] || ip link show "$VETH_HOST" >/dev/null 2>&1; then
    fail "the network namespace or veth $NETNS_B exists (another cluster? scripts/kube-cluster.sh down)"
  fi
}

# Records a sysctl's value once (restore_host puts it back) and sets it.
set_host_sysctl() {
  local key="$1" value="$2" saved="$KUBE_STATE/host/sysctl"
  mkdir -p "$KUBE_STATE/host"
  grep -q "^$key=" "$saved" 2>/dev/null || echo "$key=$(sysctl -n "$key")" >>"$saved"
  sysctl -q -w "$key=$value"
}

network_up() {
  ip netns add "$NETNS_B"
  ip link add "$VETH_HOST" type veth peer name eth0 netns "$NETNS_B"
  ip addr add "$HOST_IP/$LINK_PREFIX" dev "$VETH_HOST"
  ip link set "$VETH_HOST" up
  ip -n "$NETNS_B" link set lo up
  ip -n "$NETNS_B" addr add "$NODE_B_IP/$LINK_PREFIX" dev eth0
  ip -n "$NETNS_B" link set eth0 up
  # node-b reaches node-a's pods through the host; nothing else is routed out of it.
  ip -n "$NETNS_B" route add "$POD_NET_A" via "$HOST_IP"
  ip netns exec "$NETNS_B" sysctl -q -w net.ipv4.ip_forward=1
  ip route add "$POD_NET_B" via "$NODE_B_IP" dev "$VETH_HOST"
  # Pod to pod across the nodes passes the host's FORWARD chain.
  set_host_sysctl net.ipv4.ip_forward 1
  iptables -w -N SBKUBE-FWD
  iptables -w -A SBKUBE-FWD -s "$NET_ALL" -d "$NET_ALL" -j ACCEPT
  iptables -w -A SBKUBE-FWD -s "$NET_ALL" -j DROP
  iptables -w -A SBKUBE-FWD -d "$NET_ALL" -j DROP
  iptables -w -I FORWARD 1 -j SBKUBE-FWD
  iptables -w -N SBKUBE-IN
  iptables -w -A SBKUBE-IN -i lo -j RETURN
  iptables -w -A SBKUBE-IN -i "$VETH_HOST" -j RETURN
  iptables -w -A SBKUBE-IN -i "$BRIDGE_A" -j RETURN
  iptables -w -A SBKUBE-IN -d "$NET_ALL" -j DROP
  iptables -w -I INPUT 1 -j SBKUBE-IN
}

# Removes what network_up and the CNI plugin made on the host; each part may be absent.
network_down() {
  local chain parent
  for chain in SBKUBE-FWD:FORWARD SBKUBE-IN:INPUT; do
    parent=${chain#*:}
    chain=${chain%%:*}
    while iptables -w -D "$parent" -j "$chain" 2>/dev/null; do :; done
    iptables -w -F "$chain" 2>/dev/null || true
    iptables -w -X "$chain" 2>/dev/null || true
  done
  if [ -e "/run/netns/$NETNS_B" ]; then ip netns del "$NETNS_B" || true; fi
  # The veth goes with the namespace (asynchronously); the bridge of node-a's pods stays until
  # removed.
  local link
  for link in "$VETH_HOST" "$BRIDGE_A"; do
    ip link del "$link" 2>/dev/null || true
  done
}
