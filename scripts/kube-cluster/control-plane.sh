# Sourced by scripts/kube-cluster.sh: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler on the host.
#
#   etcd                    127.0.0.1:23790 (clients), 127.0.0.1:23800 (peers): loopback only,
#                           out of the pods' reach
#   kube-apiserver          https://10.89.0.1:6443 (reachable from the host, node-b and the pods),
#                           no insecure port; authentication by the static tokens and the CA's
#                           client certificates; authorization Node,RBAC; NodeRestriction
#   controller-manager      no serving ports; the hostPath PV recycler's pod runs the busybox image
#   scheduler               no serving ports
# Logs: $LOGS/<name>.log.

ETCD_CLIENT=127.0.0.1:23790
ETCD_PEER=127.0.0.1:23800

# Fails when a port the control plane needs is taken.
ports_free() {
  local port
  for port in "${ETCD_CLIENT##*:}" "${ETCD_PEER##*:}"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      fail "127.0.0.1:$port (etcd) is in use"
    fi
  done
}

# The pod the controller-manager runs to empty a released hostPath PV (its default image,
# busybox from a registry, cannot be pulled here); the volume is replaced by the PV's.
write_recycler_template() {
  cat >"$KUBE_STATE/recycler-pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: pv-recycler
  namespace: default
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  volumes:
  - name: vol
    hostPath: {path: /nonexistent}
  containers:
  - name: pv-recycler
    image: $SCRUB_IMAGE
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "test -e /scrub && rm -rf /scrub/..?* /scrub/.[!.]* /scrub/* && test -z \"\$(ls -A /scrub)\" || exit 1"]
    volumeMounts:
    - {name: vol, mountPath: /scrub}
EOF
}

control_plane_up() {
  cgroups_up
  local pki="$KUBE_STATE/pki"
  start_daemon etcd etcd --name sbkube --data-dir "$KUBE_STATE/etcd" \
    --listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
    --listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
    --initial-cluster "sbkube=http://$ETCD_PEER" --listen-metrics-urls "" \
    --quota-backend-bytes 1073741824
  start_daemon kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://$ETCD_CLIENT" \
    --bind-address="$HOST_IP" --advertise-address="$HOST_IP" --secure-port=6443 --insecure-port=0 \
    --cert-dir="$pki" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" --token-auth-file="$pki/tokens.csv" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range="$SERVICE_NET" \
    --kubelet-client-certificate="$pki/kubelet-client.crt" --kubelet-client-key="$pki/kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP --profiling=false
  local i
  for i in $(seq 1 120); do
    [ "$(kubectl_ get --raw /readyz --request-timeout=2s 2>/dev/null)" = ok ] && break
    wait_pidfile kube-apiserver && kill -0 "$(cat "$KUBE_STATE/pids/kube-apiserver.pid")" 2>/dev/null ||
      fail "kube-apiserver exited (log: $LOGS/kube-apiserver.log; etcd: $LOGS/etcd.log)"
    [ "$i" = 120 ] && fail "kube-apiserver not ready within 60 s (log: $LOGS/kube-apiserver.log)"
    sleep 0.5
  done
  write_recycler_template
  start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false --port=0 --secure-port=0 \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=false --allocate-node-cidrs=false \
    --pv-recycler-pod-template-filepath-hostpath="$KUBE_STATE/recycler-pod.yaml" \
    --pv-recycler-minimum-timeout-hostpath=60 --profiling=false
  start_daemon kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false --port=0 --secure-port=0 --profiling=false
  wait_pidfile kube-controller-manager && wait_pidfile kube-scheduler ||
    fail "the controller-manager or the scheduler did not start (logs: $LOGS)"
}
