"""E1 keywords (seed 000): raw TCP, saturation, the latency sweep's point (`Measure Point
latency`). Thin over `testbed.experiments.e1.transfer`; the set-up's keywords return what
they measure and the suite records it into the run opened by TestbedLibrary."""

from robot.api import logger
from robot.api.deco import keyword, library

from testbed.experiments.e1 import jobs as e1_jobs, e1_points, e1_scale, transfer
from testbed.harness.points import Measured
from testbed.model import scaled_profiles
from testbed.model.tables import render
from testbed.services.condor import job_stats
from testbed.results.intervals import mean
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class TransferLibrary(ExperimentLibrary):
    """Keywords that measure and return what they measured; the suite records and asserts.
    No state is kept between tests: the suite set-up passes the raw TCP and saturation
    rates on as suite variables, the summary reads the run's recorded metrics."""

    experiment, experiment_class = "e1", transfer.TransferExperiment

    @keyword
    def measure_raw_tcp_throughput(self, seconds=10):
        """iperf3 from the first worker to the submit host: the ceiling HTCondor is judged
        against. Returns {rate (MB/s), sender, profile}."""
        worker = self.exp.workers[0].name
        rate = self.exp.iperf(worker, self.exp.submit.name, seconds=int(seconds))
        logger.console(f"  raw TCP {worker} -> submit: {rate:.1f} MB/s")
        return {"rate": rate, "sender": worker, "profile": self.tb.site.profile_name}

    @keyword
    def run_saturation_test(self, tcp_rate):
        """Every planned slot (at most saturation_jobs) writes output at saturation_load x the
        TCP rate (W); the submit host's receive rate is sampled every second. Returns the
        batch's figures: jobs, completed, bad_outputs (jobs whose output arrived with the
        wrong size), expected/achieved/sustained rates, fraction of raw TCP, CPU efficiency,
        the receive-rate series."""
        p = self.params()
        tcp_rate = float(tcp_rate)
        slots = sum(h.startds * h.slots_per_startd for h in self.exp.workers)
        n = min(slots, p["saturation_jobs"]) if p["saturation_jobs"] else slots
        length = p["saturation_compute_s"]
        size = e1_jobs.size_for_rate(p["saturation_load"] * tcp_rate, n, length, p["max_output_mb"])
        expected = e1_jobs.expected_rate(n, size, length)
        logger.console(f"  saturation: {n} jobs x {size} MB after {length} s -> W = {expected:.1f} MB/s")
        batch, series, first, last, sustained = self.exp.sampled_batch(n, length, size, p["input_mb"],
                                                                       progress=self._progress(n))
        ads = batch.ads
        total_mb = sum(job_stats(a)["bytes_out"] for a in ads) / 1e6
        span = max(1.0, last - first)
        achieved = total_mb / span
        stats = [job_stats(a) for a in ads]
        eff = mean([s["execution_s"] / (s["execution_s"] + s["setup_s"] + s["teardown_s"])
                             for s in stats if s["execution_s"]])
        logger.console(f"  saturation: {total_mb:.0f} MB in {span:.0f} s of output transfers = {achieved:.1f} MB/s;"
                       f" sustained rx {sustained:.1f} MB/s = {sustained / tcp_rate:.2f} x raw TCP;"
                       f" CPU efficiency {eff:.3f}; batch {batch.seconds:.0f} s")
        return {"jobs": n, "completed": len(ads), "bad_outputs": transfer.bad_outputs(n, size, batch.sizes),
                "size_mb": size, "length_s": length, "expected": expected, "achieved": achieved,
                "sustained": sustained, "fraction": sustained / tcp_rate, "cpu_efficiency": eff,
                "achieved_over_expected": achieved / expected,
                "series": series, "profile": self.tb.site.profile_name}

    def _progress(self, total):
        seen = {"last": -1}

        def show(done, _count):
            if done != seen["last"] and (done == total or done % max(1, total // 4) == 0):
                logger.console(f"    {done}/{total} jobs done")
                seen["last"] = done
        return show

    @keyword
    def profile_for_the_ceilings(self, names):
        """The profile the raw TCP and saturation tests run under: the first one given, or
        the base of a scaled one (its k comes from the saturation test)."""
        return scaled_profiles.base_name(names[0]) or names[0]

    @keyword
    def scale_the_paper_profiles_to_this_site(self, saturation):
        """The scale model (docs/scaling.md): k = HTCondor's achieved rate in the saturation
        test (trial 1's in a repeated run, so every trial scales alike) / the paper's 555
        MB/s; each compared `<column>-scaled` profile made from its Table 4 column and k, the
        sweep's W as k x the paper's. Puts k, the rates, every scaled value and the scaled
        profiles' contents into the run's manifest (`scale_model`, `profile_contents`) and
        prints R = concurrency x window / RTT over demand for the paper and this site.
        Returns {k, achieved, paper, profiles}."""
        p = self.params()
        achieved, source = e1_scale.rate_to_size_from(p.get("scale_rate_mb_s"),
                                                      self.tb.site.first_trial_value("e1.achieved_rate"),
                                                      saturation["achieved"], "scale_rate_mb_s")
        paper = e1_scale.paper_saturation_rate()
        k = e1_scale.scale_factor(achieved, paper)
        names = self.tb.profiles_to_compare()
        made = e1_scale.scaled_columns(names, k)
        for prof in made.values():
            self.tb.site.add_profile(prof)
        entry = e1_scale.manifest_entry(k, achieved, paper, made, p["rate_factors"], source)
        contents = dict(self.tb.site.run.manifest().get("profile_contents") or {})
        contents.update({name: prof.as_dict() for name, prof in made.items()})
        self.tb.site.run.update(scale_model=entry, profile_contents=contents)
        for line in e1_scale.describe(entry):
            logger.console(line)
        named = {n: self.tb.site.load_profile(n) for n in names}
        rows = e1_scale.plan_rows(named, p["rtts"], p["rate_factors"], p["sweep_jobs"], p["sweep_compute_s"],
                                  p["max_output_mb"], p["sweep_load"], self._sweep_rate(saturation["sustained"]))
        if rows:
            logger.console("  R = concurrency x window / RTT / demand at the configured RTTs (above 1: the "
                           "windows carry the demand):\n" + render(e1_scale.RATIO_HEADERS, rows))
        return {"k": k, "achieved": achieved, "paper": paper, "profiles": list(made)}

    def _sweep_rate(self, htcondor_rate):
        """HTCondor's saturation rate the unscaled points size from: `--set sizing_rate_mb_s`,
        else trial 1's in every trial."""
        return e1_scale.rate_to_size_from(self.params().get("sizing_rate_mb_s"),
                                          self.tb.site.first_trial_value("e1.sustained_rx_rate"),
                                          htcondor_rate, "sizing_rate_mb_s")[0]

    def point_latency(self, profile, rtt, factor):
        """`Measure Point    latency    profile=...    rtt=...    factor=...`: one point of
        Figure 2 under `profile` with `rtt` ms between the submit host and the workers, sized
        from this run's recorded saturation rate (e1_points.latency)."""
        tb = self.tb
        tb.site.apply_profile_if_needed(profile, echo=logger.console)
        measured_rtt = tb.site.set_wan_latency_if_needed("submit", "worker", rtt, echo=logger.console)
        rates = tb.recorded_values("e1.sustained_rx_rate")
        if not rates:
            return Measured().check(False, "no saturation rate recorded in this run (the suite set-up's "
                                           "saturation test did not finish)")
        return e1_points.latency(self.run_latency_point(rtt, factor, rates[-1], measured_rtt_ms=measured_rtt))

    def run_latency_point(self, rtt_ms, rate_factor, htcondor_rate, measured_rtt_ms=None):
        """sweep_jobs jobs at rate factor x W over the RTT in force: W = sweep_load x HTCondor's
        saturation rate, or for a scaled profile k x the paper's W. Returns jobs, completed,
        bad_outputs, efficiency_lost (the paper's metric from XferStatsLog),
        slot_setup_teardown_over_execution (job ad), job_transfer_rate, demand (MB/s as sized),
        window_over_demand (R at the measured RTT, else the configured; None at 0 ms without
        a measurement) and the record parameters (rtt_ms, rate, profile)."""
        p = self.params()
        n, length = p["sweep_jobs"], p["sweep_compute_s"]
        in_force = self.tb.site.profile_in_force or self.tb.site.load_profile("default")
        size = e1_scale.point_size(in_force, rate_factor, p["sweep_load"], self._sweep_rate(htcondor_rate), n, length,
                                   p["max_output_mb"])
        demand = e1_scale.point_demand(n, size, length)
        rtt_for_ratio = float(measured_rtt_ms) if measured_rtt_ms not in (None, "", "None") else float(rtt_ms)
        ratio = e1_scale.point_ratio(in_force, rtt_for_ratio, demand, n)
        label = e1_jobs.rate_label(rate_factor)
        prof = self.tb.site.profile_name
        tag = f"lat-{prof}-{int(float(rtt_ms))}-{label}"
        batch = self.exp.run_batch(n, length, size, p["input_mb"], tag)
        stats = [job_stats(a) for a in batch.ads]
        xfers = self.exp.xfer_stats(batch.cluster)
        lost_slot = mean([s["efficiency_lost"] for s in stats])
        lost = transfer.transfer_over_compute(stats, xfers)
        out_rates = [b / 1e6 / s for d, _j, b, s in xfers if b > 1e5 and s > 0]
        if not out_rates:
            out_rates = [s["bytes_out"] / 1e6 / s["transfer_out_s"] for s in stats if s["transfer_out_s"] > 0]
        per_job = mean(out_rates)
        logger.console(f"  {prof:>10} rtt {float(rtt_ms):4g} ms {label:>2} ({n} x {size} MB / {length} s): "
                       f"efficiency lost {lost if lost is not None else float('nan'):.3f} "
                       "(slot set-up + tear-down over execution "
                       f"{lost_slot if lost_slot is not None else float('nan'):.3f}), per-job transfer "
                       f"{per_job or 0:.1f} MB/s, batch {batch.seconds:.0f} s; demand {demand:.3g} MB/s, "
                       f"R {e1_scale.ratio_text(ratio)} (paper "
                       f"{e1_scale.ratio_text(e1_scale.paper_ratio(prof, rate_factor, rtt_ms))})")
        return {"jobs": n, "completed": len(batch.ads), "bad_outputs": transfer.bad_outputs(n, size, batch.sizes),
                "size_mb": size, "efficiency_lost": lost, "slot_setup_teardown_over_execution": lost_slot,
                "job_transfer_rate": per_job, "demand": demand, "window_over_demand": ratio,
                "params": {"rtt_ms": float(rtt_ms), "rate": label, "profile": prof}}

    @keyword
    def latency_loss_ratios(self, low, high):
        """[{value, params}]: efficiency lost at `high` ms over `low` ms, per profile and rate,
        from this run's recorded e1.efficiency_lost."""
        return [{"value": v, "params": p} for v, p in transfer.loss_ratios(self.tb.site.run.metrics(), low, high)]

    @keyword
    def tuning_gains(self, rtt_ms):
        """[{value, params}]: default's loss over each other profile's at `rtt_ms`, per rate."""
        return [{"value": v, "params": p} for v, p in transfer.tuning_gains(self.tb.site.run.metrics(), rtt_ms)]
