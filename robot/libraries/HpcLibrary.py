"""E4 keywords (seed 003): the shared software area, whole-node slots, one layout's
production point (`Measure Point    production`), the throughput estimator. Thin over
`testbed.experiments.e4.hpc` and `e4_points`."""

from robot.api import logger
from robot.api.deco import keyword, library
from robot.libraries.BuiltIn import BuiltIn

from testbed.experiments.e4 import hpc as e4, e4_points
from testbed.harness.points import Measured
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class HpcLibrary(ExperimentLibrary):
    """No state between tests: every row runs its own jobs; summaries read recorded values."""

    experiment, experiment_class = "e4", e4.HpcExperiment

    def __init__(self, scale_name="quick"):  # the argument keeps its name
        super().__init__(scale_name)

    @keyword
    def share_the_software_area(self):
        """Generate the dump and software area on the submit host, export it read-only to the
        site network over NFS, mount it on the nodes. Returns the seconds it took."""
        seconds = self.exp.share_area(self.params())
        logger.console(f"  shared area exported and mounted in {seconds:.0f} s")
        return seconds

    @keyword
    def unshare_the_software_area(self):
        self.exp.unshare_area()

    @keyword
    def use_whole_node_slots(self):
        """One partitionable slot of cpus_per_node cpus per worker startd (workers restart)."""
        seconds = self.exp.use_nodes(self.params()["cpus_per_node"])
        logger.console(f"  whole-node slots in the collector after {seconds:.0f} s")
        return seconds

    @keyword
    def restore_the_worker_slots(self):
        self.exp.restore_slots()

    def point_production(self, layout, backfill=False):
        """`Measure Point    production    layout=...    backfill=...`: one layout's jobs to
        their end, with or without the event service's back-fill (e4_points.production)."""
        p = self.params()
        backfill = str(backfill).lower() in ("1", "true", "yes")
        if backfill and not p["backfill_events"]:
            return Measured.skip(f"backfill_events is 0 at {self.scale} scale")
        reports, db = self.exp.run_layout(p, layout, backfill)
        self.keep_reports(f"{layout}{'-backfill' if backfill else ''}", reports + db)
        return e4_points.production(reports, db, p, layout, backfill)

    def keep_reports(self, run, reports):
        """The nodes' reports into the results folder (kept/e4/<run>/), so that a run's
        start-up parts and per-task times can be read after the site is gone."""
        for rep in reports:
            self.tb.site.keep(f"e4/{run}/{rep['role']}.{rep['node']}.json", rep)

    @keyword
    def calibrate_the_estimator(self):
        """The calibration run: co-located nodes of calib_tasks tasks, as many at once as the
        production runs (`nodes`); a Gaussian fit of their per-event CPU times, recorded with
        their mean start-up. Returns {mu, sigma, T, events}.

        The paper calibrated on one node: its nodes were separate machines. Here every node
        is a guest on the same host cores and reads the same NFS area, so one node alone
        starts in about half the time two take together (T 69-82 s vs 142-171 s at quick)
        and runs its events faster: a one-node calibration predicted half the node's length.
        """
        p = dict(self.params())
        p["tasks_per_node"] = p["calib_tasks"]
        reports, _ = self.exp.run_layout(dict(p, backfill_events=0), "colocated", False, p["nodes"])
        self.keep_reports("calibration", reports)
        events = e4.event_cpu_times(reports)
        mu, sigma = e4.gaussian_fit(events)
        T = sum(r["T"] for r in reports) / len(reports)
        self.tb.record_metric("e4.event_cpu_mean", mu, "s", run="calibration")
        self.tb.record_metric("e4.event_cpu_sigma", sigma, "s", run="calibration")
        self.tb.record_metric("e4.startup_seconds", T, "s", part="total", layout="calibration", backfill=0)
        logger.console(f"  calibration: per-event CPU {mu * 1000:.1f} +- {sigma * 1000:.1f} ms over {len(events)} events")
        return {"mu": mu, "sigma": sigma, "T": T, "events": len(events)}

    @keyword
    def predict_the_colocated_node_length(self):
        """From the recorded calibration and the co-located run's node lengths: the predicted
        length, recorded with its relative error. Returns {predicted, measured, error}."""
        p, tb = self.params(), self.tb
        mu = tb.recorded_values("e4.event_cpu_mean", run="calibration")
        T = tb.recorded_values("e4.startup_seconds", part="total", layout="calibration")
        measured = tb.recorded_values("e4.node_seconds", layout="colocated", backfill=0)
        if not mu or not measured:
            BuiltIn().skip("needs the calibration and co-located rows in this run")
        worker = self.tb.site.topo.with_role("worker")[0]
        concurrent = -(-p["nodes"] // max(1, len(self.tb.site.topo.with_role("worker"))))
        cores = worker.cpus / max(1, min(concurrent, worker.startds))
        predicted = e4.predict_node_seconds(mu[-1], p["events_mean"], p["events_sigma"], p["tasks_per_node"],
                                            cores, T[-1])
        m = sum(measured) / len(measured)
        err = e4.estimator_error(predicted, m)
        tb.record_metric("e4.predicted_seconds", predicted, "s", layout="colocated")
        tb.record_metric("e4.estimator_error", err, "fraction", layout="colocated")
        logger.console(f"  estimator: predicted {predicted:.0f} s, measured {m:.0f} s, error {err:+.1%}")
        made = tb.recorded_values("e4.event_cpu_mean", run="production", layout="colocated", backfill=0)
        start = tb.recorded_values("e4.startup_seconds", part="total", layout="colocated", backfill=0)
        if made and start:
            logger.console(f"    start-up T {T[-1]:.0f} s calibrated, {start[-1]:.0f} s in production; per-event "
                           f"CPU {mu[-1] * 1000:.1f} ms calibrated, {made[-1] * 1000:.1f} ms in production")
        return {"predicted": predicted, "measured": m, "error": err}
