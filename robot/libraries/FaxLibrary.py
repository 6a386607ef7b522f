"""E3 keywords (seed 002, FAX): federation, data, compute-site routing, matrix cells, the
concurrency scan, the connectivity test and the baselines. Thin over
`testbed.experiments.e3_fax` and `e3_site`; they return what they measure, the suite
records it."""
import statistics

from robot.api import logger
from robot.api.deco import keyword, library
from robot.api.exceptions import SkipExecution

from testbed.experiments import e3_fax as fax
from testbed.experiments import e3_site
from testbed.model import constants as c
from testbed.model.links import rtt_label
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class FaxLibrary(ExperimentLibrary):
    """No state between tests: the federation, the files and the routing live on the site."""

    experiment = "e3"

    def __init__(self):  # imported without arguments, as before
        super().__init__()

    @property
    def exp(self):
        return fax.FaxExperiment(self.tb.topo, self.tb.ssh, self.params())

    def _job_rss_mb(self):
        """An analysis job's peak RSS: the largest any job of this run reported, else a guess."""
        return max(self.tb.recorded_values("e3.job_max_rss_mb") or [c.E3_JOB_RSS_MB_GUESS])

    def _files(self):
        return e3_site.file_names(self.exp.p["files_per_site"])

    @keyword
    def build_the_federation_and_its_data(self):
        """Federation on the DTN, the sites' files written and checksummed, the compute
        sites' users, addresses, routing tables and per-cell netem on the worker.
        Returns {(site, file): {bytes, sha256, ...}}."""
        exp = self.exp
        exp.push_tool()
        exp.start_federation()
        data = exp.write_data()
        exp.prepare_worker()
        for (site, name), d in sorted(data.items()):
            self.tb.record_metric("e3.file_bytes", d["bytes"], "B", site=site, file=name, sha256=d["sha256"])
        logger.console(f"  E3: {len(data)} files on {len(exp.sites)} storage sites, matrix {exp.matrix}")
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

    @keyword
    def read_cell(self, compute, storage, cache_mb):
        """One analysis job at `compute` reading a file of `storage` through the redirector."""
        exp = self.exp
        url = exp.redirector_url(storage, self._files()[0])
        reports = exp.run_jobs(compute, [url], cache_mb, label="cell")
        self._check(reports, exp.p["events"])
        r = reports[0]
        return {"compute": compute, "storage": storage, "rtt_ms": rtt_label(exp.matrix[compute][storage]),
                "redirect_rtt_ms": rtt_label(exp.redirect_rtt(compute)), "cache_mb": float(cache_mb), "events_per_s": r["events_per_s"], "cpu_eff": r["cpu_eff"],
                "mb_per_s": r["mb_per_s"], "uid": r["uid"]}

    @keyword
    def read_concurrently(self, jobs):
        """`jobs` concurrent jobs in the concurrency cell (10 MB cache); returns the per-job
        events/s and the cell. Skipped, saying why, when the jobs' memory (the largest peak
        RSS a job of this run reported) exceeds what the worker has available."""
        exp = self.exp
        rss = self._job_rss_mb()
        misfit = fax.concurrency_misfit(jobs, rss, exp.worker_memory_available_mb(), exp.worker.name)
        if misfit:
            raise SkipExecution(misfit)
        x, y = e3_site.concurrency_cell(exp.matrix, exp.p["concurrency_rtt"])
        files = self._files()
        urls = [exp.redirector_url(y, files[i % len(files)]) for i in range(int(jobs))]
        reports = exp.run_jobs(x, urls, 10, label=f"conc{jobs}")
        self._check(reports, exp.p["events"])
        return {"compute": x, "storage": y, "rtt_ms": rtt_label(exp.matrix[x][y]),
                "redirect_rtt_ms": rtt_label(exp.redirect_rtt(x)), "per_job": [r["events_per_s"] for r in reports],
                "mb_per_s": [r["mb_per_s"] for r in reports]}

    @keyword
    def connectivity_test(self, compute):
        """One job per file of every storage site, 10% of the events, 30 MB cache."""
        exp = self.exp
        urls = [exp.redirector_url(y, f) for y in exp.sites for f in self._files()]
        # one job per file, as many at a time as the worker's memory holds (not a load test)
        rss = self._job_rss_mb()
        batch = fax.jobs_that_fit(rss, exp.worker_memory_available_mb())
        reports = []
        for i in range(0, len(urls), batch):
            reports += exp.run_jobs(compute, urls[i:i + batch], 30, fraction=exp.p["connectivity_fraction"],
                                    label="conn")
        want = max(1, int(round(exp.p["events"] * exp.p["connectivity_fraction"])))
        self._check(reports, want)
        redirect = rtt_label(exp.redirect_rtt(compute))
        return [{"storage": r["url"].split("/")[-2], "mb_per_s": r["mb_per_s"], "redirect_rtt_ms": redirect}
                for r in reports]

    @keyword
    def read_baselines(self):
        """One job reading from the worker's disk (page cache dropped) and one from memory."""
        exp = self.exp
        site = exp.sites[0]
        disk, shm = exp.stage_local(site, self._files()[0])
        out = {}
        for kind, path in (("disk", disk), ("memory", shm)):
            r = exp.run_jobs(site, [path], 10, label=kind)
            self._check(r, exp.p["events"])
            out[kind] = r[0]
        return out

    def _check(self, reports, events):
        problems = fax.check_reports({i: r for i, r in enumerate(reports)}, events)
        if problems:
            raise AssertionError("; ".join(problems[:4]))
        # each site has its own data000.root: jobs agree per URL, not per file name
        digests = {}
        for r in reports:
            if digests.setdefault(r["url"], r["digest"]) != r["digest"]:
                raise AssertionError(f"jobs reading {r['url']} disagree on its content")
        for r in reports:
            if r.get("max_rss_mb"):
                self.tb.record_metric("e3.job_max_rss_mb", r["max_rss_mb"], "MB", label=r["label"])

    @keyword
    def off_diagonal_over_diagonal(self, cache_mb):
        return fax.off_over_diag(self.tb.run.metrics(), cache_mb)

    @keyword
    def spread_of(self, values):
        return fax.spread([float(v) for v in values])

    @keyword
    def mean_of(self, values):
        return statistics.mean([float(v) for v in values])
