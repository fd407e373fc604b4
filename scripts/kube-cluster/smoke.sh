# Sourced by scripts/kube-cluster.sh for `smoke`: on a cluster that is up, one agent-server pod
# with a claim of the `local` class on each node, in the sandboxes namespace.
#
#   1. both pods Ready (readiness probe GET /alive), each on the node it was pinned to;
#   2. GET http://<pod IP>:8000/alive from the host answers 200 for each;
#   3. a file written to each claim (kubectl exec) is there again after the pod is deleted and
#      created anew (the claim stays bound to its volume on that node);
#   4. pods and claims deleted, and the two volumes recycled back to Available.
# Prints each phase's seconds; any failure is the last line `kube-cluster: smoke: <what>`.

smoke_manifest() {
  local node="$1" claim="${2:-}"
  if [ -n "$claim" ]; then
    cat <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: smoke-$node, namespace: $NAMESPACE, labels: {io.switchboard/smoke: "true"}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 1Gi}}
---
EOF
  fi
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: smoke-$node
  namespace: $NAMESPACE
  labels: {io.switchboard/smoke: "true"}
spec:
  nodeSelector: {kubernetes.io/hostname: $node}
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  securityContext: {runAsUser: 10001, runAsNonRoot: true}
  containers:
  - name: agent-server
    image: $IMAGE
    imagePullPolicy: Never
    args: ["--port", "8000"]
    env: [{name: OH_SESSION_API_KEYS_0, value: smoke-key}]
    ports: [{containerPort: 8000}]
    readinessProbe: {httpGet: {path: /alive, port: 8000}, periodSeconds: 1}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: workspace, mountPath: /workspace}]
  volumes:
  - name: workspace
    persistentVolumeClaim: {claimName: smoke-$node}
EOF
}

# Seconds since $1 (from `date +%s.%N`), one decimal.
since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

smoke_fail() {
  kubectl_ -n "$NAMESPACE" get pods,pvc -o wide >&2 2>/dev/null || true
  kubectl_ -n "$NAMESPACE" describe pods -l io.switchboard/smoke=true 2>/dev/null | tail -n 25 >&2 || true
  kubectl_ -n "$NAMESPACE" delete pods -l io.switchboard/smoke=true --wait=false >/dev/null 2>&1 || true
  kubectl_ -n "$NAMESPACE" delete pvc smoke-node-a smoke-node-b --wait=false >/dev/null 2>&1 || true
  fail "smoke: $*"
}

# Creates the pods (and claims with $2 = claims) and waits until both are Ready.
smoke_start() {
  local node
  for node in node-a node-b; do
    smoke_manifest "$node" "${1:-}" | kubectl_ apply -f - >/dev/null || smoke_fail "creating smoke-$node"
  done
  kubectl_ -n "$NAMESPACE" wait --for=condition=Ready pod/smoke-node-a pod/smoke-node-b \
    --timeout=240s >/dev/null || smoke_fail "the pods were not Ready within 240 s"
}

smoke() {
  [ -s "$KUBE_STATE/images" ] || fail "smoke: $IMAGE is not in the nodes (up --with-image)"
  kubectl_ -n "$NAMESPACE" delete pods,pvc -l io.switchboard/smoke=true --wait=true >/dev/null 2>&1 || true
  local t node ip code token
  t=$(date +%s.%N)
  smoke_start claims
  echo "smoke: both pods Ready (cold, with claims)   $(since "$t") s"
  for node in node-a node-b; do
    [ "$(kubectl_ -n "$NAMESPACE" get pod "smoke-$node" -o jsonpath='{.spec.nodeName}')" = "$node" ] ||
      smoke_fail "smoke-$node is not on $node"
    ip=$(kubectl_ -n "$NAMESPACE" get pod "smoke-$node" -o jsonpath='{.status.podIP}')
    t=$(date +%s.%N)
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://$ip:8000/alive" || true)
    [ "$code" = 200 ] || smoke_fail "GET http://$ip:8000/alive (smoke-$node) answered ${code:-nothing}"
    echo "smoke: GET /alive on $node ($ip) 200         $(since "$t") s"
    token="$node-$(date +%s%N)"
    echo "$token" >"$KUBE_STATE/smoke-$node"
    kubectl_ -n "$NAMESPACE" exec "smoke-$node" -- sh -c "echo $token > /workspace/smoke.txt" ||
      smoke_fail "writing /workspace/smoke.txt in smoke-$node"
  done
  t=$(date +%s.%N)
  kubectl_ -n "$NAMESPACE" delete pod smoke-node-a smoke-node-b --wait=true >/dev/null ||
    smoke_fail "deleting the pods"
  echo "smoke: both pods deleted                     $(since "$t") s"
  t=$(date +%s.%N)
  smoke_start
  echo "smoke: both pods Ready again (claims kept)   $(since "$t") s"
  for node in node-a node-b; do
    token=$(kubectl_ -n "$NAMESPACE" exec "smoke-$node" -- cat /workspace/smoke.txt 2>&1 || true)
    [ "$token" = "$(cat "$KUBE_STATE/smoke-$node")" ] ||
      smoke_fail "smoke-$node's /workspace/smoke.txt after the pod was recreated: ${token:-nothing}"
    echo "smoke: the file on $node's claim survived the pod"
    rm -f "$KUBE_STATE/smoke-$node"
  done
  t=$(date +%s.%N)
  local volumes
  volumes=$(kubectl_ -n "$NAMESPACE" get pvc smoke-node-a smoke-node-b -o jsonpath='{.items[*].spec.volumeName}')
  kubectl_ -n "$NAMESPACE" delete pod smoke-node-a smoke-node-b --wait=true >/dev/null &&
    kubectl_ -n "$NAMESPACE" delete pvc smoke-node-a smoke-node-b --wait=true >/dev/null ||
    smoke_fail "deleting the pods and claims"
  echo "smoke: pods and claims deleted               $(since "$t") s"
  local v phase i path
  for v in $volumes; do
    for i in $(seq 1 120); do
      phase=$(kubectl_ get pv "$v" -o jsonpath='{.status.phase}')
      [ "$phase" = Available ] && break
      [ "$i" = 120 ] && smoke_fail "volume $v is $phase, not Available, 120 s after its claim was deleted"
      sleep 1
    done
    path=$(kubectl_ get pv "$v" -o jsonpath='{.spec.hostPath.path}')
    [ -z "$(ls -A "$path")" ] || smoke_fail "volume $v is Available but $path is not empty"
  done
  echo "smoke: volumes recycled to Available ($volumes) $(since "$t") s"
  echo "smoke: passed"
}
