"""E1 keywords (seed 000): raw TCP, saturation, latency sweep. Thin over
`testbed.transfer`; metrics go into the run opened by TestbedLibrary."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from robot.api import logger  # noqa: E402
from robot.api.deco import keyword, library  # noqa: E402
from robot.libraries.BuiltIn import BuiltIn  # noqa: E402

from testbed.experiments import e1_transfer as transfer  # noqa: E402
from testbed.network.sampler import Sampler, active_mean  # noqa: E402


@library(scope="SUITE", auto_keywords=False)
class TransferLibrary:
    def __init__(self, scale="quick"):
        self.scale = scale
        self.tcp_rate = None
        self.htcondor_rate = None  # sustained rate of the saturation test
        self.sweep = {}  # (profile, rate factor, rtt) -> mean efficiency lost

    @property
    def tb(self):
        return BuiltIn().get_library_instance("TestbedLibrary")

    @property
    def exp(self):
        return transfer.TransferExperiment(self.tb.topo, self.tb.ssh, self.tb.pool)

    def params(self):
        return self.tb.experiment_parameters("e1")

    @keyword
    def measure_raw_tcp_throughput(self, seconds=10):
        """iperf3 from the first worker to the submit host: the ceiling HTCondor is judged against."""
        worker = self.exp.workers[0].name
        rate = self.exp.iperf(worker, self.exp.submit.name, seconds=int(seconds))
        self.tcp_rate = rate
        self.tb.record_metric("e1.tcp_rate", rate, "MB/s", sender=worker, profile=self.tb.profile_name)
        logger.console(f"  raw TCP {worker} -> submit: {rate:.1f} MB/s")
        return rate

    @keyword
    def run_saturation_test(self):
        """Every planned slot writes output at saturation_load x the TCP rate (W);
        the submit host's receive rate is sampled every second."""
        p = self.params()
        slots = sum(h.startds * h.slots_per_startd for h in self.exp.workers)
        n = min(slots, p["saturation_jobs"]) if p["saturation_jobs"] else slots
        length = p["saturation_compute_s"]
        size = transfer.size_for_rate(p["saturation_load"] * self.tcp_rate, n, length, p["max_output_mb"])
        expected = transfer.expected_rate(n, size, length)
        logger.console(f"  saturation: {n} jobs x {size} MB after {length} s -> W = {expected:.1f} MB/s")
        sampler = Sampler(self.tb.ssh, self.exp.submit, "net", "e1-saturation").start()
        try:
            cluster, ads, seconds = self.exp.run_batch(n, length, size, p["input_mb"], "saturation",
                                                       progress=self._progress(n))
        finally:
            series = sampler.stop()
        first, last = self.exp.output_window(ads)
        window = [row for row in series if row[0] >= 0]
        sustained = active_mean(window, 1)
        total_mb = sum(transfer.job_stats(a)["bytes_out"] for a in ads) / 1e6
        span = max(1.0, last - first)
        achieved = total_mb / span
        stats = [transfer.job_stats(a) for a in ads]
        eff = transfer.mean([s["execution_s"] / (s["execution_s"] + s["setup_s"] + s["teardown_s"])
                             for s in stats if s["execution_s"]])
        prof = self.tb.profile_name
        rec = self.tb.record_metric
        rec("e1.expected_rate", expected, "MB/s", jobs=n, size_mb=size, length_s=length, profile=prof)
        rec("e1.achieved_rate", achieved, "MB/s", jobs=n, size_mb=size, profile=prof)
        rec("e1.sustained_rx_rate", sustained, "MB/s", profile=prof)
        rec("e1.achieved_over_expected", achieved / expected, "ratio", profile=prof)
        rec("e1.htcondor_over_tcp", sustained / self.tcp_rate, "ratio", profile=prof)
        rec("e1.cpu_efficiency", eff, "ratio", profile=prof)
        for t, rx, _tx in series:
            rec("e1.submit_rx_rate", rx, "MB/s", t=round(t, 1), phase="saturation", profile=prof)
        self.htcondor_rate = sustained
        logger.console(f"  saturation: {total_mb:.0f} MB in {span:.0f} s of output transfers = {achieved:.1f} MB/s;"
                       f" sustained rx {sustained:.1f} MB/s = {sustained / self.tcp_rate:.2f} x raw TCP;"
                       f" CPU efficiency {eff:.3f}; batch {seconds:.0f} s")
        return sustained / self.tcp_rate

    def _progress(self, total):
        seen = {"last": -1}

        def show(done, _count):
            if done != seen["last"] and (done == total or done % max(1, total // 4) == 0):
                logger.console(f"    {done}/{total} jobs done")
                seen["last"] = done
        return show

    @keyword
    def latency_sweep_parameters(self):
        p = self.params()
        return p["rtts"], p["rate_factors"]

    @keyword
    def run_latency_point(self, rtt_ms, rate_factor):
        """n jobs at rate factor x W over an RTT; records efficiency lost per job and throughput."""
        p = self.params()
        n, length = p["sweep_jobs"], p["sweep_compute_s"]
        base_w = p["sweep_load"] * (self.htcondor_rate or self.tcp_rate)
        size = transfer.size_for_rate(float(rate_factor) * base_w, n, length, p["max_output_mb"])
        rate_label = f"{int(float(rate_factor))}W" if float(rate_factor) != 1 else "W"
        prof = self.tb.profile_name
        tag = f"lat-{prof}-{int(float(rtt_ms))}-{rate_label}"
        cluster, ads, seconds = self.exp.run_batch(n, length, size, p["input_mb"], tag)
        stats = [transfer.job_stats(a) for a in ads]
        xfers = self.exp.xfer_stats(cluster)
        lost_slot = transfer.mean([s["efficiency_lost"] for s in stats])
        lost = transfer.transfer_over_compute(stats, xfers)
        out_rates = [b / 1e6 / s for d, _j, b, s in xfers if b > 1e5 and s > 0]
        if not out_rates:
            out_rates = [s["bytes_out"] / 1e6 / s["transfer_out_s"] for s in stats if s["transfer_out_s"] > 0]
        per_job = transfer.mean(out_rates)
        rtt = float(rtt_ms)
        rec = self.tb.record_metric
        # the paper's metric from the transfer stats log (sub-second): transfer seconds / compute seconds
        rec("e1.efficiency_lost", lost, "ratio", rtt_ms=rtt, rate=rate_label, profile=prof)
        # the slot's whole non-compute time (job ad, 1 s resolution): includes starter set-up
        rec("e1.slot_time_not_computing", lost_slot, "ratio", rtt_ms=rtt, rate=rate_label, profile=prof)
        if per_job is not None:
            rec("e1.job_transfer_rate", per_job, "MB/s", rtt_ms=rtt, rate=rate_label, profile=prof)
        self.sweep[(prof, rate_label, rtt)] = lost
        logger.console(f"  {prof:>10} rtt {rtt:4g} ms {rate_label:>2} ({n} x {size} MB / {length} s): efficiency lost "
                       f"{lost:.3f} (slot not computing {lost_slot:.3f}), per-job transfer {per_job or 0:.1f} MB/s, batch {seconds:.0f} s")
        return lost

    @keyword
    def summarise_latency_sweep(self):
        """The paper's shape as ratios: loss at the largest RTT over loss at 0 ms, per
        profile and rate; and the default profile's loss over the tuned one at the largest RTT."""
        rtts = sorted({k[2] for k in self.sweep})
        if len(rtts) < 2:
            return
        lo, hi = rtts[0], rtts[-1]
        rec = self.tb.record_metric
        for prof, rate in sorted({(k[0], k[1]) for k in self.sweep}):
            a, b = self.sweep.get((prof, rate, lo)), self.sweep.get((prof, rate, hi))
            if a and b is not None:
                rec(f"e1.loss_{int(hi)}ms_over_{int(lo)}ms", b / a, "ratio", rate=rate, profile=prof)
        profs = sorted({k[0] for k in self.sweep})
        if "default" in profs and len(profs) > 1:
            for other in (p for p in profs if p != "default"):
                for rate in sorted({k[1] for k in self.sweep}):
                    d, t = self.sweep.get(("default", rate, hi)), self.sweep.get((other, rate, hi))
                    if d is not None and t:
                        rec("e1.tuning_gain_at_max_rtt", d / t, "ratio", rate=rate, rtt_ms=hi,
                            profile=other)
