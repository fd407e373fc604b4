# Sourced by scripts/kube-cluster.sh: the cluster's credentials, under $KUBE_STATE/pki.
#
#   ca.crt/key                  the cluster CA (RSA 2048, 2 days): signs the two certificates below
#   apiserver.crt/key           the API server's serving certificate: 10.89.0.1, 127.0.0.1, the
#                               `kubernetes` service IP and names
#   kubelet-client.crt/key      the API server's client certificate towards the kubelets (which
#                               accept only certificates of this CA: no anonymous requests)
#   sa.key/pub                  service-account token signing
#   tokens.csv                  static bearer tokens: admin (system:masters), node-a and node-b
#                               (system:node:<name> in system:nodes, for the Node authorizer)
# and the kubeconfigs $KUBE_STATE/admin.kubeconfig, data/<node>/kubeconfig (the CA embedded,
# server https://10.89.0.1:6443).

# Signs a certificate with the cluster CA: `sign NAME SUBJECT [EXTENSIONS]`.
sign() {
  local name="$1" subject="$2" ext="${3:-}" pki="$KUBE_STATE/pki"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" \
    -out "$pki/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# Writes a kubeconfig: `kubeconfig FILE USER TOKEN`.
write_kubeconfig() {
  local file="$1" user="$2" token="$3" ca
  ca=$(base64 -w0 <"$KUBE_STATE/pki/ca.crt")
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: switchboard-kube
  cluster:
    server: https://$HOST_IP:6443
    certificate-authority-data: $ca
users:
- name: $user
  user:
    token: $token
contexts:
- name: switchboard-kube
  context: {cluster: switchboard-kube, user: $user}
current-context: switchboard-kube
EOF
  chmod 600 "$file"
}

make_pki() {
  local pki="$KUBE_STATE/pki"
  mkdir -p "$pki" "$DATA/node-a" "$DATA/node-b"
  chmod 700 "$pki"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -days 2 \
    -subj "/CN=switchboard-kube-ca" -out "$pki/ca.crt" 2>/dev/null
  sign apiserver "/CN=kube-apiserver" "subjectAltName=IP:$HOST_IP,IP:127.0.0.1,IP:$SERVICE_IP,\
DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
  sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  local admin node_a node_b
  admin=$(openssl rand -hex 16)
  node_a=$(openssl rand -hex 16)
  node_b=$(openssl rand -hex 16)
  cat >"$pki/tokens.csv" <<EOF
$admin,admin,admin,"system:masters"
$node_a,system:node:node-a,node-a,"system:nodes"
$node_b,system:node:node-b,node-b,"system:nodes"
EOF
  chmod 600 "$pki"/*
  write_kubeconfig "$KUBECONFIG_PATH" admin "$admin"
  write_kubeconfig "$DATA/node-a/kubeconfig" system:node:node-a "$node_a"
  write_kubeconfig "$DATA/node-b/kubeconfig" system:node:node-b "$node_b"
}
