#!/bin/bash
# libvirt's daemons for the testbed, converged to the accelerator the guests use
# (argument: kvm or tcg, from testbed.machines.accel). Idempotent; run by setup.sh
# and again by `testbed up` once the box's kernel has told the probe the answer.
#
# On hosts where KVM does not really work (paravirtual /dev/kvm, see PLATFORM.md),
# libvirtd runs in its own mount namespace with /dev/kvm masked. Otherwise its
# capability probe (as root) sees KVM while its qemu user cannot open /dev/kvm,
# and it re-probes QEMU on every domain definition (~50 s each). Where KVM works,
# a libvirtd masked earlier (the probe had no kernel to boot yet) is restarted
# without the mask.
set -euo pipefail
accel=${1:?usage: libvirtd.sh kvm|tcg}
marker=/run/testbed-libvirtd-kvm-masked
log() { printf '[setup] %s\n' "$*"; }
. "$(dirname "$0")/ledger.sh"
# serialised: setup.sh and `testbed up` may both call this at once (a lock of its own,
# so that setup.sh, which holds the set-up lock, can call it)
exec 9>/run/lock/grid-testbed-libvirtd.lock
flock 9
# a daemon must not inherit the lock (nor setup.sh's): it would hold it for good
daemon() { "$@" 8>&- 9>&-; }

stop_libvirtd() {
  pkill -x libvirtd || true
  for _ in $(seq 1 20); do pgrep -x libvirtd >/dev/null || break; sleep 0.5; done
}

if ! pgrep -x virtlogd >/dev/null; then log "starting virtlogd"; ledger_note daemon virtlogd; daemon virtlogd -d; fi
if [ "$accel" = tcg ] && [ -e /dev/kvm ] && [ ! -f "$marker" ]; then
  if pgrep -x libvirtd >/dev/null; then
    log "restarting libvirtd with /dev/kvm masked (TCG host)"
    # the host's own libvirtd is restarted as it was by `host undo`; one the project started is stopped
    ledger_has daemon libvirtd || ledger_note restarted libvirtd
    stop_libvirtd
  else
    log "starting libvirtd with /dev/kvm masked (TCG host)"; ledger_note daemon libvirtd
  fi
  install -m 0600 /dev/null /run/testbed-kvm-mask
  # libvirt's private per-domain /dev cannot copy a masked device node
  if ! grep -q '^namespaces = \[\]' /etc/libvirt/qemu.conf; then
    ledger_note line "/etc/libvirt/qemu.conf namespaces = []"
    echo 'namespaces = []' >> /etc/libvirt/qemu.conf
  fi
  daemon unshare -m --propagation private sh -c 'mount --bind /run/testbed-kvm-mask /dev/kvm && exec libvirtd -d'
  touch "$marker"
elif [ "$accel" = kvm ] && [ -f "$marker" ]; then
  log "restarting libvirtd with /dev/kvm (KVM works here)"
  stop_libvirtd
  rm -f "$marker"
fi
if ! pgrep -x libvirtd >/dev/null; then log "starting libvirtd"; ledger_note daemon libvirtd; daemon libvirtd -d; rm -f "$marker"; fi
for _ in $(seq 1 30); do
  virsh -c qemu:///system version >/dev/null 2>&1 && break
  sleep 1
done
virsh -c qemu:///system version >/dev/null 2>&1 || { echo "setup: libvirtd does not answer" >&2; exit 1; }
