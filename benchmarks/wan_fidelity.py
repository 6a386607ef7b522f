"""Benchmark: configured vs measured RTT on the running site (issue target: within 1 ms + 5%,
after subtracting the VMs' own RTT measured with no emulation in the same run).

    .venv/bin/python benchmarks/wan_fidelity.py [-t TOPOLOGY] [--link submit:worker] [--rtts 0,10,20,40,80]
"""
import argparse
import sys

from testbed.network import netem, wan
from testbed.machines import lifecycle
from testbed.model import tables, topology
from testbed.remote.site import Site


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--link", default="submit:worker")
    p.add_argument("--rtts", default="0,10,20,40,80")
    p.add_argument("--count", type=int, default=30)
    args = p.parse_args()
    site = Site(topology.load(args.topology or lifecycle.active_topology() or "default"))
    topo, ssh = site.topo, site.ssh()
    a, b = args.link.split(":")
    wan.clear(topo, ssh, site.state)
    base = wan.measure(topo, ssh, [netem.Link(a, b, 0)], args.count)[0]["measured_ms"]
    rows = []
    try:
        for rtt in [float(x) for x in args.rtts.split(",")]:
            link = netem.Link(a, b, rtt)
            wan.apply(topo, ssh, [link])
            m = wan.measure(topo, ssh, [link], args.count)[0]
            err = m["measured_ms"] - base - rtt
            rows.append([f"{rtt:g}", m["measured_ms"], f"{err:+.2f}", f"{1 + 0.05 * rtt:.2f}",
                         "ok" if wan.within_target(rtt, m["measured_ms"], base) else "MISS"])
    finally:
        wan.clear(topo, ssh, site.state)
    print(f"WAN fidelity on {topo.name}, link {a}<->{b}, {args.count} pings per point, "
          f"VM base RTT {base} ms (median, no netem)")
    print(tables.render(["configured ms", "measured ms", "error - base", "target +/- ms", "verdict"], rows))
    return 0 if all(r[-1] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
