# Sourced by scripts/kube-cluster.sh: the disk the nodes' data lives on.
#
# The nodes' containerd roots (two unpacked copies of the agent-server image, tens of thousands
# of files) and the volume pool live in an ext4 file system of their own: a sparse file
# $KUBE_STATE/disk.img of $KUBE_DISK_SIZE [20G] on a loop device, mounted at $DATA
# ($KUBE_STATE/data) without online discard. On these machines / is mounted with `discard`, and
# unlinking those files one by one took `down` 295 s; unmounting and deleting one sparse file
# takes seconds. The loop device is recorded in $KUBE_STATE/host/loop for `down`.

DATA="$KUBE_STATE/data"

disk_up() {
  command -v losetup >/dev/null 2>&1 && command -v mkfs.ext4 >/dev/null 2>&1 ||
    fail "losetup or mkfs.ext4 is missing (util-linux, e2fsprogs)"
  mkdir -p "$DATA" "$KUBE_STATE/host"
  truncate -s "${KUBE_DISK_SIZE:-20G}" "$KUBE_STATE/disk.img"
  mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$KUBE_STATE/disk.img" \
    >"$LOGS/disk.log" 2>&1 || fail "mkfs.ext4 on $KUBE_STATE/disk.img failed (log: $LOGS/disk.log)"
  local loop
  loop=$(losetup --find --show --direct-io=on "$KUBE_STATE/disk.img" 2>>"$LOGS/disk.log" ||
    losetup --find --show "$KUBE_STATE/disk.img" 2>>"$LOGS/disk.log") ||
    fail "no loop device for $KUBE_STATE/disk.img (log: $LOGS/disk.log)"
  echo "$loop" >"$KUBE_STATE/host/loop"
  mount -t ext4 -o nodiscard,noatime "$loop" "$DATA" 2>>"$LOGS/disk.log" ||
    fail "mounting $loop on $DATA failed (log: $LOGS/disk.log)"
}

# Unmounts the data disk and frees its loop device (each may be absent).
disk_down() {
  if mountpoint -q "$DATA" 2>/dev/null; then
    umount "$DATA" 2>/dev/null || umount -l "$DATA"
  fi
  local loop
  loop=$(cat "$KUBE_STATE/host/loop" 2>/dev/null || true)
  local info
  info=$(losetup "$loop" 2>/dev/null || true)
  if [ -n "$loop" ] && [[ "$info" == *"$KUBE_STATE/disk.img"* ]]; then losetup -d "$loop"; fi
}
