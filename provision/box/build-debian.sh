#!/usr/bin/env bash
# Build the Debian 13 (trixie) libvirt box for the testbed from the Debian
# mirror only. Called by `testbed box build`, which decides whether a rebuild
# is needed (recipe hash) and where the result is cached.
#
#   build-debian.sh OUTDIR MIRROR APT_CACHE_DIR
#
# OUTDIR receives: box.img (qcow2), vmlinuz, initrd.img, metadata.json,
# Vagrantfile, and testbed.box (the tarball `vagrant box add` takes).
set -euo pipefail

out=$1 mirror=$2 cache=$3
here=$(cd "$(dirname "$0")" && pwd)
suite=trixie
work=$(mktemp -d /var/tmp/testbed-box.XXXXXX)
root=$work/rootfs
mkdir -p "$out" "$cache" "$root"

cleanup() {
  for m in dev/pts dev proc sys var/cache/apt/archives; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '[box] %s\n' "$*"; }

step "debootstrap $suite (minbase) from $mirror"
debootstrap --variant=minbase --cache-dir="$cache" "$suite" "$root" "$mirror" \
  > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; exit 1; }

mount --bind /proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mkdir -p "$root/var/cache/apt/archives"
mount --bind "$cache" "$root/var/cache/apt/archives"

# Nothing starts inside the chroot, and nothing starts by itself at first
# boot either: provisioning places keys and config before any daemon runs.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
echo "deb $mirror $suite main" > "$root/etc/apt/sources.list"

in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^\s*$/d' "$here/debian-packages.txt")
step "installing ${#pkgs[@]} packages (condor, xrootd, mdadm, kernel, ...)"
in_root apt-get update -qq
# debootstrap's resolver trips on python3-cryptography's virtual deps; apt
# copes once python3-cffi-backend is in place.
in_root apt-get install -y -qq --no-install-recommends python3-cffi-backend > "$work/apt.log" 2>&1
echo 'iperf3 iperf3/start_daemon boolean false' | in_root debconf-set-selections
in_root apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >> "$work/apt.log" 2>&1 \
  || { tail -30 "$work/apt.log"; exit 1; }

step "E3: uproot and ROOT into the venv /opt/tb-e3 (over Debian's python3-xrootd and numpy)"
# Wheels only, pinned in python-e3.txt, fetched by the host's pip (which has the host's
# certificates and proxy) for trixie's CPython 3.13, installed offline in the chroot;
# guests never install at run time.
wheels=$root/tmp/e3-wheels
"${TB_HOST_PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.13 \
  --implementation cp --abi cp313 --abi abi3 --abi none --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d "$wheels" -r "$here/python-e3.txt" > "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }
install -m 0644 "$here/python-e3.txt" "$root/tmp/python-e3.txt"
in_root python3 -m venv --system-site-packages /opt/tb-e3
venv_before=$(du -sm "$root/opt/tb-e3" | cut -f1)
pip_start=$(date +%s)
in_root env -u PIP_FIND_LINKS /opt/tb-e3/bin/pip install -q --no-cache-dir --disable-pip-version-check \
  --no-index --find-links /tmp/e3-wheels -r /tmp/python-e3.txt >> "$work/pip.log" 2>&1 \
  || { tail -30 "$work/pip.log"; exit 1; }
pip_s=$(( $(date +%s) - pip_start ))
venv_after=$(du -sm "$root/opt/tb-e3" | cut -f1)
step "E3 venv: $(du -sh "$root/opt/tb-e3" | cut -f1) in /opt/tb-e3 ($(( venv_after - venv_before )) MB from the wheels: $(du -sh "$wheels" | cut -f1) downloaded), pip install ${pip_s} s"
in_root /opt/tb-e3/bin/python -c 'import uproot, XRootD.client, numpy' \
  || { echo "box: the E3 venv cannot import uproot, XRootD.client and numpy" >&2; exit 1; }
# ROOT's interpreter (cling) asks the system C++ compiler for the standard library's
# include paths at start-up (g++ is in debian-packages.txt for that); without them the
# import still exits 0 and only compiling C++ fails, so the check compiles and calls a
# function as e3_ttree.py does. It runs as an analysis job does (batch, no home).
import_start=$(date +%s%N)
in_root env -u HOME /opt/tb-e3/bin/python -W ignore -c 'import ROOT
ROOT.gROOT.SetBatch(True)
ROOT.TFile, ROOT.TTreeCache, ROOT.TNetXNGFile
assert ROOT.gInterpreter.Declare("#include <vector>\nint tbe3_box_check() { return std::vector<int>{1, 2}.size(); }")
assert ROOT.tbe3_box_check() == 2' > "$work/root-import.log" 2>&1 \
  || { tail -20 "$work/root-import.log"; echo "box: the E3 venv cannot import ROOT (TFile, TTreeCache, TNetXNGFile)" >&2; exit 1; }
step "E3: import ROOT in the chroot took $(( ($(date +%s%N) - import_start) / 1000000 )) ms (the host's CPU; under TCG expect 10-30x)"
rm -rf "$root/tmp/python-e3.txt" "$wheels"

