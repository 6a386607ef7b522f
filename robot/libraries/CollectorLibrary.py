"""E5 keywords for the collector (seed 004, sections 4.1 and 4.2): startd daemons ramped per
worker until a collector loses updates or startds fail to join, on the LAN and behind a
WAN, with one collector tier and two; and the connections the central managers hold with
CCB on the child collectors or on hosts of its own. Thin over
`testbed.experiments.e5.collector`; the points (`Measure Point    collector-ramp|ccb`,
through ScaleLibrary's keyword) record what they measure per step into the run opened by
TestbedLibrary and are judged by e5_points."""
from robot.api import logger
from robot.api.deco import keyword, library
from robot.libraries.BuiltIn import BuiltIn

from testbed.experiments.e5 import (collector as ramp, config as e5_config, failover, e5_points, e5_scale,
                                    synthetic, uber)
from testbed.harness.points import Measured
from testbed.model.links import rtt_label
from testbed.services.condor import wait_single_had_leader
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class CollectorLibrary(ExperimentLibrary):
    """The pool holds the state between tests (fragments on the hosts); nothing is kept here."""

    experiment, experiment_class = "e5", e5_scale.ScaleExperiment

    def __init__(self, scale_name="quick"):  # the argument keeps its name
        super().__init__(scale_name)

    # `Measure Point` is ScaleLibrary's in the E5 suite (one keyword of that name per suite);
    # it finds the collector ramp's and the CCB layouts' points here.
    measure_point = None

    @property
    def _scale(self):
        return BuiltIn().get_library_instance("ScaleLibrary")

    def point_collector_ramp(self, rtt, tiers):
        """Startds ramped to the collector's limit with the workers `rtt` ms from every central
        host and `tiers` collector tiers; one tier, no WAN and the run's startds after."""
        try:
            self._pool_at_rest_behind(rtt)
            self.use_collector_tiers(tiers)
            r = self.ramp_startds_to_the_collector_limit(rtt, tiers)
        finally:
            self._restore_after_a_row()
        return e5_points.collector_ramp(r, rtt, tiers)

    def _pool_at_rest_behind(self, rtt):
        """What a collector ramp starts from: no suite job left, `default`, and the workers
        `rtt` ms from every central host (checked)."""
        self._scale.remove_the_suites_jobs("background")
        self._scale.remove_the_suites_jobs("negotiation")
        self.tb.site.apply_profile_if_needed("default", echo=logger.console)
        self.set_checked_rtt(rtt, "worker", "cm", self.put_the_workers_behind_a_wan)

    def point_synthetic(self, rtt):
        """Synthetic startds ramped to a CM collector's limit with the workers `rtt` ms from
        every central host (one tier); no WAN and no synthetic ad after."""
        p = self.params()
        if not p["synthetic_rtts"]:
            return Measured.skip(f"synthetic_rtts is empty at {self.scale} scale")
        runner = synthetic.SyntheticRamp(self.exp, join_s=p["collector_join_s"], hold_s=p["collector_hold_s"],
                                         update_s=p["synthetic_update_s"], parallel=p["synthetic_parallel"],
                                         echo=logger.console)
        try:
            self._pool_at_rest_behind(rtt)
            steps = e5_scale.ramp_steps(p["synthetic_start"], p["synthetic_max"])[0]
            logger.console(f"  synthetic startds at {rtt} ms: {steps} per worker, {p['synthetic_parallel']} joins at "
                           f"once per worker, an update every {p['synthetic_update_s']} s")
            r = runner.run(steps)
        finally:
            runner.clean()
            self._restore_after_a_row()
        return e5_points.synthetic_ramp(r, rtt, len(self.exp.workers), p["collector_hold_s"])

    def point_ccb(self, layout, config):
        """The connections the CMs hold from the workers with CCB `layout` (on-children,
        own-hosts) and worker `config` (shared-port, per-daemon); as the site has it after."""
        p = self.params()
        if not p["ccb_startds"]:
            return Measured.skip(f"ccb_startds is 0 at {self.scale} scale (--set ccb_startds=8 runs it)")
        if not self.ccb_hosts_of_their_own():
            return Measured.skip("the CMs are the CCB servers in this topology: CCB has no hosts of its own to stay on")
        scale = self._scale
        try:
            scale.remove_the_suites_jobs("background")
            self.tb.site.apply_profile_if_needed("default", echo=logger.console)
            self.tb.site.set_wan_latency_if_needed("submit", "cm", 0, echo=logger.console)
            scale.use_startds_per_worker(p["ccb_startds"], p["collector_ramp_slots"])
            self.use_ccb_layout(layout, config)
            c = self.count_connections_on_the_central_managers(layout, config)
        finally:
            self._restore_after_a_row()
        return e5_points.ccb(c, layout)

    def _restore_after_a_row(self):
        """One collector tier, no WAN, shared port on the workers again and the run's startds."""
        p = self.params()
        self.leave_the_collectors_as_the_site_has_them()
        self._scale.use_startds_per_worker(p["startds_per_worker"], p["startd_slots"])

    # --- the workers behind a WAN ----------------------------------------------------------
    def put_the_workers_behind_a_wan(self, rtt_ms):
        """`rtt_ms` between the workers and every central host (CMs, and CCB hosts that are
        not CMs): where their startds, child collectors and CCBs are; the submit host stays
        on the CMs' LAN. Returns the RTT measured to the first CM."""
        pairs = [("worker", g) for g in ramp.central_groups(self.tb.site.topo)]
        return self.tb.site.set_wan_latencies(pairs, rtt_ms, echo=logger.console)[0]

    # --- tiers -------------------------------------------------------------------------------
    def _tree(self, placement="ccb", ccb=False, startds=None):
        p = self.params()
        most = startds or max(p["collector_ramp_max"], p["startds_per_worker"], p["ccb_startds"], 1)
        if p["collector_ramp_max"] <= 0:  # up to the memory: the tree's worker fragment names every startd
            most = max(most, self._plan()[-1])
        return e5_config.CollectorTree(self.exp, most, placement=placement, ccb=ccb)

    def _memory(self):
        """Memory per startd as the run was checked for (its own measurements go to the next)."""
        return uber.measured_startd_memory(exclude=self.tb.site.run.path if self.tb.site.run else None)

    def _plan(self):
        p = self.params()
        return ramp.ramp_plan(p["collector_ramp_start"], p["collector_ramp_max"], self.tb.site.topo, self._memory(),
                              p["min_free_mb"])

    def use_collector_tiers(self, tiers):
        """1: the startds update the CMs' collectors (the site's own shape); 2: child
        collectors on the CCB hosts (else the CMs) receive them and forward to the CMs."""
        tiers = int(tiers)
        if tiers not in ramp.TIERS:
            raise AssertionError(f"tiers must be 1 or 2, not {tiers}")
        tree = self._tree()
        shape = "tree" if tiers == 2 else "flat"
        tree.use(shape)
        self._wait_single_negotiator(tree)
        return tree.wait_children(shape, 300)

    def _wait_single_negotiator(self, tree):
        """After a CM's configuration changed (a child there), HAD restarts: one leader again."""
        if any(self.tb.site.topo.hosts[h].has("cm") for h in tree.candidates()):
            timeout = float(self.params()["failover_timeout_s"])
            wait_single_had_leader(self.tb.site.pool, timeout, f"no single HAD leader {timeout:.0f} s "
                                                                      "after reconfiguring the CMs", error=AssertionError)

    # --- the ramp ---------------------------------------------------------------------------
    def ramp_startds_to_the_collector_limit(self, rtt_ms, tiers):
        """Startds per worker in doubling steps (collector_ramp_start to collector_ramp_max,
        0: what the workers' memory holds) until a collector loses updates, a startd never
        appears, a collector does not answer or the workers cannot start or hold the step.
        Records every step's figures and e5.collector_limit; returns {limit, reason, held,
        per_worker, found, steps (startds per worker of each step run)}."""
        p, tb = self.params(), self.tb
        rtt, tiers = rtt_label(rtt_ms), int(tiers)
        plan = self._plan()
        logger.console(f"  collector ramp at {rtt} ms, {tiers} tier(s): {plan} startds per worker "
                       f"(memory per startd: {self._memory().per_startd_mb:g} MB, {self._memory().source})")
        runner = ramp.CollectorRamp(self.exp, self._tree() if tiers == 2 else None, slots=p["collector_ramp_slots"],
                                    join_s=p["collector_join_s"], hold_s=p["collector_hold_s"],
                                    min_free_mb=p["min_free_mb"], echo=logger.console)
        r = runner.run(plan)
        labels = {"rtt_ms": rtt, "tiers": tiers}
        for s in r["steps"]:
            self._record_step(s, len(self.exp.workers), labels, set(runner.tops()))
        for t, held in r["series"]:
            tb.record_metric("e5.collector_ramp_held_over_time", held, "startds", t=t, **labels)
        tb.record_metric("e5.collector_limit", r["held"], "startds", per_worker=r["per_worker"],
                         found=int(r["found"]), limit=r["limit"], **labels)
        logger.console(f"  ramp stopped: {r['limit']} - {r['reason']}; limit {r['held']} startds per collector "
                       f"({r['per_worker']} per worker){'' if r['found'] else ', not reached'}")
        return {"limit": r["limit"], "reason": r["reason"], "held": r["held"], "per_worker": r["per_worker"],
                "found": r["found"], "steps": [s["per_worker"] for s in r["steps"]]}

    def _record_step(self, s, workers, labels, tops):
        tb, step = self.tb, s["per_worker"]
        at = dict(labels, step=step)
        for phase in ("started", "joined"):
            if s[f"{phase}_s"] is not None:
                tb.record_metric("e5.collector_ramp_join_seconds", s[f"{phase}_s"], "s", phase=phase, **at)
        for c, n in s["listed"].items():
            tb.record_metric("e5.collector_ramp_listed", n, "startds", collector=c, top=int(c in tops),
                             expected=step * workers, **at)
        for c, names in s["missing"].items():
            tb.record_metric("e5.collector_ramp_missing", len(names), "startds", collector=c, **at)
            if names:
                logger.info(f"step {step}: {c} never listed {names[:20]}")
        for c, w in s["updates"].items():
            window = f"{self.params()['collector_hold_s']}s" if w.get("window") else "ad-life"
            tb.record_metric("e5.collector_ramp_updates", w["total"], "updates", collector=c, window=window,
                             expected=step * workers, **at)
            tb.record_metric("e5.collector_ramp_lost", w["lost"], "updates", collector=c, window=window,
                             expected=step * workers, **at)
        for c in sorted(set(s["updates"]) | set(s["skipped"]) | set(s["timeouts"])):
            tb.record_metric("e5.collector_ramp_skipped", s["skipped"].get(c, 0), "updates", collector=c, **at)
            tb.record_metric("e5.collector_ramp_timeouts", s["timeouts"].get(c, 0), "timeouts", collector=c, **at)
        for c, stats in s["loads"].items():
            for stat, value in stats.items():
                tb.record_metric("e5.collector_ramp_stat", value, "", stat=stat, collector=c, **at)
        for host, daemons in s["cpu"].items():
            for daemon in ("collector", "startd"):
                if daemon in daemons:
                    tb.record_metric("e5.collector_ramp_cpu", daemons[daemon], "%", host=host, daemon=daemon, **at)
        for host, m in s["memory"].items():
            if m["rss_mb"] is not None:
                tb.record_metric("e5.startd_rss", m["rss_mb"], "MB", host=host, startds=m["startds"],
                                 slots=self.params()["collector_ramp_slots"], **at)
            if m["available_mb"] is not None:
                tb.record_metric("e5.guest_mem_available", m["available_mb"], "MB", host=host, **at)

    # --- CCB on the child collectors or on its own hosts ------------------------------------------
    def _layouts(self):
        return ramp.CcbLayouts(self.exp, self.params()["ccb_startds"])

    def ccb_hosts_of_their_own(self):
        """The CCB hosts that are not central managers ([] on `small`)."""
        return e5_config.dedicated_ccb_hosts(self.tb.site.topo)

    def use_ccb_layout(self, layout, config):
        """Child collectors on the CMs, which are (`on-children`) or are not (`own-hosts`) the
        workers' CCB servers, with (`shared-port`) or without (`per-daemon`) shared port on
        the workers; they restart when their CCB servers or shared port change."""
        tree = self._layouts().tree(layout, config)
        tree.use("tree")
        self._wait_single_negotiator(tree)
        return tree.wait_children("tree", 300)

    def count_connections_on_the_central_managers(self, layout, config):
        """Established connections from the workers on every CM, by port, once every startd
        is listed again; records e5.central_connections (port `all`: the total) and returns
        {total, children, by_cm}."""
        exp, startds = self.exp, self.params()["ccb_startds"]
        exp.wait_collector_sees_startds(self.tb.site.topo.with_role("cm")[0].name, startds * len(exp.workers),
                                        float(self.params()["collector_join_s"]))
        by_cm = self._layouts().connections()
        total, children = ramp.connection_total(by_cm), ramp.child_port_share(by_cm)
        labels = {"layout": layout, "config": config, "startds": startds}
        self.tb.record_metric("e5.central_connections", total, "connections", port="all", **labels)
        for cm, ports in by_cm.items():
            for port, n in ports.items():
                self.tb.record_metric("e5.central_connections", n, "connections", port=port, host=cm, **labels)
        logger.console(f"  CCB {layout} ({config}): {total} connections from the workers on the CMs, {children} "
                       f"on the child collectors' port; {by_cm}")
        return {"total": total, "children": children, "by_cm": by_cm}

    @keyword
    def record_the_ccb_split(self):
        """For each worker configuration with both CCB layouts counted in this run: CM
        connections with CCB on its own hosts over those with CCB on the children, recorded
        as e5.ccb_split_connections_ratio. Returns {config: ratio}."""
        out = {}
        for config in ramp.CcbLayouts.CONFIGS:
            on, own = (self.tb.recorded_values("e5.central_connections", layout=layout, config=config, port="all")
                       for layout in ramp.CcbLayouts.LAYOUTS)
            if on and own and on[-1] > 0:
                out[config] = own[-1] / on[-1]
                self.tb.record_metric("e5.ccb_split_connections_ratio", out[config], "ratio", config=config)
        return out

    @keyword
    def leave_the_collectors_as_the_site_has_them(self):
        """No child collector anywhere and no WAN: what the other rows assume."""
        tree = self._tree()
        tree.use("flat")
        self._wait_single_negotiator(tree)
        tree.wait_children("flat", 300)
        self.tb.site.clear_wan()
