"""Benchmark: time to swap tuning profiles on the running site (push, take effect, read
back every value), with the read-back in the apply's own round trip (what `profile apply`
and the suites do) beside it in a round trip of its own after the apply, swap by swap in
one run. Target: 10 s or less on `default` under TCG.

    .venv/bin/python benchmarks/profile_swap.py [-t TOPOLOGY] [--profiles default,wan-tuned,default,raid-stripe-32768,default]
"""
import argparse
import statistics
import sys

from testbed.model import profiles, site_lock, tables, topology
from testbed.machines import lifecycle
from testbed.services import tuning
from testbed.remote.site import Site

ARMS = (("in the apply", False), ("a round trip of its own", True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--profiles", default="default,wan-tuned,default,raid-stripe-32768,default")
    args = p.parse_args()
    site = Site(topology.load(args.topology or lifecycle.active_topology() or "default"))
    topo, ssh = site.topo, site.ssh()
    site_lock.hold(site.state, "benchmarks/profile_swap.py")
    names = args.profiles.split(",")
    seconds, again, counts = {}, {}, {}
    # the whole sequence once per arm: each arm makes the same swaps from the same profile
    for arm, separate in ARMS:
        previous = None
        for i, name in enumerate(names):
            prof = profiles.load(name)
            out = tuning.apply(topo, ssh, prof, previous, echo=lambda *_: None, separate_readback=separate)
            seconds[arm, i], again[arm, i] = out["seconds"], out["read_again"]
            counts[i] = (sum(len(v) for v in out["readback"].values()),
                         sum(1 for files in out["changed"].values() if files))
            previous = prof
    rows = [[f"{names[i - 1] if i else '?'} -> {name}",
             *(f"{seconds[arm, i]:.1f}" + (" (read again)" if again[arm, i] else "") for arm, _ in ARMS),
             *counts[i]] for i, name in enumerate(names)]
    print(f"profile swaps on {topo.name} ({len(topo.hosts)} VMs), the sequence once per arm")
    print(tables.render(["swap", *(f"s, read-back {arm}" for arm, _ in ARMS), "values read back",
                         "hosts changed"], rows))
    (a, _), (b, _) = ARMS
    mean = {arm: statistics.mean(seconds[arm, i] for i in range(1, len(names))) for arm, _ in ARMS}
    print(f"mean of the swaps after the first: {mean[a]:.1f} s {a}, {mean[b]:.1f} s {b} "
          f"({mean[a] / mean[b]:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
