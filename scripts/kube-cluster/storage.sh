# Sourced by scripts/kube-cluster.sh: the namespace for sandboxes and the `local` storage.
#
# This cluster has no dynamic provisioner. Volumes come from a pool made at `up`:
# $KUBE_PVS_PER_NODE [16] PersistentVolumes per node, `local-node-a-01` ... `local-node-b-16`,
# each a hostPath directory $KUBE_STATE/data/volumes/<node>/<nn> (mode 0777: the agent server runs
# as uid 10001, and hostPath volumes get no fsGroup), 10Gi nominal (hostPath does not enforce
# a size), ReadWriteOnce, pinned to its node by nodeAffinity, storage class `local` (the
# default class; WaitForFirstConsumer, so a claim binds to a volume on the node the scheduler
# picked for its first pod). Reclaim policy Recycle: when its claim is deleted the
# controller-manager runs a pod of $SCRUB_IMAGE that empties the directory and the volume is
# Available again, so a test run can create and delete claims without exhausting the pool.

storage_manifest() {
  cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NAMESPACE}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
  local node n name dir
  for node in node-a node-b; do
    for n in $(seq -w 1 "$PVS_PER_NODE"); do
      name="local-$node-$n"
      dir="$DATA/volumes/$node/$n"
      mkdir -p "$dir"
      chmod 0777 "$dir"
      cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $name
  labels: {io.switchboard/node: $node}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Recycle
  storageClassName: local
  volumeMode: Filesystem
  hostPath: {path: $dir, type: Directory}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [$node]}
EOF
    done
  done
}

storage_up() {
  storage_manifest >"$KUBE_STATE/storage.yaml"
  kubectl_ apply -f "$KUBE_STATE/storage.yaml" >"$LOGS/storage.log" 2>&1 ||
    fail "creating the namespace and the local volumes failed (log: $LOGS/storage.log)"
  # Pods are refused until the namespace's default service account exists.
  local i
  for i in $(seq 1 60); do
    kubectl_ -n "$NAMESPACE" get serviceaccount default >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  fail "no default service account in $NAMESPACE after 30 s (log: $LOGS/kube-controller-manager.log)"
}
