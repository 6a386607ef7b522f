"""E2 keywords (seed 001): reads through the DTN with and without the cache,
RAID6 writes, HTCondor-C routing. Thin over `testbed.siteinabox`; metrics go
into the run opened by TestbedLibrary."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from robot.api import logger  # noqa: E402
from robot.api.deco import keyword, library  # noqa: E402
from robot.libraries.BuiltIn import BuiltIn  # noqa: E402

from testbed.experiments import e2_site as siteinabox
from testbed.model import constants  # noqa: E402  # noqa: E402
from testbed.network.sampler import Sampler  # noqa: E402


@library(scope="SUITE", auto_keywords=False)
class SiteInABoxLibrary:
    def __init__(self, scale="quick"):
        self.scale = scale
        self.uncached = {}  # clients -> aggregate MB/s
        self.writes = {}  # stripe_cache_size -> MB/s
        self.seed = 1

    @property
    def tb(self):
        return BuiltIn().get_library_instance("TestbedLibrary")

    @property
    def box(self):
        return siteinabox.SiteInABox(self.tb.topo, self.tb.ssh, self.tb.storage, self.tb.pool)

    def params(self):
        return self.tb.experiment_parameters("e2")

    def _stripe(self):
        prof = self.tb.profile_in_force
        return int(prof.for_host(["dtn"], "md").get("stripe_cache_size", 256)) if prof else 256

    @keyword
    def e2_parameters(self):
        p = self.params()
        return p["clients"], p["origin_rtt_ms"]

    @keyword
    def read_origin_files_through_the_dtn(self, clients, cached=False, label=None):
        """`clients` parallel xrdcp clients on the workers, each reading random origin files
        through the DTN: the pass-through proxy (no cache) or the caching proxy."""
        p = self.params()
        clients = int(clients)
        cached = str(cached).lower() in ("true", "1", "yes")
        port = constants.XROOTD_CACHE_PORT if cached else constants.XROOTD_DIRECT_PORT
        label = label or ("cached" if cached else "uncached")
        box = self.box
        net = Sampler(self.tb.ssh, box.dtn, "net", "e2-net").start()
        md = Sampler(self.tb.ssh, box.dtn, "md", "e2-md").start()
        try:
            reads, names = box.read_round(port, clients, p["reads_per_client"], seed=self.seed)
        finally:
            net_series, md_series = net.stop(), md.stop()
        s = siteinabox.summarise_reads(reads)
        if s["failed"]:
            raise AssertionError(f"{s['failed']} of {len(reads)} reads through port {port} failed")
        prof, stripe = self.tb.profile_name, self._stripe()
        rec = self.tb.record_metric
        common = {"clients": clients, "profile": prof, "stripe_cache_size": stripe}
        if cached:
            rec(f"e2.{label}_rate", s["aggregate"], "MB/s", **common)
            rec(f"e2.{label}_per_client_rate", s["per_client"], "MB/s", **common)
        else:
            rec("e2.uncached_rate", s["aggregate"], "MB/s", clients=clients, profile=prof)
            rec("e2.uncached_per_client_rate", s["per_client"], "MB/s", clients=clients, profile=prof)
            self.uncached[clients] = s["aggregate"]
        for t, _rx, tx in net_series:
            rec("e2.dtn_tx_rate", tx, "MB/s", t=round(t, 1), phase=f"{label}-{clients}", **{"profile": prof})
        for t, rd, wr in md_series:
            if cached:
                rec("e2.raid_read_rate_during", rd, "MB/s", t=round(t, 1), phase=f"{label}-{clients}", profile=prof)
                rec("e2.raid_write_rate_during", wr, "MB/s", t=round(t, 1), phase=f"{label}-{clients}", profile=prof)
        logger.console(f"  {label:>11} {clients:2d} clients via :{port}: {s['aggregate']:.1f} MB/s aggregate, "
                       f"{s['per_client']:.1f} MB/s per client ({s['bytes'] / 1e6:.0f} MB)")
        return s["aggregate"], names

    @keyword
    def set_origin_behind_the_wan(self, rtt_ms):
        box = self.box
        return self.tb.set_wan_latency(box.dtn.name, box.origin.name, rtt_ms)

    @keyword
    def write_to_raid6_in_parallel(self):
        """The paper's 10 parallel dd writers (conv=fdatasync) on the RAID6, with the md
        stripe cache of the profile in force; RAID write rate sampled every second."""
        p = self.params()
        box = self.box
        md = Sampler(self.tb.ssh, box.dtn, "md", "e2-md-write").start()
        try:
            rate, wall = box.raid_write(p["writers"], p["write_mb"])
        finally:
            series = md.stop()
        stripe, prof = self._stripe(), self.tb.profile_name
        self.writes[stripe] = rate
        rec = self.tb.record_metric
        rec("e2.raid_write_rate", rate, "MB/s", stripe_cache_size=stripe, writers=p["writers"], profile=prof)
        for t, _rd, wr in series:
            rec("e2.raid_write_rate_over_time", wr, "MB/s", t=round(t, 1), stripe_cache_size=stripe, profile=prof)
        logger.console(f"  RAID6 {p['writers']} writers x {p['write_mb']} MB, stripe_cache_size {stripe}: "
                       f"{rate:.1f} MB/s ({wall:.1f} s)")
        return rate

    @keyword
    def clear_the_cache(self):
        self.box.clear_cache()

    @keyword
    def cache_should_report(self, names, expect):
        """Judge hits and misses from the proxy's own .cinfo records (xrdpfc_print -j).
        misses: the cache was empty before, and every file read is now complete in it
        (fetched from the origin and written to RAID6). hits: every file's latest access
        took all its bytes from the cache (B_miss = 0)."""
        records = self.box.cache_records(names)
        missing = sorted(set(names) - set(records))
        if missing:
            raise AssertionError(f"the caching proxy has no .cinfo record of {', '.join(missing)}")
        verdicts = {n: siteinabox.cache_verdict(r) for n, r in records.items()}
        hit = sum(siteinabox.cache_bytes(r)[0] for r in records.values())
        miss = sum(siteinabox.cache_bytes(r)[1] for r in records.values())
        logger.console(f"  cache records of {len(records)} files: complete {sum(v['complete'] for v in verdicts.values())},"
                       f" pure hits on the latest access {sum(v['pure_hit'] for v in verdicts.values())};"
                       f" {hit / 1e6:.0f} MB hit, {miss / 1e6:.0f} MB missed in all accesses")
        if expect == "misses":
            bad = [n for n, v in verdicts.items() if not v["complete"]]
            if bad:
                raise AssertionError(f"after the first reads {', '.join(bad)} are not complete in the cache")
        elif expect == "hits":
            bad = [n for n, v in verdicts.items() if not v["pure_hit"]]
            if bad:
                raise AssertionError(f"repeated reads of {', '.join(bad)} still fetched from the origin")
        else:
            raise AssertionError(f"expect must be misses or hits, not {expect!r}")
        return verdicts

    @keyword
    def cache_hit_rate_against_local_read(self, names, cached_rate):
        """Cache-hit read rate as a fraction of the DTN reading the same cached files locally."""
        local = self.box.local_read_rate(names)
        prof, stripe = self.tb.profile_name, self._stripe()
        self.tb.record_metric("e2.dtn_local_read_rate", local, "MB/s", stripe_cache_size=stripe, profile=prof)
        self.tb.record_metric("e2.hit_over_local_read", float(cached_rate) / local, "ratio",
                              stripe_cache_size=stripe, profile=prof)
        logger.console(f"  DTN local read of the cached files: {local:.1f} MB/s; hits reach "
                       f"{float(cached_rate) / local:.2f} of it")

    @keyword
    def compare_cached_with_uncached(self, clients, cached_rate):
        base = self.uncached.get(int(clients))
        if base:
            self.tb.record_metric("e2.cached_over_uncached", float(cached_rate) / base, "ratio",
                                  clients=int(clients), stripe_cache_size=self._stripe(), profile=self.tb.profile_name)

    @keyword
    def summarise_raid_writes(self):
        if 256 in self.writes and 32768 in self.writes and self.writes[256] > 0:
            self.tb.record_metric("e2.raid_write_speedup", self.writes[32768] / self.writes[256], "ratio")

    @keyword
    def route_a_job(self, dtn_can_run=True):
        """HTCondor-C from the submit host to the DTN's schedd; returns where it ran."""
        can = str(dtn_can_run).lower() in ("true", "1", "yes")
        seconds, host = self.box.route_job("dtn" if can else "flock", dtn_can_run=can)
        route = "dtn" if can else "flocked"
        self.tb.record_metric("e2.submit_to_start", seconds, "s", route=route)
        logger.console(f"  HTCondor-C job ({route}) started on {host} {seconds:.1f} s after submit")
        return host