if [ -n "${TB_RELEASE_FILE:-}" ]; then
  # Another middleware release over the trixie box: that suite's HTCondor and XRootD at the
  # versions the release file pins, with only the libraries they need from it.
  rsuite=$(awk '$1 == "suite" {print $2}' "$TB_RELEASE_FILE")
  mapfile -t pins < <(awk '$1 != "suite" && $1 !~ /^#/ && NF == 2 {print $1 "=" $2}' "$TB_RELEASE_FILE")
  step "release $rsuite: ${pins[*]}"
  # a mirror's copy of a moving suite may carry a Release file past its Valid-Until; the pins
  # below name exact versions, so an old index cannot change what is installed
  echo "deb [check-valid-until=no] $mirror $rsuite main" > "$root/etc/apt/sources.list.d/release.list"
  printf 'Package: *\nPin: release n=%s\nPin-Priority: 100\n' "$rsuite" > "$root/etc/apt/preferences.d/release"
  in_root apt-get update -qq
  in_root apt-get purge -y -qq python3-xrootd >> "$work/apt.log" 2>&1
  if ! in_root apt-get install -y -qq --no-install-recommends -t "$rsuite" "${pins[@]}" >> "$work/apt.log" 2>&1; then
    moved=$(for pin in "${pins[@]}"; do
      now=$(in_root apt-cache policy -t "$rsuite" "${pin%%=*}" | awk '/Candidate:/ {print $2}')
      [ "$now" = "${pin#*=}" ] || printf '%s %s (pinned %s); ' "${pin%%=*}" "$now" "${pin#*=}"
    done)
    if [ -n "$moved" ]; then
      echo "box: $rsuite now serves ${moved}edit $TB_RELEASE_FILE to build with them" >&2
    else
      tail -30 "$work/apt.log"
    fi
    exit 1
  fi
  # python3-xrootd of that suite needs its Python; E3's uproot reader gets the same XRootD
  # client release from PyPI's wheel (it carries its own XrdCl) into the venv instead
  xrd=$(awk '$1 == "xrootd-client" {print $2}' "$TB_RELEASE_FILE"); xrd=${xrd%%-*}
  "${TB_HOST_PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.13 \
    --implementation cp --abi cp313 --platform manylinux_2_28_x86_64 -d "$root/tmp/xrd-wheel" \
    "xrootd==$xrd" > "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }
  in_root /opt/tb-e3/bin/pip install -q --no-cache-dir --disable-pip-version-check --no-index \
    --find-links /tmp/xrd-wheel "xrootd==$xrd" >> "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }
  rm -rf "$root/tmp/xrd-wheel"
  in_root /opt/tb-e3/bin/python -c 'import uproot, XRootD.client' \
    || { echo "box: the E3 venv cannot import XRootD.client from the xrootd $xrd wheel" >&2; exit 1; }
  step "release $rsuite: E3's venv has XRootD $xrd's Python bindings (PyPI wheel)"
fi

step "configuring the guest"
# shellcheck source=provision/box/configure-guest.sh
install -m 0755 "$here/configure-guest.sh" "$root/tmp/configure-guest.sh"
insecure_pub=$(ls /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub 2>/dev/null | head -1)
[ -n "$insecure_pub" ] || { echo "box: Vagrant's keys/vagrant.pub not found (is vagrant installed?)" >&2; exit 2; }
install -m 0644 "$insecure_pub" "$root/tmp/vagrant.pub"
in_root /tmp/configure-guest.sh
rm -f "$root/tmp/configure-guest.sh" "$root/tmp/vagrant.pub" "$root/usr/sbin/policy-rc.d"
# the apt cache is a bind mount outside the image: keep it for the next build

# versions go into every run's manifest
in_root dpkg-query -W -f '${Package} ${Version}\n' condor xrootd-server mdadm linux-image-amd64 \
  > "$out/versions.txt"

cp -L "$root/vmlinuz" "$out/vmlinuz"
cp -L "$root/initrd.img" "$out/initrd.img"

for m in var/cache/apt/archives dev/pts dev sys proc; do umount -l "$root/$m"; done

step "making the disk image"
# debootstrap + packages ~2.5 GB, the E3 venv ~0.6 GB (ROOT), g++ ~0.3 GB; the
# rest is the guests' room for logs, spools and E3's files (the RAID holds the data)
size_gb=10
truncate -s "${size_gb}G" "$work/root.raw"
mkfs.ext4 -q -L testbed-root -d "$root" "$work/root.raw"
qemu-img convert -O qcow2 "$work/root.raw" "$out/box.img"
rm -f "$work/root.raw"

cat > "$out/metadata.json" <<EOF
{"provider": "libvirt", "format": "qcow2", "virtual_size": $size_gb}
EOF
cat > "$out/Vagrantfile" <<'EOF'
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.disk_bus = "virtio"
  end
end
EOF
step "packing the box"
tar -C "$out" -cf "$out/testbed.box.tmp" metadata.json Vagrantfile box.img
mv "$out/testbed.box.tmp" "$out/testbed.box"
step "done: $out"
