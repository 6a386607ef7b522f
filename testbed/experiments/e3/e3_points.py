"""E3's points (seed 002, FAX), measured into the records and checks `Measure Point` keeps
and judges: one matrix cell or learning row (one analysis job, every number of it with its
cell, reader, cache size and learning phase), a reader's diagonal versus RTT from this run's
cells, and the concurrency scan's per-job rates. FaxLibrary's point_* methods act on the
site; these functions turn what they returned into records and checks."""
import math
import statistics

from testbed.experiments.e3.fax import is_matrix_point
from testbed.harness.points import Measured
from testbed.model import constants as c
from testbed.model.links import rtt_label

DIAGONAL_NOISE = 1.25   # the farthest cells may read at most this x the diagonal's events/s (TCG noise)


def site_number(name):
    """a -> 1, b -> 2: a site's place among the scale's sites."""
    return ord(name) - ord("a") + 1


def cell(r):
    """One job of a matrix cell or learning row (FaxLibrary._row's figures)."""
    m, at = Measured(), r["at"]
    m.record("e3.events_per_s", r["events_per_s"], "ev/s", **at)
    m.record("e3.cpu_eff", r["cpu_eff"], "ratio", **at)
    m.record("e3.mb_per_s", r["mb_per_s"], "MB/s", **at)
    m.record("e3.startup_s", r["startup_s"], "s", **at)
    m.record_known("e3.read_calls", r["read_calls"], "calls", **at)
    m.record_known("e3.cache_fills", r["cache_fills"], "fills", **at)
    m.record_known("e3.bytes_read_mb", r["bytes_read_mb"], "MB", **at)
    m.check(r["events_per_s"] > 0, f"no events read in cell {at['compute']}<-{at['storage']}")
    return m


def diagonal(ratios, cache, reader, rtt_share=None):
    """{rtt: off-diagonal over diagonal events/s} of one reader and cache size. The farthest
    cell is judged against the noise band unless `rtt_share` (round_trip_share) says its
    reads could spend no more than the band in round trips: then one job per cell cannot tell
    the RTT's penalty from TCG's noise, and the ratio is kept with a line saying so."""
    if not ratios:
        return Measured.skip(f"needs diagonal and off-diagonal {reader} cells at {cache} MB in this run")
    m = Measured()
    for rtt, ratio in ratios.items():
        m.record("e3.off_over_diag", ratio, "ratio", rtt_ms=rtt, cache_mb=cache, reader=reader)
    far = max(ratios)
    share = (rtt_share or {}).get(far)
    if share is not None and share < DIAGONAL_NOISE - 1:
        return m.say(f"  {reader} {cache} MB: the {far} ms cells' reads cost at most {share:.0%} of the diagonal's "
                     f"event loop in round trips, inside the {DIAGONAL_NOISE - 1:.0%} noise band: ratio "
                     f"{ratios[far]:.2f} kept, not judged")
    m.check(ratios[far] <= DIAGONAL_NOISE, f"the {far} ms {reader} cells read {ratios[far]} x the diagonal's "
                                           f"events/s: the diagonal is slower beyond noise")
    return m


def round_trip_share(records, cache_mb, reader, events):
    """{rtt: the most the off-diagonal cells' reads can spend in round trips, over the
    diagonal's event loop (`events` / its mean events/s)}, for a reader that counts its read
    calls and bytes (ROOT): each call pays its request's RTT and the RTTs of TCP's slow start
    from the initial window (Linux restarts it after idle, as between cache fills)."""
    diag, calls, mb = [], {}, {}
    for r in records:
        pr = r.get("params", {})
        if not is_matrix_point(r, cache_mb, reader):
            continue
        if r["name"] == "e3.events_per_s" and pr["storage"] == pr["compute"]:
            diag.append(r["value"])
        elif r["name"] in ("e3.read_calls", "e3.bytes_read_mb") and pr["storage"] != pr["compute"]:
            (calls if r["name"] == "e3.read_calls" else mb).setdefault(float(pr["rtt_ms"]), []).append(r["value"])
    if not diag or min(diag) <= 0:
        return {}
    loop = events / statistics.mean(diag)
    out = {}
    for rtt in sorted(set(calls) & set(mb)):
        n = statistics.mean(calls[rtt])
        per_call = statistics.mean(mb[rtt]) * 1e6 / max(n, 1)
        windows = math.ceil(math.log2(1 + per_call / c.TCP_INITIAL_WINDOW_BYTES))
        out[rtt_label(rtt)] = n * (1 + windows) * rtt / 1000 / loop
    return out


def cpu_wait(guest, host):
    """The share of a job's loop lost waiting for a CPU: in the guest (`guest`, its thread
    runnable for a guest CPU) and, for the rest, on the host (`host`, the worker's vCPU
    thread off the host's cores, which the guest counts as running); None without the
    guest's share, the guest's alone without the host's."""
    if guest is None:
        return None
    return guest + (host or 0.0) * (1 - guest)


def concurrency(r, jobs):
    """`jobs` concurrent jobs in the concurrency cell: one record per job, its events/s and
    the share of its loop it waited for a CPU (`cpu_wait`; none where the guest's kernel
    keeps no schedstat), and the point's wait of the worker's vCPUs for the host's cores."""
    m = Measured()
    at = {"jobs": jobs, "rtt_ms": r["rtt_ms"], "reader": r["reader"], "redirect_rtt_ms": r["redirect_rtt_ms"]}
    host = r.get("host_cpu_wait")
    for v in r["per_job"]:
        m.record("e3.concurrency_events_per_s", v, "ev/s", **at)
    for w in r.get("cpu_wait") or []:
        m.record_known("e3.concurrency_cpu_wait", cpu_wait(w, host), "ratio", **at)
    m.record_known("e3.concurrency_host_cpu_wait", host, "ratio", **at)
    m.check(len(r["per_job"]) == int(jobs), f"{len(r['per_job'])} of {jobs} jobs reported")
    return m
