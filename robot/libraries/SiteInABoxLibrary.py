"""E2 keywords (seed 001): reads through the DTN with and without the cache,
RAID6 writes, HTCondor-C routing. Thin over `testbed.experiments.e2.e2_site`; the points
(`Measure Point    uncached|raid-write|raid-write-unlimited|read-write|cached`) are
recorded and judged by e2_points, the other keywords return what they measure and the
suite records it into the run opened by TestbedLibrary."""

from robot.api import SkipExecution, logger
from robot.api.deco import keyword, library

from testbed.experiments.e2 import cache as e2_cache, e2_points, reads as e2_reads
from testbed.harness.points import Measured
from testbed.experiments.e2 import e2_site as siteinabox
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class SiteInABoxLibrary(ExperimentLibrary):
    """Keywords that measure and return what they measured; no state between tests
    (summaries read the run's recorded metrics)."""

    experiment = "e2"

    def __init__(self, scale="quick"):
        super().__init__(scale)
        self.seed = 1

    @property
    def box(self):
        return siteinabox.SiteInABox(self.tb.site.topo, self.tb.site.ssh, self.tb.site.storage, self.tb.site.pool,
                                     pgread=int(self.params().get("client_pgread", 0)))

    def _stripe(self):
        prof = self.tb.site.profile_in_force
        return int(prof.for_host(["dtn"], "md").get("stripe_cache_size", 256)) if prof else 256

    # --- the RAID members as spindles -------------------------------------------------
    def _limits(self):
        """The run's member limits: --set member_mb_per_s / member_iops, else the topology's."""
        p = self.params()
        return self.box.member_limits(p.get("member_mb_per_s"), p.get("member_iops"))

    def _disk_params(self, limits):
        return {"spindles": limits.label, "member_mb_per_s": limits.mb_per_s, "member_iops": limits.iops}

    @keyword
    def apply_the_member_disk_limits(self):
        """Give every RAID member the run's limits (libvirt iotune, read back) and write the
        manifest's `disks` section. Returns {spindles, member_mb_per_s, member_iops, cache}."""
        limits = self._limits()
        record = self.box.apply_member_limits(limits, echo=logger.console)
        if self.tb.site.run is not None:
            self.tb.site.run.update(disks=record)
        return dict(self._disk_params(limits), cache=record["cache"])

    @keyword
    def restore_the_topology_disk_limits(self):
        """Suite teardown: the topology's limits again (a --set may have changed them)."""
        self.box.apply_member_limits(None, echo=logger.console)

    @keyword
    def check_one_member_with_fio(self, index=0):
        """Read-only fio on one RAID member (sequential 1 MiB, random 4 KiB, O_DIRECT), beside
        the limits configured. Returns seq_mb_per_s, rand_iops, device, the limits, and the
        ratios measured over configured (None when a limit is off)."""
        limits = self._limits()
        got = self.box.member_fio(index, self.params()["fio_seconds"])
        seq_ratio = got["seq_mb_per_s"] / limits.mb_per_s if limits.mb_per_s else None
        iops_ratio = got["rand_iops"] / limits.iops if limits.iops else None
        logger.console(f"  member {got['device']}: {got['seq_mb_per_s']:.1f} MB/s sequential "
                       f"(limit {limits.mb_per_s:g}), {got['rand_iops']:.0f} random 4 KiB IOPS "
                       f"(limit {limits.iops})")
        for what, ratio in (("sequential MB/s", seq_ratio), ("random IOPS", iops_ratio)):
            if ratio is not None and ratio < 0.8:
                logger.warn(f"member {what} reached only {ratio:.2f} of its limit: the guest (TCG) "
                            f"is slower than the emulated disk, which then limits nothing")
        return dict(got, **self._disk_params(limits), seq_ratio=seq_ratio, iops_ratio=iops_ratio,
                    seq_within=siteinabox.within_limit(got["seq_mb_per_s"], limits.mb_per_s),
                    iops_within=siteinabox.within_limit(got["rand_iops"], limits.iops))

    # --- the points (`Measure Point    KIND    ...`, e2_points) ------------------------
    def point_uncached(self, n):
        """n clients through the pass-through proxy, under `default`."""
        self.tb.site.apply_profile_if_needed("default", echo=logger.console)
        return e2_points.uncached(self.read_origin_files_through_the_dtn(n, cached=False))

    def point_raid_write(self, profile):
        """The paper's parallel writers on the RAID6 under `profile` (its stripe cache)."""
        self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
        return e2_points.raid_write(self.write_to_raid6_in_parallel())

    def point_raid_write_unlimited(self, profile):
        """The same writers with every member's limits lifted (the host's disk as it is),
        then the run's limits back. Skipped when the run's members are unlimited already."""
        limits = self._limits()
        if limits.off:
            return Measured.skip("the run's RAID members have no limits: the rows above are the unlimited ones")
        if not int(self.params()["unlimited_rows"]):
            return Measured.skip("unlimited_rows is 0 in this run")
        self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
        self.box.apply_member_limits(siteinabox.UNLIMITED, echo=logger.console)
        try:
            return e2_points.raid_write(self.write_to_raid6_in_parallel(limits=siteinabox.UNLIMITED))
        finally:
            self.box.apply_member_limits(limits, echo=logger.console)

    def point_read_write(self, profile):
        """Readers and writers competing on the array under `profile`."""
        self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
        return e2_points.read_write(self.read_and_write_raid6_at_once())

    def point_cached(self, profile):
        """The largest client count through the caching proxy under `profile`: the cache
        emptied, first reads (misses), repeated reads (hits), both judged from the cache's
        own records; then the DTN reading the cached files from its own RAID."""
        self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
        n = self.params()["clients"][-1]
        self.box.clear_cache()
        first = self.read_origin_files_through_the_dtn(n, cached=True, label="first_read")
        first_problem = self.cache_problem(first["names"], "misses")
        repeat = self.read_origin_files_through_the_dtn(n, cached=True, label="repeat_read")
        repeat_problem = self.cache_problem(repeat["names"], "hits")
        uncached = self.tb.recorded_values("e2.uncached_rate", clients=n)
        local = self.box.local_read_rate(repeat["names"])
        logger.console(f"  DTN local read of the cached files: {local:.1f} MB/s")
        return e2_points.cached(first, repeat, first_problem, repeat_problem, uncached[-1] if uncached else None,
                                local)

    def point_array_bound(self, profile):
        """The largest client count through the emptied cache with the array slower than the
        network by the paper's ratio at this stripe cache (60 or 700 MB/s against 1300): the
        network measured through the pass-through proxy, the members' MB/s limit calibrated
        by two RAID writes until the array writes at that fraction of it, then the first
        reads; the run's limits back before the cache's records are judged."""
        p = self.params()
        if not int(p["array_bound_rows"]):
            return Measured.skip("array_bound_rows is 0 in this run")
        self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
        stripe = self._stripe()
        target_ratio = siteinabox.paper_array_over_network(stripe)
        if target_ratio is None:
            return Measured.skip(f"the paper gives no RAID write rate at stripe cache {stripe}")
        n, reads = p["clients"][-1], p["bound_reads_per_client"]
        box, run_limits = self.box, self._limits()
        network = self.read_origin_files_through_the_dtn(n, cached=False, label="network", reads_per_client=reads)
        target = network["aggregate"] * target_ratio
        box.clear_cache()
        write_mb = siteinabox.calibrating_write_mb(target, p["writers"], p["bound_write_seconds"])

        def write_at(limit):
            limits = siteinabox.bytes_limit(limit)
            box.apply_member_limits(limits, echo=logger.console)
            write = self.write_to_raid6_in_parallel(limits=limits, write_mb=write_mb)
            logger.console(f"  array at members of {limit:.3g} MB/s: {write['rate']:.3g} MB/s, target "
                           f"{target:.3g} ({target_ratio:.3f} of the network's {network['aggregate']:.3g})")
            return write
        guess = siteinabox.first_member_limit(target, box.dtn.disks.data_disks)
        try:
            limit = siteinabox.calibrated_limit(guess, write_at(guess)["rate"], target)
            write = write_at(limit)
            first = self.read_origin_files_through_the_dtn(n, cached=True, label="bound_first_read",
                                                           reads_per_client=reads)
        finally:
            box.apply_member_limits(run_limits, echo=logger.console)
        return e2_points.array_bound({"network": network, "write": write, "first": first, "profile": profile,
                                      "stripe_cache_size": stripe, "target_ratio": target_ratio,
                                      "member_mb_per_s": limit,
                                      "cache_problem": self.fill_problem(first["names"])})

    def fill_problem(self, names):
        """None when the caching proxy has a record of every file the first reads asked for,
        else which it lacks; logs the bytes its records count each way (hit, missed,
        bypassed: a proxy out of RAM for blocks passes reads through)."""
        records, still_open = self.box.wait_cache_closed(names)
        missing = sorted(set(names) - set(records))
        if missing:
            return f"the caching proxy has no .cinfo record of {', '.join(missing)}"
        hit, miss, bypass = e2_cache.total_bytes(records)
        logger.console(f"  cache records of {len(records)} files ({len(still_open)} still open): {hit / 1e6:.0f} MB "
                       f"hit, {miss / 1e6:.0f} MB missed, {bypass / 1e6:.0f} MB bypassed")
        return None

    @keyword
    def stripe_cache_speedup(self, spindles):
        """e2.raid_write_rate at stripe cache 32768 over 256 as this run recorded them with
        `spindles` (emulated|off), logged beside the paper's figure; None if a rate is missing."""
        slow = self.tb.recorded_values("e2.raid_write_rate", stripe_cache_size=256, spindles=spindles)
        fast = self.tb.recorded_values("e2.raid_write_rate", stripe_cache_size=32768, spindles=spindles)
        ratio = siteinabox.speedup(fast, slow)
        fig = siteinabox.paper_speedup()
        if ratio is not None:
            logger.console(f"  stripe cache 256 -> 32768, spindles {spindles}: {slow[-1]:.1f} -> {fast[-1]:.1f} MB/s "
                           f"= {ratio:.2f}x (paper: {fig['value'] if fig else '?'}x)")
        return ratio

    def read_origin_files_through_the_dtn(self, clients, cached=False, label=None, reads_per_client=None):
        """`clients` parallel xrdcp clients on the workers, each reading random origin files
        through the DTN: the pass-through proxy (no cache) or the caching proxy. Returns
        aggregate and per_client (MB/s), bytes, failed (reads), names (files read), the
        DTN's network and RAID series, phase, clients, profile, stripe_cache_size."""
        p = self.params()
        clients = int(clients)
        cached = str(cached).lower() in ("true", "1", "yes")
        port = siteinabox.read_port(cached)
        label = label or ("cached" if cached else "uncached")
        reads_per_client = int(reads_per_client or p["reads_per_client"])
        reads, names, net_series, md_series = self.box.sampled_read_round(port, clients, reads_per_client,
                                                                          seed=self.seed)
        s = e2_reads.summarise_reads(reads)
        logger.console(f"  {label:>11} {clients:2d} clients via :{port}: {s['aggregate']:.1f} MB/s aggregate, "
                       f"{s['per_client']:.1f} MB/s per client ({s['bytes'] / 1e6:.0f} MB, {s['failed']} failed)")
        return dict(s, reads=len(reads), port=port, names=names, net_series=net_series, md_series=md_series,
                    phase=f"{label}-{clients}", clients=clients, profile=self.tb.site.profile_name,
                    stripe_cache_size=self._stripe(), spindles=self._limits().label)

    @keyword
    def time_one_read_each_way(self, rtt_ms):
        """With the origin `rtt_ms` behind the WAN: one client reads the first origin file
        through the pass-through proxy with the run's read requests (`client_pgread`), again
        with the other kind, then (the cache emptied) through the caching proxy, a miss that
        fills it. Returns {rtt_ms, direct_s, direct_other_s, miss_s, bytes, pgread}."""
        if not int(self.params()["latency_rows"]):
            raise SkipExecution("latency_rows is 0 in this run")
        box = self.box
        self.tb.site.set_wan_latency(box.dtn.name, box.origin.name, float(rtt_ms), echo=logger.console)
        files = box.origin_files()
        name = sorted(files)[0]
        direct_s, size = box.timed_read(siteinabox.read_port(False), name, files)
        other_s, _size = box.timed_read(siteinabox.read_port(False), name, files, pgread=not box.pgread)
        box.clear_cache()
        miss_s, _size = box.timed_read(siteinabox.read_port(True), name, files)
        kinds = ("pgread", "read") if box.pgread else ("read", "pgread")
        logger.console(f"  origin at {float(rtt_ms):g} ms: {name} ({size / 1e6:.1f} MB) direct {direct_s:.2f} s "
                       f"({kinds[0]}; {other_s:.2f} s with {kinds[1]}), cache miss {miss_s:.2f} s")
        return {"rtt_ms": float(rtt_ms), "direct_s": direct_s, "direct_other_s": other_s, "miss_s": miss_s,
                "bytes": size, "pgread": box.pgread}

    @keyword
    def round_trips_per_mb(self, near, far):
        """{direct, direct-pgread or direct-read (the other request kind), cache-miss}: the
        round trips per MB each path waited for, from two `Time One Read Each Way` results
        (0 ms and the suite's RTT)."""
        rtt = far["rtt_ms"] - near["rtt_ms"]
        other = "direct-read" if far.get("pgread") else "direct-pgread"
        return {path: e2_reads.round_trips_per_mb(near[key], far[key], rtt, far["bytes"])
                for path, key in (("direct", "direct_s"), (other, "direct_other_s"), ("cache-miss", "miss_s"))}

    @keyword
    def set_origin_behind_the_wan(self, rtt_ms):
        """WAN latency between the DTN and the origin; returns {base, measured} RTT in ms."""
        box = self.box
        base = self.tb.site.lan_rtt(box.dtn.name, box.origin.name)
        measured = self.tb.site.set_wan_latency(box.dtn.name, box.origin.name, rtt_ms, echo=logger.console)
        return {"base": base, "measured": measured}

    def write_to_raid6_in_parallel(self, limits=None, write_mb=None):
        """The paper's 10 parallel dd writers (conv=fdatasync) on the RAID6, with the md
        stripe cache of the profile in force; RAID write rate sampled every second.
        Returns rate (MB/s), seconds, writers, write_mb, series, stripe_cache_size, profile,
        and the members' limits (spindles, member_mb_per_s, member_iops)."""
        limits = limits or self._limits()
        p = self.params()
        write_mb = int(write_mb or p["write_mb"])
        rate, wall, series = self.box.sampled_raid_write(p["writers"], write_mb)
        stripe = self._stripe()
        logger.console(f"  RAID6 {p['writers']} writers x {write_mb} MB, stripe_cache_size {stripe}, "
                       f"spindles {limits.label}: {rate:.3g} MB/s ({wall:.1f} s)")
        return {"rate": rate, "seconds": wall, "writers": p["writers"], "write_mb": write_mb,
                "series": series, "stripe_cache_size": stripe, "profile": self.tb.site.profile_name,
                **self._disk_params(limits)}

    def read_and_write_raid6_at_once(self):
        """The read/write competition on the array: direct readers alone, the paper's writers
        alone, then both at once, each phase as long (fio on md0's filesystem). Returns the
        rates alone and together (MB/s), read_ratio and write_ratio (together over alone),
        errors, readers, writers, and the profile, stripe cache and member limits in force."""
        p = self.params()
        box = self.box
        phases = box.raid_read_write(p["rw_readers"], p["writers"], p["write_mb"], p["rw_seconds"])
        c = siteinabox.competition(phases)
        limits = self._limits()
        stripe = self._stripe()

        def ratio(x):
            return f"{x:.2f}" if x is not None else "-"
        logger.console(f"  RAID6 at stripe_cache_size {stripe}, spindles {limits.label}, {p['rw_seconds']} s a phase: "
                       f"{p['rw_readers']} readers {c['read_alone']:.1f} MB/s alone, {c['read_both']:.1f} with "
                       f"{p['writers']} writers (x{ratio(c['read_ratio'])}); writers {c['write_alone']:.1f} MB/s "
                       f"alone, {c['write_both']:.1f} with the readers (x{ratio(c['write_ratio'])})")
        return dict(c, readers=p["rw_readers"], writers=p["writers"], seconds=p["rw_seconds"],
                    profile=self.tb.site.profile_name, stripe_cache_size=stripe, **self._disk_params(limits))

    def cache_problem(self, names, expect):
        """None when the proxy's own .cinfo records (xrdpfc_print -j) show what `expect` says,
        else what is wrong. The records are read once the proxy has closed every file, so
        the latest record is this round's (e2_cache). misses: every file read is now
        complete in the cache (fetched from the origin and written to RAID6). hits: every
        file's latest access took all its bytes from the cache (B_miss = 0)."""
        records, still_open = self.box.wait_cache_closed(names)
        missing = sorted(set(names) - set(records))
        if missing:
            return f"the caching proxy has no .cinfo record of {', '.join(missing)}"
        if still_open:
            return (f"the caching proxy still holds {', '.join(still_open)} open "
                    f"{e2_cache.CLOSE_TIMEOUT} s after the reads "
                    f"(the latest access record has no detach time)")
        verdicts = {n: e2_cache.cache_verdict(r) for n, r in records.items()}
        hit, miss, _bypass = e2_cache.total_bytes(records)
        logger.console(f"  cache records of {len(records)} files: complete {sum(v['complete'] for v in verdicts.values())},"
                       f" pure hits on the latest access {sum(v['pure_hit'] for v in verdicts.values())};"
                       f" {hit / 1e6:.0f} MB hit, {miss / 1e6:.0f} MB missed in all accesses")
        if expect == "misses":
            bad = [n for n, v in verdicts.items() if not v["complete"]]
            return f"after the first reads {', '.join(bad)} are not complete in the cache" if bad else None
        bad = [n for n, v in verdicts.items() if not v["pure_hit"]]
        return f"repeated reads of {', '.join(bad)} still fetched from the origin" if bad else None

    @keyword
    def route_a_job(self, dtn_can_run=True):
        """HTCondor-C from the submit host to the DTN's schedd; returns {seconds (submit to
        start), host it ran on, route}."""
        can = str(dtn_can_run).lower() in ("true", "1", "yes")
        seconds, host = self.box.route_job("dtn" if can else "flock", dtn_can_run=can)
        route = "dtn" if can else "flocked"
        logger.console(f"  HTCondor-C job ({route}) started on {host} {seconds:.1f} s after submit")
        return {"seconds": seconds, "host": host, "route": route}
