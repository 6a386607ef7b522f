"""E3 keywords (seed 002, FAX): federation, data, compute-site routing, matrix cells per
reader (ROOT with its TTreeCache, uproot), the learning-phase rows, the concurrency scan,
the connectivity test and the baselines. Thin over `testbed.experiments.e3.fax` and
`e3_site`; the points (`Measure Point    cell|learning|diagonal|concurrency`) are recorded
and judged by e3_points, the other keywords return what they measure, the suite records it."""
import statistics

from robot.api import logger
from robot.api.deco import keyword, library
from robot.api.exceptions import SkipExecution

from testbed.experiments.e3 import fax
from testbed.experiments.e3 import e3_capacity, e3_points, e3_site
from testbed.harness.points import Measured
from testbed.model import constants as c
from testbed.model.links import rtt_label
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class FaxLibrary(ExperimentLibrary):
    """No state between tests: the federation, the files and the routing live on the site."""

    experiment = "e3"

    def __init__(self):  # imported without arguments, as before
        super().__init__()
        self._digests = {}   # (url, every, fraction): what every job reading it must agree on

    @property
    def exp(self):
        return fax.FaxExperiment(self.tb.site.topo, self.tb.site.ssh, self.params())

    def _job_memory_mb(self, reader):
        """(peak RSS, private memory) of a job of `reader`: the largest this run's jobs of
        that reader reported, else the guesses."""
        rss = self.tb.recorded_values("e3.job_max_rss_mb", reader=reader) or [c.E3_JOB_RSS_MB_GUESS[reader]]
        private = self.tb.recorded_values("e3.job_private_mb", reader=reader) or [c.E3_JOB_PRIVATE_MB_GUESS[reader]]
        return max(rss), max(private)

    def _files(self):
        return e3_site.file_names(self.exp.p["files_per_site"])

    @keyword
    def build_the_federation_and_its_data(self):
        """Federation on the DTN, the sites' files written by ROOT and checksummed, the
        compute sites' users, addresses, routing tables and per-cell netem on the worker.
        Returns the number of files."""
        exp = self.exp
        exp.push_tool()
        exp.start_federation()
        data = exp.write_data()
        exp.prepare_worker()
        for (site, name), d in sorted(data.items()):
            self.tb.record_metric("e3.file_bytes", d["bytes"], "B", site=site, file=name, sha256=d["sha256"],
                                  baskets_per_branch=d.get("baskets_per_branch"),
                                  basket_events=d.get("basket_events"), clusters=d.get("clusters"))
        first = next(iter(data.values()), {})
        logger.console(f"  E3: {len(data)} files on {len(exp.sites)} storage sites, matrix {exp.matrix}; "
                       f"{first.get('baskets_per_branch')} baskets of {first.get('basket_events')} events per "
                       f"branch, {first.get('clusters')} cluster(s)")
        return len(data)

    @keyword
    def remove_the_federation_and_routing(self):
        return self.exp.restore()

    @keyword
    def measure_every_cell_rtt(self):
        """[{compute, storage, configured, measured}] by TCP connect from each site's address,
        then one row per compute site with storage `redirector`: its connect to the
        redirector's port (configured: the RTT to the redirector's site)."""
        exp = self.exp
        got, redirect = exp.measure_cell_rtts()
        return [{"compute": x, "storage": y, "configured": rtt_label(exp.matrix[x][y]), "measured": got[(x, y)]}
                for x, y, _ in e3_site.cells(exp.matrix)] + \
               [{"compute": x, "storage": "redirector", "configured": rtt_label(exp.redirect_rtt(x)),
                 "measured": redirect[x]} for x in exp.sites]

    # --- the points (`Measure Point    KIND    ...`, e3_points) ------------------------
    def point_cell(self, compute, storage, cache, reader):
        """One matrix cell: a job at `compute` reading `storage`'s file with `reader` and a
        `cache` MB read-ahead cache; skipped beyond the scale's sites or reader rows."""
        p = self.params()
        if max(e3_points.site_number(compute), e3_points.site_number(storage)) > p["sites"]:
            return Measured.skip(f"site beyond the {p['sites']} sites of {self.scale} scale")
        self.skip_unless_the_reader_reads_this_row(reader, compute)
        return e3_points.cell(self.read_cell(compute, storage, cache, reader))

    def point_learning(self, learn, where, cache):
        """ROOT with `learn` entries of learning in the `where` (local|remote) cell."""
        self.tb.skip_unless_in_this_run(self.params(), readers="root")
        return e3_points.cell(self.read_learning_point(learn, where, cache))

    def point_diagonal(self, cache, reader):
        """Off-diagonal over diagonal events/s per RTT from this run's `reader` cells."""
        records = self.tb.site.run.metrics()
        events = fax.expected_events(self.params(), every=int(self.params()["read_every"]))
        return e3_points.diagonal(fax.off_over_diag(records, cache, reader), cache, reader,
                                  e3_points.round_trip_share(records, cache, reader, events))

    def point_concurrency(self, jobs):
        """`jobs` concurrent jobs of the run's first reader in the concurrency cell."""
        return e3_points.concurrency(self.read_concurrently(jobs), jobs)

    def skip_unless_the_reader_reads_this_row(self, reader, compute):
        """Readers after the run's first read only the first `extra_reader_rows` rows."""
        exp = self.exp
        if not fax.reader_reads_row(exp.p, reader, compute, exp.sites):
            raise SkipExecution(f"{reader} reads the rows of compute sites "
                                f"{', '.join(exp.sites[:int(exp.p['extra_reader_rows'])])} only at this scale "
                                f"(extra_reader_rows = {exp.p['extra_reader_rows']})")

    def read_cell(self, compute, storage, cache_mb, reader, learn_entries=c.E3_ROOT_LEARN_ENTRIES):
        """One analysis job at `compute` reading a file of `storage` through the redirector
        with `reader`; returns what the suite records for the cell."""
        exp = self.exp
        where = f"{fax.EXPERIMENT.suite}, row {compute}<-{storage} {cache_mb} MB {reader}"
        cache = fax.cache_mb_of(cache_mb, where)
        reader = fax.reader_of(reader, where)
        url = exp.redirector_url(storage, self._files()[0])
        reports = self._read(compute, [url], cache, "cell", reader, learn_entries=int(learn_entries))
        r = reports[0]
        logger.console(f"  {compute}<-{storage} {reader} {cache:g} MB learn {learn_entries}: "
                       f"{r['events_per_s']:.0f} ev/s, start-up {r['startup_s']:.1f} s, "
                       f"{r.get('read_calls')} read calls, {r.get('cache_fills')} cache fills")
        return self._row(exp, compute, storage, cache, reader, int(learn_entries), r)

    def read_learning_point(self, learn_entries, where, cache_mb):
        """The learning rows: ROOT with `learn_entries` entries of learning at the cell with
        the largest RTT (`remote`) or at its compute site's own file (`local`)."""
        remote, local = e3_site.far_cell(self.exp.matrix)
        compute, storage = remote if where == "remote" else local
        return self.read_cell(compute, storage, cache_mb, "root", learn_entries)

    def _row(self, exp, compute, storage, cache, reader, learn_entries, r):
        """What the suite records for one job; `at` holds the parameters of its records."""
        at = {"storage": storage, "compute": compute, "rtt_ms": rtt_label(exp.matrix[compute][storage]),
              "redirect_rtt_ms": rtt_label(exp.redirect_rtt(compute)), "cache_mb": cache, "reader": reader}
        if reader == "root":
            at["learn_entries"] = learn_entries
        return {**at, "at": at, "learn_entries": at.get("learn_entries"),
                "events_per_s": r["events_per_s"], "cpu_eff": r["cpu_eff"], "mb_per_s": r["mb_per_s"],
                "startup_s": r["startup_s"], "read_calls": r.get("read_calls"), "cache_fills": r.get("cache_fills"),
                "bytes_read_mb": (r["bytes_read"] / 1e6) if r.get("bytes_read") is not None else None,
                "uid": r["uid"]}

    def read_concurrently(self, jobs):
        """`jobs` concurrent jobs of the run's first reader in the concurrency cell (10 MB
        cache); returns the per-job events/s and the cell. Skipped, saying why, when the
        jobs' memory (the largest peak RSS a job of this reader reported) exceeds what the
        worker has available."""
        exp = self.exp
        reader = fax.main_reader(exp.p)
        rss, private = self._job_memory_mb(reader)
        misfit = e3_capacity.concurrency_misfit(jobs, rss, exp.worker_memory_available_mb(), exp.worker.name, private)
        if misfit:
            raise SkipExecution(misfit)
        x, y = e3_site.concurrency_cell(exp.matrix, exp.p["concurrency_rtt"])
        files = self._files()
        urls = [exp.redirector_url(y, files[i % len(files)]) for i in range(int(jobs))]
        reports, host_wait = exp.worker_vcpu_wait(lambda: self._read(x, urls, 10, f"conc{jobs}", reader))
        return {"compute": x, "storage": y, "rtt_ms": rtt_label(exp.matrix[x][y]), "reader": reader,
                "redirect_rtt_ms": rtt_label(exp.redirect_rtt(x)), "per_job": [r["events_per_s"] for r in reports],
                "mb_per_s": [r["mb_per_s"] for r in reports], "cpu_wait": [r.get("cpu_wait") for r in reports],
                "host_cpu_wait": host_wait}

    @keyword
    def connectivity_test(self, compute):
        """One job per file of every storage site, every n-th event (the slides' 10%),
        30 MB cache, the run's first reader."""
        exp = self.exp
        reader, every = fax.main_reader(exp.p), int(exp.p["connectivity_every"])
        urls = [exp.redirector_url(y, f) for y in exp.sites for f in self._files()]
        # one job per file, as many at a time as the worker's memory holds (not a load test)
        rss, private = self._job_memory_mb(reader)
        batch = e3_capacity.jobs_that_fit(rss, exp.worker_memory_available_mb(), private)
        reports = []
        for i in range(0, len(urls), batch):
            reports += exp.run_jobs(compute, urls[i:i + batch], 30, label="conn", reader=reader, every=every)
        self._check(reports, fax.expected_events(exp.p, every=every))
        redirect = rtt_label(exp.redirect_rtt(compute))
        return [{"storage": r["url"].split("/")[-2], "mb_per_s": r["mb_per_s"], "reader": reader,
                 "redirect_rtt_ms": redirect} for r in reports]

    @keyword
    def read_baselines(self):
        """One job reading from the worker's disk (page cache dropped) and one from memory."""
        exp = self.exp
        reader = fax.main_reader(exp.p)
        site = exp.sites[0]
        disk, shm = exp.stage_local(site, self._files()[0])
        out = {}
        for kind, path in (("disk", disk), ("memory", shm)):
            r = self._read(site, [path], 10, kind, reader)
            out[kind] = r[0]
        return out

    def _read(self, compute, urls, cache_mb, label, reader, **kw):
        """The matrix, learning, concurrency and baseline jobs: every `read_every`-th event
        of each file, each job checked for that many events."""
        every = int(self.exp.p["read_every"])
        reports = self.exp.run_jobs(compute, urls, cache_mb, label=label, reader=reader, every=every, **kw)
        self._check(reports, fax.expected_events(self.exp.p, every=every))
        return reports

    def _check(self, reports, events):
        problems = fax.check_reports({i: r for i, r in enumerate(reports)}, events)
        if problems:
            raise AssertionError("; ".join(problems[:4]))
        # each site has its own data000.root: jobs (of either reader) agree per URL
        bad = fax.digest_disagreements(reports, self._digests)
        if bad:
            raise AssertionError("jobs disagree on the content of " + "; ".join(bad[:3]))
        for r in reports:
            if r.get("max_rss_mb"):
                self.tb.record_metric("e3.job_max_rss_mb", r["max_rss_mb"], "MB", label=r["label"],
                                      reader=r.get("reader", "uproot"))
            if r.get("private_mb"):
                self.tb.record_metric("e3.job_private_mb", r["private_mb"], "MB", label=r["label"],
                                      reader=r.get("reader", "uproot"))

    @keyword
    def spread_of(self, values):
        return fax.spread([float(v) for v in values])

    @keyword
    def mean_of(self, values):
        return statistics.mean([float(v) for v in values])
