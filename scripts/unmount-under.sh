#!/usr/bin/env bash
# Unmounts (lazily, deepest first) every mount under DIR: the file systems of the process
# sandboxes a script's Switchboard left running (issue 33: each confined sandbox's directory is
# an image mounted over it), so that `rm -rf DIR` can remove it. A sandbox still running keeps
# its own until its last process ends. Usage: scripts/unmount-under.sh DIR
set -u
dir=$(realpath -m "${1:?usage: unmount-under.sh DIR}")
# Field 5 of mountinfo is the mount point, with spaces and the like written as \ooo.
awk '{ print $5 }' /proc/self/mountinfo |
  while read -r escaped; do
    mount=$(printf '%b' "$escaped")
    case "$mount" in "$dir"/*) printf '%s\t%s\n' "${#mount}" "$mount" ;; esac
  done | sort -rn | cut -f2- |
  while IFS= read -r mount; do umount --lazy "$mount" 2>/dev/null || true; done
exit 0
