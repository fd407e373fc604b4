# Sourced by scripts/kube-cluster.sh: the Debian packages, Kubernetes' binaries and the two
# images the nodes need. Everything built lives in $KUBE_CACHE/<source version>/ and is reused.
#
# Functions (each fails through `fail`, naming its log):
#   install_packages   apt-get install of what is missing (golang-go, etcd-server,
#                      containernetworking-plugins, conntrack, busybox-static; containerd and
#                      runc come with docker.io, kubectl is `kubernetes-client` unless one is
#                      already on PATH).
#   resolve_source     sets SOURCE_VERSION to the version of Debian's `kubernetes` source package
#                      (a private APT_CONFIG with deb-src lines, so the host's apt sources are
#                      left as they are); offline, the newest cached build is used.
#   build_binaries     kube-apiserver, kube-controller-manager, kube-scheduler and kubelet into
#                      $BIN (about 430 CPU-seconds under `nice -n 19`; skipped when cached).
#   build_images       two image tarballs beside the binaries: the pause image compiled from the
#                      source package's build/pause/linux/pause.c, tagged
#                      registry.k8s.io/pause:3.6 (the containerd sandbox image), and a busybox
#                      image (Debian's busybox-static) that the PV recycler pods run.

# The packages `up` needs, by the command that tells whether each is there.
install_packages() {
  local missing=()
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v dpkg-source >/dev/null 2>&1 || missing+=(dpkg-dev)
  command -v make >/dev/null 2>&1 || missing+=(make)
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || fail "missing ${missing[*]} and no apt-get"
  note "installing ${missing[*]}"
  local log="$LOGS/apt.log" policy=/usr/sbin/policy-rc.d created_policy=""
  # No package script may start a service (etcd-server's and containerd's would).
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    created_policy=1
  fi
  local status=0
  # Another apt-get (CI's browser install) may hold the locks for a while.
  { apt-get -o DPkg::Lock::Timeout=300 update && DEBIAN_FRONTEND=noninteractive \
    apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "${missing[@]}"; } \
    >"$log" 2>&1 || status=$?
  if [ -n "$created_policy" ]; then rm -f "$policy"; fi
  [ "$status" = 0 ] || fail "apt-get install ${missing[*]} failed (log: $log)"
}

# A private apt configuration under $KUBE_CACHE/apt that knows Debian's source packages.
apt_source_config() {
  local dir="$KUBE_CACHE/apt" mirror suite
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/sources.list.d"
  mirror="${KUBE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  suite="${KUBE_DEBIAN_SUITE:-bookworm}"
  cat >"$dir/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite-updates main
EOF
  cat >"$dir/apt.conf" <<EOF
Dir::Etc::SourceList "$dir/sources.list";
Dir::Etc::SourceParts "$dir/sources.list.d";
Dir::State::Lists "$dir/lists";
Dir::Cache "$dir/cache";
Dir::Cache::Archives "$dir/archives";
APT::Sandbox::User "root";
EOF
  echo "$dir/apt.conf"
}

