"""Benchmark: a site's bring-up, phase by phase and VM by VM.

Host side (from `testbed up`'s own record, .testbed/<topology>/bringup.json): when
Vagrant created, started, got a lease for and reached each guest over SSH, when its
provisioning finished, and when the site was healthy. Guest side (from each guest's
own records: systemd-analyze and the journal): kernel and userspace time, when sshd
listened and when the management lease arrived. Plus each VM's qemu RSS.

    .venv/bin/python benchmarks/bringup.py [-t TOPOLOGY]            # the site that is up
    .venv/bin/python benchmarks/bringup.py -t small --cycle         # down, then a cold up
    .venv/bin/python benchmarks/bringup.py --keep                   # and keep the record in results/
    .venv/bin/python benchmarks/bringup.py -t small --warm          # cold up, down, warm up: side by side

A kept record (results/benchmarks/bringup/) is what docs/first-run.md's bring-up table is
generated from (`testbed report docs`).
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from testbed.machines import hostload, lifecycle, snapshots, warm
from testbed.results import bringup_record
from testbed.model import tables, topology
from testbed.model.clock import utc_iso
from testbed.remote import bootrecord
from testbed.remote.site import Site

ROOT = Path(__file__).resolve().parents[1]


def fmt(value):
    return "-" if value is None else f"{value:.0f}"


def timed(topo, *verb):
    """Seconds `testbed -t TOPO VERB...` took, as a user's terminal sees them."""
    started = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "testbed", "-t", topo.name, *verb], cwd=ROOT)
    if rc != 0:
        sys.exit(f"bringup: `testbed {' '.join(verb)}` failed (rc {rc})")
    return time.monotonic() - started


def warm_cycle(site):
    """A cold `up` (which keeps the golden snapshot), `down` (which parks the site) and a warm
    `up`, each timed from the outside: the cold and the warm bring-up side by side."""
    topo = site.topo
    if lifecycle.active_topology() == topo.name:
        timed(topo, "down")
    cold = timed(topo, "up", "--cold")
    golden = warm.golden_record(site)
    kept = json.loads(golden.read_text()).get("seconds") if golden.exists() else None
    park = timed(topo, "down")
    parked = warm.parked(site) is not None
    restore = site.state.dir / snapshots.RESTORE_RECORD
    restore.unlink(missing_ok=True)   # the figures below are this warm `up`'s or none
    back = timed(topo, "up")
    print(f"warm bring-up of {topo.name} ({len(topo.hosts)} VMs), seconds as the terminal saw them")
    print(tables.render(["cold `up --cold`", "of which keeping the golden snapshot", "`down` (parks)",
                         "warm `up`", "cold / warm"],
                        [[fmt(cold), fmt(kept), fmt(park) + ("" if parked else " (not parked)"), fmt(back),
                          f"{cold / back:.1f}x"]]))
    phases = json.loads(restore.read_text()).get("phases", {}) if restore.exists() else {}
    if phases:
        print("the warm `up`'s restore, step by step (s)")
        print(tables.render(list(phases) + ["restore in all"],
                            [[f"{s:.1f}" for s in phases.values()] + [f"{sum(phases.values()):.1f}"]]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--cycle", action="store_true", help="tear the site down and bring it up cold first")
    p.add_argument("--warm", action="store_true", help="a cold up, down and a warm up, timed side by side")
    p.add_argument("--keep", action="store_true", help="keep the record in results/benchmarks/bringup/ "
                                                       "(docs/first-run.md is generated from it)")
    args = p.parse_args()
    site = Site(topology.load(args.topology or lifecycle.active_topology() or "small"))
    topo = site.topo
    if args.warm:
        return warm_cycle(site)
    if args.cycle:
        timed(topo, "down")
        timed(topo, "up", "--cold")   # a parked site would come back warm
    path = site.state.dir / lifecycle.BRINGUP_RECORD
    record = json.loads(path.read_text())
    if "began" not in record:   # a record made before bring-ups noted it: when it was written
        record["written"] = utc_iso(path.stat().st_mtime)
    guests = bootrecord.collect(site.ssh(), list(topo.hosts))
    load = hostload.usage(topo, window=10)
    rss = {h: v["rss_mb"] for h, v in load.items()}
    rows = []
    for name, host in topo.hosts.items():
        vm, g = record["vms"].get(name, {}), guests.get(name, {})
        start = vm.get("start")
        rel = (lambda key: None if start is None or vm.get(key) is None else vm[key] - start)
        rows.append([name, f"{host.memory_mb}", fmt(start), fmt(rel("ssh_wait")), fmt(rel("booted")),
                     f"{g.get('kernel', 0):.1f}", f"{g.get('userspace', 0):.1f}", fmt(g.get("sshd")),
                     fmt(g.get("lease")), fmt(vm.get("provisioned_after")), fmt(rss.get(name)),
                     f"{load.get(name, {}).get('cpu_pct', 0):.0f}"])
    print(f"bring-up of {topo.name} ({len(topo.hosts)} VMs); seconds; host-side times from `testbed up`'s "
          f"record, guest-side from systemd-analyze and the journal")
    print(tables.render(["VM", "RAM MB", "started at", "lease after", "SSH ready after",
                         "guest kernel", "guest userspace", "guest sshd at", "guest lease at",
                         "provisioned at", "qemu RSS MB", "idle CPU %"], rows))
    ph = record["phases"]
    print(f"phases (s since `up` began): box {ph.get('box')}, all booted {ph.get('boot')}, "
          f"all provisioned {ph.get('provision')}, healthy {ph.get('healthy')}")
    print(f"the site now costs the host {load['total']['cpu_pct']}% of its cores and {load['total']['rss_mb']} MB "
          f"(qemu, measured over 10 s)")
    cpu = record.get("cpu")
    if cpu and cpu.get("guests") and ph.get("healthy"):
        rows = [[name, fmt(cpu["booted"].get(name)), fmt(spent), fmt(spent - (cpu["booted"].get(name) or 0))]
                for name, spent in sorted(cpu["guests"].items())]
        rows.append(["host tools (Vagrant, ssh, virsh)", "-", fmt(cpu["tools"]), "-"])
        print("CPU seconds of the bring-up (qemu per VM, from its start to the site healthy)")
        print(tables.render(["", "to SSH ready", "to healthy", "after SSH ready"], rows))
        f = bringup_record.figures(record)   # the guests' CPU is counted from the box on
        print(f"floor: {f['cpu_seconds']} CPU s / {f['cores']} cores = {f['floor_seconds']} s; healthy "
              f"{ph['healthy'] - (ph.get('box') or 0):.0f} s after the box was ready = {f['over_floor']}x the "
              f"floor (1.0: every core busy the whole bring-up)")
    if args.keep:
        print(f"kept: {bringup_record.keep(record, topo)}")


if __name__ == "__main__":
    main()
