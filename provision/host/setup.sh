#!/bin/bash
# Host set-up for the testbed on Debian 12 (root). Idempotent: a second run
# takes seconds. Installs the virtualisation stack with apt, the project's
# Python environment with pip, and starts libvirt's daemons when PID 1 is not
# systemd (containers, CI sandboxes).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stamp=$root/.venv/.setup-done
pkgs=(vagrant vagrant-libvirt libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
      debootstrap dnsmasq-base e2fsprogs iproute2 openssh-client python3-venv python3-pip
      rsync curl ca-certificates)

log() { printf '[setup] %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then echo "setup: run as root (apt, libvirt, debootstrap)" >&2; exit 2; fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

req=$root/requirements.txt
if [ ! -x "$root/.venv/bin/python" ]; then
  log "python: creating .venv"
  python3 -m venv "$root/.venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$req" "$stamp"; then
  log "pip: installing requirements.txt"
  "$root/.venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
fi

if ! pgrep -x virtlogd >/dev/null; then log "starting virtlogd"; virtlogd -d; fi
# On hosts where KVM does not really work (paravirtual /dev/kvm, see
# PLATFORM.md), libvirtd runs in its own mount namespace with /dev/kvm masked.
# Otherwise its capability probe (as root) sees KVM while its qemu user cannot
# open /dev/kvm, and it re-probes QEMU on every domain definition (~50 s each).
accel=$(cd "$root" && .venv/bin/python -c 'from testbed.machines import accel; print(accel.detect())')
marker=/run/testbed-libvirtd-kvm-masked
if [ "$accel" = tcg ] && [ -e /dev/kvm ] && [ ! -f "$marker" ]; then
  if pgrep -x libvirtd >/dev/null; then log "restarting libvirtd with /dev/kvm masked (TCG host)"; pkill -x libvirtd; for _ in $(seq 1 20); do pgrep -x libvirtd >/dev/null || break; sleep 0.5; done; fi
  install -m 0600 /dev/null /run/testbed-kvm-mask
  # libvirt's private per-domain /dev cannot copy a masked device node
  grep -q '^namespaces = \[\]' /etc/libvirt/qemu.conf || echo 'namespaces = []' >> /etc/libvirt/qemu.conf
  unshare -m --propagation private sh -c 'mount --bind /run/testbed-kvm-mask /dev/kvm && exec libvirtd -d'
  touch "$marker"
fi
if ! pgrep -x libvirtd >/dev/null; then log "starting libvirtd"; libvirtd -d; rm -f "$marker"; fi
for _ in $(seq 1 30); do
  virsh -c qemu:///system version >/dev/null 2>&1 && break
  sleep 1
done
virsh -c qemu:///system version >/dev/null 2>&1 || { echo "setup: libvirtd does not answer" >&2; exit 1; }
# vagrant-libvirt's default storage pool
if ! virsh -c qemu:///system pool-info default >/dev/null 2>&1; then
  virsh -c qemu:///system pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
  virsh -c qemu:///system pool-build default >/dev/null 2>&1 || true
fi
virsh -c qemu:///system pool-start default >/dev/null 2>&1 || true
virsh -c qemu:///system pool-autostart default >/dev/null 2>&1 || true
log "ready"
