"""Benchmark: time to swap tuning profiles on the running site (push, take effect, read
back every value). Issue target: 20 s or less on `default` under TCG.

    .venv/bin/python benchmarks/profile_swap.py [-t TOPOLOGY] [--profiles default,wan-tuned,default,raid-stripe-32768,default]
"""
import argparse
import sys

from testbed.model import profiles, tables, topology
from testbed.machines import site
from testbed.services import tuning
from testbed.remote.ssh import SSH


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--profiles", default="default,wan-tuned,default,raid-stripe-32768,default")
    args = p.parse_args()
    topo = topology.load(args.topology or site.active_topology() or "default")
    ssh = SSH(topo)
    rows, previous = [], None
    for name in args.profiles.split(","):
        prof = profiles.load(name)
        out = tuning.apply(topo, ssh, prof, previous, echo=lambda *_: None)
        n = sum(len(v) for v in out["readback"].values())
        rows.append([f"{previous.name if previous else '?'} -> {name}", f"{out['seconds']:.1f}", n,
                     sum(1 for files in out["changed"].values() if files)])
        previous = prof
    print(f"profile swaps on {topo.name} ({len(topo.hosts)} VMs)")
    print(tables.render(["swap", "seconds", "values read back", "hosts changed"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
