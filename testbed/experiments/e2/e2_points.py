"""E2's points (seed 001), measured into the records and checks `Measure Point` keeps and
judges: reads through the pass-through proxy, the RAID6 writes (with the emulated spindles
or with their limits lifted), the reads and writes competing on the array, and the cached
reads (first reads fill the cache, repeated reads hit it). SiteInABoxLibrary's point_*
methods act on the site; these functions turn what they returned into records and checks."""
from testbed.harness.points import Measured


def uncached(r):
    """One round of n clients through the pass-through proxy."""
    m, at = Measured(), dict(clients=r["clients"], profile=r["profile"])
    m.record("e2.uncached_rate", r["aggregate"], "MB/s", **at)
    m.record("e2.uncached_per_client_rate", r["per_client"], "MB/s", **at)
    m.record_series("e2.dtn_tx_rate", "MB/s", r["net_series"], 2, phase=r["phase"], profile=r["profile"])
    m.check(r["failed"] == 0, f"{r['failed']} of {r['reads']} reads through port {r['port']} failed")
    m.check(r["aggregate"] > 0, f"aggregate {r['aggregate']} MB/s")
    return m


def raid_write(w):
    """The parallel writers on the RAID6 under the stripe cache and member limits in force."""
    m = Measured()
    m.record("e2.raid_write_rate", w["rate"], "MB/s", stripe_cache_size=w["stripe_cache_size"], writers=w["writers"],
             profile=w["profile"], spindles=w["spindles"], member_mb_per_s=w["member_mb_per_s"],
             member_iops=w["member_iops"])
    m.record_series("e2.raid_write_rate_over_time", "MB/s", w["series"], 2, stripe_cache_size=w["stripe_cache_size"],
                    profile=w["profile"], spindles=w["spindles"])
    m.check(w["rate"] > 0, f"RAID write rate {w['rate']} MB/s")
    return m


def read_write(c):
    """Readers alone, writers alone, both at once: each side's rate together over alone."""
    m = Measured()
    at = dict(readers=c["readers"], writers=c["writers"], profile=c["profile"],
              stripe_cache_size=c["stripe_cache_size"], spindles=c["spindles"])
    m.record("e2.raid_rw_read_rate", c["read_alone"], "MB/s", phase="alone", **at)
    m.record("e2.raid_rw_read_rate", c["read_both"], "MB/s", phase="with_writes", **at)
    m.record("e2.raid_rw_write_rate", c["write_alone"], "MB/s", phase="alone", **at)
    m.record("e2.raid_rw_write_rate", c["write_both"], "MB/s", phase="with_reads", **at)
    m.record_known("e2.raid_read_under_writes", c["read_ratio"], "ratio", **at)
    m.record_known("e2.raid_write_under_reads", c["write_ratio"], "ratio", **at)
    m.check(c["errors"] == 0, f"fio reported {c['errors']} I/O errors on the array")
    for side in ("read_alone", "write_alone", "read_both", "write_both"):
        m.check(c[side] > 0, f"{side}: no bytes moved ({c[side]} MB/s)")
    return m


def _record_cached_round(m, r, rate_metric, per_client_metric):
    at = dict(clients=r["clients"], profile=r["profile"], stripe_cache_size=r["stripe_cache_size"],
              spindles=r["spindles"])
    m.record(rate_metric, r["aggregate"], "MB/s", **at)
    m.record(per_client_metric, r["per_client"], "MB/s", **at)
    m.record_series("e2.dtn_tx_rate", "MB/s", r["net_series"], 2, phase=r["phase"], profile=r["profile"])
    m.record_series("e2.raid_read_rate_during", "MB/s", r["md_series"], 1, phase=r["phase"], profile=r["profile"])
    m.record_series("e2.raid_write_rate_during", "MB/s", r["md_series"], 2, phase=r["phase"], profile=r["profile"])


def cached(first, repeat, first_problem, repeat_problem, uncached_rate, local_rate):
    """The first reads (misses that fill the cache) and the repeated reads (hits) through the
    caching proxy; `*_problem` is what the cache's own records say went wrong (None: as
    expected); `uncached_rate` this run's pass-through rate at the same client count (None
    if not measured); `local_rate` the DTN reading the cached files from its own RAID."""
    m = Measured()
    _record_cached_round(m, first, "e2.first_read_rate", "e2.first_read_per_client_rate")
    _record_cached_round(m, repeat, "e2.repeat_read_rate", "e2.repeat_read_per_client_rate")
    at = dict(stripe_cache_size=repeat["stripe_cache_size"], profile=repeat["profile"], spindles=repeat["spindles"])
    if uncached_rate:
        m.record("e2.cached_over_uncached", first["aggregate"] / uncached_rate, "ratio", clients=first["clients"], **at)
    m.record("e2.dtn_local_read_rate", local_rate, "MB/s", **at)
    if local_rate:
        m.record("e2.hit_over_local_read", repeat["aggregate"] / local_rate, "ratio", **at)
    m.check(first["failed"] == 0, f"{first['failed']} of {first['reads']} first reads failed")
    m.check(first_problem is None, first_problem)
    m.check(repeat["failed"] == 0, f"{repeat['failed']} of {repeat['reads']} repeated reads failed")
    m.check(repeat_problem is None, repeat_problem)
    m.check(local_rate > 0, f"the DTN read the cached files at {local_rate} MB/s")
    return m


ARRAY_BOUND = "array-bound"   # the `spindles` of the rows whose members put the array below the network
ARRAY_SLACK = 2.0             # the measured array/network ratio within this factor of the paper's


def array_bound(b):
    """The cache read with the array slower than the network by the paper's ratio: the
    network's rate through the pass-through proxy, the array's write rate at the calibrated
    member limit (both measured in this row), and the first reads through the emptied cache,
    whose fill the array now has to take."""
    m = Measured()
    net, first, write = b["network"], b["first"], b["write"]
    at = dict(stripe_cache_size=b["stripe_cache_size"], profile=b["profile"], spindles=ARRAY_BOUND)
    m.record("e2.array_bound_network_rate", net["aggregate"], "MB/s", clients=net["clients"], **at)
    m.record("e2.raid_write_rate", write["rate"], "MB/s", writers=write["writers"], write_mb=write["write_mb"],
             member_mb_per_s=round(b["member_mb_per_s"], 4), member_iops=0, **at)
    ratio = write["rate"] / net["aggregate"] if net["aggregate"] else None
    m.record_known("e2.array_over_network", ratio, "ratio", target=round(b["target_ratio"], 4), **at)
    _record_cached_round(m, dict(first, spindles=ARRAY_BOUND), "e2.first_read_rate", "e2.first_read_per_client_rate")
    if net["aggregate"]:
        m.record("e2.cached_over_uncached", first["aggregate"] / net["aggregate"], "ratio", clients=first["clients"],
                 **at)
    m.check(net["failed"] == 0, f"{net['failed']} of {net['reads']} reads through the pass-through proxy failed")
    m.check(first["failed"] == 0, f"{first['failed']} of {first['reads']} first reads through the cache failed")
    m.check(ratio is not None and b["target_ratio"] / ARRAY_SLACK <= ratio <= b["target_ratio"] * ARRAY_SLACK,
            f"the array wrote at {write['rate']:.3g} MB/s against a network of {net['aggregate']:.3g} MB/s "
            f"({ratio if ratio is None else round(ratio, 3)}), not within x{ARRAY_SLACK:g} of the paper's "
            f"{b['target_ratio']:.3f}")
    m.check(b["cache_problem"] is None, b["cache_problem"])
    return m
