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
. "$root/provision/host/ledger.sh"

if [ "$(id -u)" != 0 ]; then echo "setup: run as root (apt, libvirt, debootstrap)" >&2; exit 2; fi
# one set-up at a time on this host: two `./tb` commands started together would
# otherwise both run apt, or both restart libvirtd and one fail on its pidfile
mkdir -p /run/lock
exec 8>/run/lock/grid-testbed-setup.lock
flock 8

install_packages "${pkgs[@]}"

req=$root/requirements.txt
if [ ! -x "$root/.venv/bin/python" ]; then
  log "python: creating .venv"
  python3 -m venv "$root/.venv"
fi
# the stamp holds requirements.txt and pyproject.toml as installed: either changing re-installs
if [ ! -f "$stamp" ] || ! cat "$req" "$root/pyproject.toml" | cmp -s - "$stamp"; then
  log "pip: installing requirements.txt and the testbed package (editable)"
  "$root/.venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  "$root/.venv/bin/pip" install -q --disable-pip-version-check -e "$root"
  cat "$req" "$root/pyproject.toml" > "$stamp"
fi

accel=$(cd "$root" && .venv/bin/python -c 'from testbed.machines import accel; print(accel.detect())')
bash "$root/provision/host/libvirtd.sh" "$accel"
# vagrant-libvirt's default storage pool
if ! virsh -c qemu:///system pool-info default >/dev/null 2>&1; then
  ledger_note pool default
  virsh -c qemu:///system pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
  virsh -c qemu:///system pool-build default >/dev/null 2>&1 || true
fi
virsh -c qemu:///system pool-start default >/dev/null 2>&1 || true
virsh -c qemu:///system pool-autostart default >/dev/null 2>&1 || true
log "ready"