# SOURCE_VERSION: the candidate version of the `kubernetes` source package, e.g.
# 1.20.5+really1.20.2-1.1+deb12u1. Without the network, the newest build already cached.
resolve_source() {
  local conf log="$LOGS/apt-source.log"
  conf=$(apt_source_config)
  if APT_CONFIG="$conf" apt-get update >"$log" 2>&1; then
    SOURCE_VERSION=$(APT_CONFIG="$conf" apt-cache showsrc kubernetes 2>>"$log" |
      sed -n 's/^Version: //p' | sort -V | tail -n 1 || true)
  fi
  if [ -z "${SOURCE_VERSION:-}" ]; then
    local done_file
    SOURCE_VERSION=$(for done_file in "$KUBE_CACHE"/*/complete; do
      if [ -f "$done_file" ]; then basename "$(dirname "$done_file")"; fi
    done | sort -V | tail -n 1)
    [ -n "$SOURCE_VERSION" ] ||
      fail "cannot find Debian's kubernetes source package and nothing is cached (log: $log)"
    note "apt cannot be asked; using the cached build of kubernetes $SOURCE_VERSION"
  fi
  BUILD="$KUBE_CACHE/$SOURCE_VERSION"
  BIN="$BUILD/bin"
}

# The four server binaries, built once per source version (the tree and Go's cache are removed
# afterwards: 2.6 GB during the build, the binaries alone about 360 MB).
build_binaries() {
  if [ -f "$BUILD/complete" ]; then
    note "binaries of kubernetes $SOURCE_VERSION cached in $BIN"
    return 0
  fi
  local work="$KUBE_CACHE/work-$SOURCE_VERSION" log="$LOGS/build.log" conf src
  conf=$(apt_source_config)
  rm -rf "$work" "$BUILD"
  mkdir -p "$work/home"
  note "fetching and building kubernetes $SOURCE_VERSION (log: $log; about 430 CPU-seconds)"
  (cd "$work" && APT_CONFIG="$conf" apt-get source "kubernetes=$SOURCE_VERSION") >"$log" 2>&1 ||
    fail "apt-get source kubernetes=$SOURCE_VERSION failed (log: $log)"
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
  [ -n "$src" ] || fail "the source package unpacked nothing (log: $log)"
  # The build wants the tree at $GOPATH/src/k8s.io/kubernetes.
  mkdir -p "$src/.go/src/k8s.io"
  ln -sfn ../../.. "$src/.go/src/k8s.io/kubernetes"
  (cd "$src" && env HOME="$work/home" GOPATH="$src/.go" GOCACHE="$work/gocache" CGO_ENABLED=0 \
    GOFLAGS=-mod=vendor nice -n 19 make \
    WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet") \
    >>"$log" 2>&1 || fail "building the kubernetes binaries failed (log: $log)"
  mkdir -p "$BIN"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    cp "$src/_output/bin/$b" "$BIN/$b" || fail "the build made no $b (log: $log)"
  done
  cp "$src/build/pause/linux/pause.c" "$BUILD/pause.c"
  build_images_from "$BUILD" >>"$log" 2>&1 || fail "building the pause image failed (log: $log)"
  rm -rf "$work"
  touch "$BUILD/complete"
}

# An image tarball (docker save format, one layer) from a root file system directory.
#   image_tar ROOTFS REPO:TAG OUT ENTRYPOINT...
image_tar() {
  local rootfs="$1" ref="$2" out="$3"
  shift 3
  local tmp
  tmp=$(mktemp -d "$KUBE_CACHE/image.XXXXXX")
  tar -C "$rootfs" -cf "$tmp/layer.tar" .
  local layer_sha entry
  layer_sha=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir "$tmp/$layer_sha"
  mv "$tmp/layer.tar" "$tmp/$layer_sha/layer.tar"
  entry=$(printf '"%s",' "$@")
  cat >"$tmp/config.json" <<EOF
{"architecture":"amd64","os":"linux","config":{"Entrypoint":[${entry%,}],"User":"0"},
 "rootfs":{"type":"layers","diff_ids":["sha256:$layer_sha"]}}
EOF
  local config_sha
  config_sha=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
  mv "$tmp/config.json" "$tmp/$config_sha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]\n' \
    "$config_sha" "$ref" "$layer_sha" >"$tmp/manifest.json"
  tar -C "$tmp" -cf "$out" manifest.json "$config_sha.json" "$layer_sha"
  rm -rf "$tmp"
}

# pause.tar (registry.k8s.io/pause:3.6, from pause.c) and busybox.tar (the recycler's image).
build_images_from() {
  local build="$1" root
  root=$(mktemp -d "$KUBE_CACHE/rootfs.XXXXXX")
  gcc -Os -static -o "$root/pause" "$build/pause.c" 2>/dev/null ||
    gcc -Os -o "$root/pause" "$build/pause.c" || return 1
  image_tar "$root" "$PAUSE_IMAGE" "$build/pause.tar" /pause
  rm -rf "$root"
  root=$(mktemp -d "$KUBE_CACHE/rootfs.XXXXXX")
  mkdir -p "$root/bin" "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in sh rm ls find test mkdir cat echo; do ln -s busybox "$root/bin/$applet"; done
  image_tar "$root" "$SCRUB_IMAGE" "$build/busybox.tar" /bin/sh
  rm -rf "$root"
}
