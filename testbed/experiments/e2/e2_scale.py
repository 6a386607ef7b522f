"""E2's scale model (docs/scaling.md): RAID member limits that give this site's array the
paper's balance between its spindles and the rate a claim depends on, computed from an
E2 run's own measurements.

The stripe cache's speed-up (seed 001: 60 -> 700 MB/s) is the ratio of full-stripe writes
to read-modify-write: the first bound by the members' bandwidth or md's parity work, the
second by the members' random operations. Under TCG md's parity work is what slows down,
so members with a real spindle's limits are fast against it and the cache has less to
save. Scaling the members by

    k = P here / P in the paper

(P: the writers' rate at stripe cache 32768 with the members unthrottled here, the
paper's 700 MB/s there) keeps members' MB/s and IOPS against the parity throughput as
the paper had them; the member count is folded in, so the array's aggregate keeps the
ratio with 6 members instead of 12:

    member MB/s = k x (paper member MB/s) x (12 - 2) / (members - 2)   (data members)
    member IOPS = k x (paper member IOPS) x 12 / members               (every member)

The paper gives no member figures: its 10 data members read 1.3 GB/s without being the
bottleneck, so at least 130 MB/s each; a 7200 rpm spindle does about DISK_IOPS random
operations per second. The cache-against-direct claim depends on another rate, the
network's (the uncached reads), with the same formulas and k = uncached rate here /
the paper's at the same client count.
"""
from testbed.experiments.e2 import e2_site
from testbed.model.constants import DISK_IOPS
from testbed.results import compare
from testbed.results.intervals import mean

PAPER_MEMBERS = 12            # seed 001, section 2: "48 Terabytes of disk (12 disks, each 4TB) ... in RAID6"
PARITY_MEMBERS = 2            # RAID6
PAPER_MEMBER_IOPS = DISK_IOPS  # the paper names no figure: a 7200 rpm spindle's (constants.DISK_IOPS)


def _paper(metric, params):
    fig = compare.paper_match(compare.load_paper(e2_site.EXPERIMENT.paper_path), metric, params)
    return fig["value"] if fig else None


def paper_member_mb_s():
    """The least a paper member read per second: 10 clients' 1.3 GB/s over its data members."""
    return _paper("e2.uncached_rate", {"clients": 10}) / (PAPER_MEMBERS - PARITY_MEMBERS)


def member_limits(k, members):
    """(MB/s, IOPS) per member of an array of `members` that keep the paper's members against
    a rate k times the paper's; IOPS a whole number, at least 1 (libvirt's limit is whole
    operations per second, and 0 would lift it)."""
    if not k or k <= 0 or members <= PARITY_MEMBERS:
        raise ValueError(f"member limits need k > 0 and more than {PARITY_MEMBERS} members, got {k!r}, {members!r}")
    mb_s = k * paper_member_mb_s() * (PAPER_MEMBERS - PARITY_MEMBERS) / (members - PARITY_MEMBERS)
    return round(mb_s, 2), max(1, round(k * PAPER_MEMBER_IOPS * PAPER_MEMBERS / members))


def _mean(records, name, **params):
    return mean(r["value"] for r in records if r["name"] == name
                and all(str(r.get("params", {}).get(k)) == str(v) for k, v in params.items()))


def scales(records, members):
    """[(claim's rate, k, (MB/s, IOPS) or None, how k was measured)] from an E2 run's records:
    the parity throughput (the stripe cache's speed-up) and the network's read rate (cache
    against direct); k None where the run did not measure its rate."""
    out = []
    parity = _mean(records, "e2.raid_write_rate", stripe_cache_size=32768, spindles="off")
    paper = _paper("e2.raid_write_rate", {"stripe_cache_size": 32768, **e2_site.PAPER_WRITES})
    k = parity / paper if parity else None
    out.append(("parity throughput", k, member_limits(k, members) if k else None,
                f"writers at stripe cache 32768, members unthrottled: {parity:.1f} / {paper:g} MB/s" if k else
                "no write at stripe cache 32768 with the members unthrottled (the *-unlimited rows)"))
    measured = sorted({int(r["params"]["clients"]) for r in records if r["name"] == "e2.uncached_rate"
                       and _paper("e2.uncached_rate", {"clients": r["params"].get("clients")})}, reverse=True)
    if measured:
        n = measured[0]
        rate, paper = _mean(records, "e2.uncached_rate", clients=n), _paper("e2.uncached_rate", {"clients": n})
        k = rate / paper
        out.append(("network (uncached reads)", k, member_limits(k, members),
                    f"{n} clients without the cache: {rate:.2f} / {paper:g} MB/s"))
    else:
        out.append(("network (uncached reads)", None, None, "no uncached read at a client count the paper gives"))
    return out


def text(records, members):
    """Lines for benchmarks/disk_model.py: per claim's rate, k and the member limits."""
    lines = [f"scale model (docs/scaling.md): member limits that keep the paper's spindles against each rate, "
             f"{members} members here, {PAPER_MEMBERS} in the paper"]
    for what, k, limits, how in scales(records, members):
        if k is None:
            lines.append(f"  {what}: not measured ({how})")
        else:
            lines.append(f"  {what}: k = {k:.4g} ({how}) -> --set member_mb_per_s={limits[0]:g} "
                         f"--set member_iops={limits[1]}")
    return lines
