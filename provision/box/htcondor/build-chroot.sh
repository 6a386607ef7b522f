#!/usr/bin/env bash
# The Debian 13 (trixie) chroot in which `testbed box build --patch` compiles
# HTCondor daemons: Debian's build dependencies of condor (apt-get build-dep,
# from the Sources index) and the packages in build-packages.txt.
# Called by testbed/machines/daemon_build.py, which caches the result by the
# hash of this recipe and records the package set.
#
#   build-chroot.sh ROOT MIRROR APT_CACHE_DIR
set -euo pipefail

root=$1 mirror=$2 cache=$3
here=$(cd "$(dirname "$0")" && pwd)
suite=trixie
mkdir -p "$root" "$cache"

cleanup() {
  for m in dev/pts dev proc var/cache/apt/archives; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
  done
}
trap cleanup EXIT

debootstrap --variant=minbase --cache-dir="$cache" "$suite" "$root" "$mirror"

mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind "$cache" "$root/var/cache/apt/archives"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
printf 'deb %s %s main\ndeb-src %s %s main\n' "$mirror" "$suite" "$mirror" "$suite" > "$root/etc/apt/sources.list"

in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^\s*$/d' "$here/build-packages.txt")
[ "${#pkgs[@]}" -gt 0 ] || { echo "build-chroot.sh: no package in $here/build-packages.txt" >&2; exit 1; }
in_root apt-get update -qq
in_root apt-get build-dep -y -q --no-install-recommends condor
in_root apt-get install -y -q --no-install-recommends "${pkgs[@]}"
