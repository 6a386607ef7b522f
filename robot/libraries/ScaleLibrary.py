"""E5 keywords (seed 004): the sleeper ramp, TCP streams per execute node,
negotiation over the WAN, the collector shapes, failover with jobs running. Thin over
`testbed.experiments.e5.e5_scale`; the points (`Measure Point    ramp|shape|negotiation|
matchable`, and CollectorLibrary's) are recorded and judged by e5_points. Results that
are nested (per step, daemon, host, collector and ad type) are recorded into the run
opened by TestbedLibrary as they are measured; the suite records the rest."""
import copy
import time

from robot.api import logger
from robot.api.deco import keyword, library

from testbed.experiments.e5 import config as e5_config, failover as e5_failover, e5_points, e5_scale as scale, uber
from testbed.harness.points import Measured
from testbed.model import profiles
from testbed.model.links import rtt_label
from testbed.services.condor import wait_single_had_leader
from testbed.services.gateway import Daemons
from _experiment_library import ExperimentLibrary


@library(scope="SUITE", auto_keywords=False)
class ScaleLibrary(ExperimentLibrary):
    """Keywords that measure and return what they measured; the pool itself holds the
    state shared between tests (jobs tagged E5Role), nothing is kept here."""

    experiment, experiment_class = "e5", scale.ScaleExperiment
    point_partners = ("CollectorLibrary",)

    def __init__(self, scale_name="quick"):  # the argument keeps its name
        super().__init__(scale_name)

    def topology_with(self, count, slots=0):
        """The topology with `count` startds (at least the topology's) of `slots` slots (0:
        the topology's) on every worker."""
        topo = copy.deepcopy(self.tb.site.topo)
        for h in topo.with_role("worker"):
            h.startds = max(h.startds, int(count))
            h.slots_per_startd = int(slots) or h.slots_per_startd
        return topo

    def run_topology(self):
        """The topology as this run has it: `startds_per_worker` startds of `startd_slots`
        slots on every worker."""
        p = self.params()
        return self.topology_with(p["startds_per_worker"], p["startd_slots"])

    @keyword
    def pool_should_be_healthy(self, timeout=600):
        """The site's health check against this run's startds per worker."""
        healthy, text = scale.wait_healthy(self.run_topology(), self.tb.site.ssh, float(timeout), echo=logger.console,
                                           skip=self.tb.site.paused)
        logger.info(text)
        return healthy

    # --- startds per worker ------------------------------------------------------------
    @keyword
    def use_startds_per_worker(self, count, slots=0, timeout=900):
        """Run `count` startds (at least the topology's) of `slots` slots each (0: the
        topology's) on every worker - the topology's layout again for 0, 0 - refused first
        when they do not fit the workers' memory (the arithmetic in the message). Waits
        until the site is healthy with that layout; returns the workers' slots."""
        count, slots = int(count), int(slots)
        memory = uber.measured_startd_memory(exclude=self.tb.site.run.path if self.tb.site.run else None)
        problem = uber.startds_refused({"startds_per_worker": count, "min_free_mb": self.params()["min_free_mb"]},
                                          self.tb.site.topo, memory)
        if problem:
            raise AssertionError(problem)
        e5_config.use_startds(self.tb.site.ssh, self.exp.workers, count, slots)
        topo = self.topology_with(count, slots)
        t0 = time.monotonic()
        healthy, text = scale.wait_healthy(topo, self.tb.site.ssh, float(timeout), echo=logger.console,
                                           skip=self.tb.site.paused)
        logger.info(text)
        want = sum(h.total_slots for h in topo.with_role("worker"))
        sizes = uber.StartdSampler(self.tb.site.ssh, self.exp.workers).memory()
        for host, m in sizes.items():
            if m["rss_mb"] is not None and self.tb.site.run is not None:
                self.tb.record_metric("e5.startd_rss", m["rss_mb"], "MB", host=host, startds=m["startds"],
                                      slots=slots or topo.hosts[host].slots_per_startd)
        logger.console(f"  {topo.planned_startds // len(self.exp.workers)} startds per worker "
                       f"({topo.planned_startds} in all), {want} slots, healthy after {time.monotonic() - t0:.0f} s; "
                       "RSS per startd " + ", ".join(f"{h} {m['rss_mb']:.1f} MB" for h, m in sizes.items()
                                                    if m["rss_mb"] is not None))
        return want

    @keyword
    def restore_startds_per_worker(self):
        """Remove the run's extra startds (the topology's count again)."""
        e5_config.restore_startds(self.tb.site.ssh, self.exp.workers)

    # --- the points (`Measure Point    KIND    ...`, e5_points; CollectorLibrary has the
    # collector ramp's and the CCB layouts') -------------------------------------------------
    def point_ramp(self, profile):
        """Sleepers ramped to the first limit under `profile`, the schedd on the CMs' LAN;
        after it, whatever stopped it, the ramp's jobs gone and the pool healthy again."""
        try:
            self.remove_the_suites_jobs("background")
            self.remove_the_suites_jobs("negotiation")
            self.tb.site.set_wan_latency_if_needed("submit", "cm", 0, echo=logger.console)
            self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
            r = self.ramp_sleepers_to_the_first_limit()
        finally:
            self.remove_the_suites_jobs("ramp")
            self.pool_should_be_healthy(600)
        return e5_points.ramp(r)

    def point_shape(self, shape, profile):
        """The pool in one collector `shape` (flat, tree) under `profile`; flat again after."""
        if not self.params()["tree_settle_s"]:
            return Measured.skip(f"tree_settle_s is 0 at {self.scale} scale (--set tree_settle_s=120 runs it)")
        try:
            self.remove_the_suites_jobs("background")
            self.remove_the_suites_jobs("negotiation")
            self.tb.site.set_wan_latency_if_needed("submit", "cm", 0, echo=logger.console)
            self.tb.site.apply_profile_if_needed(profile, echo=logger.console)
            self.use_collector_shape(shape)
            r = self.measure_collector_shape(shape)
        finally:
            self.remove_jobs_ignoring_errors("tree")
            self.restore_the_collector_shape()
        return e5_points.shape(r, [h.name for h in self.tb.site.topo.with_role("cm")])

    def remove_jobs_ignoring_errors(self, role):
        """What a point's clean-up removes: a failure is a warning, the clean-up goes on."""
        try:
            self.remove_the_suites_jobs(role)
        except Exception as e:   # noqa: BLE001 - any failure here must not hide the point's own
            logger.warn(f"removing the {role} jobs failed: {e}")

    def _schedd_behind(self, rtt):
        """`rtt` ms between the schedd and the CMs, measured against the LAN's own RTT."""
        self.set_checked_rtt(rtt, "submit", "cm",
                             lambda ms: self.tb.site.set_wan_latency_if_needed("submit", "cm", ms, echo=logger.console))

    def point_negotiation(self, protocol, rtt):
        """The negotiator's cycle with idle requests no slot matches, in `protocol` (batched,
        per-request), the schedd `rtt` ms away; the release's batched protocol again after,
        whatever happened."""
        self.remove_the_suites_jobs("background")
        self._schedd_behind(rtt)
        try:
            in_force = self.use_negotiation_protocol(protocol)
            c = self.negotiation_cycle_with_idle_requests(rtt, protocol)
        except BaseException:
            # the row's own failure is the one to report; the restore after it is best effort
            failed = self._restore_the_batched_protocol()
            if failed:
                logger.warn(failed)
            raise
        m = e5_points.negotiation(dict(c, in_force=in_force))
        # the cycles are kept either way; a fragment left on a CM would put later rows in this protocol
        failed = self._restore_the_batched_protocol()
        return m.check(not failed, failed)

    def _restore_the_batched_protocol(self):
        """'' once every CM is in the batched protocol again, else why not."""
        try:
            self.use_negotiation_protocol(e5_config.BATCHED)
        except Exception as e:   # noqa: BLE001 - said, not raised: the point's figures or failure come first
            return f"restoring the batched negotiation protocol failed: {e}"
        return ""

    @keyword
    def use_negotiation_protocol(self, protocol):
        """Every CM's negotiator in `protocol`: `per-request` installs its fragment on every CM
        (HAD may run the negotiator on either), `batched` removes it (the release's own). The
        CMs reconfigure and HAD restarts when the fragment changed; then one HAD leader again.
        Returns {cm: the protocol its running master's configuration gives}."""
        cms = [h.name for h in self.tb.site.topo.with_role("cm")]
        e5_config.use_negotiation_protocol(self.tb.site.ssh, cms, protocol)
        if len(cms) > 1:
            self._wait_single_negotiator(float(self.params()["failover_timeout_s"]))
        return e5_config.protocols_in_force(self.tb.site.ssh, cms)

    def point_matchable(self, rtt):
        """The cycle with jobs every free slot matches, the schedd `rtt` ms away; the jobs gone after."""
        if not self.params()["negotiation_matchable"]:
            return Measured.skip(f"negotiation_matchable is 0 at {self.scale} scale "
                                 f"(--set negotiation_matchable=8 runs it)")
        try:
            self.remove_the_suites_jobs("background")
            self.remove_the_suites_jobs("negotiation")
            self._schedd_behind(rtt)
            c = self.negotiation_cycle_with_matchable_jobs(rtt)
        finally:
            self.remove_jobs_ignoring_errors("matchable")
        return e5_points.matchable(c)

    # --- the ramp -------------------------------------------------------------------------
    def ramp_sleepers_to_the_first_limit(self):
        """Sleep jobs in doubling steps until the first limit; at each step records running
        jobs, startds and slots in the collector, the step's time, the collectors' update
        statistics per ad type, RSS and CPU of the HTCondor daemons per host and the guests'
        free memory. Returns {limit, reason, max_running, slots, steps (count), profile}."""
        p, tb = self.params(), self.tb
        prof = tb.site.profile_name
        r = self.exp.ramp(p["ramp_start"], p["ramp_max"], p["step_timeout_s"], p["min_free_mb"],
                          echo=logger.console)
        for s in r["steps"]:
            step = s["step"]
            tb.record_metric("e5.ramp_running", s["running"], "jobs", step=step, profile=prof)
            tb.record_metric("e5.ramp_step_seconds", s["seconds"], "s", step=step, profile=prof)
            tb.record_metric("e5.ramp_startds", s["startds"], "startds", step=step, profile=prof)
            tb.record_metric("e5.ramp_slots", s["slots"], "slots", step=step, profile=prof)
            for collector, types in s["collectors"].items():
                for ad_type, st in types.items():
                    # the collector's own ad is as old as its MyCurrentTime (logged), the slot ads' sums are fresh
                    logger.info(f"step {step} {collector} {ad_type}: {st}")
                    tb.record_metric("e5.collector_updates_total", st["total"], "updates", step=step,
                                     collector=collector, ad_type=ad_type, profile=prof)
                    tb.record_metric("e5.collector_updates_lost", st["lost"], "updates", step=step,
                                     collector=collector, ad_type=ad_type, profile=prof)
            for host, daemons in s["daemons"].items():
                for daemon, d in daemons.items():
                    tb.record_metric("e5.daemon_rss", d["rss_mb"], "MB", step=step, host=host, daemon=daemon,
                                     profile=prof)  # summed over the daemon's processes (d["count"] of them)
                    tb.record_metric("e5.daemon_cpu_seconds", d["cpu_s"], "s", step=step, host=host,
                                     daemon=daemon, profile=prof)
                    tb.record_metric("e5.daemon_cpu_percent", s["cpu_pct"].get(host, {}).get(daemon, 0.0), "%",
                                     step=step, host=host, daemon=daemon, profile=prof)
            for host, mb in s["mem_free_mb"].items():
                if mb is not None:
                    tb.record_metric("e5.guest_mem_available", mb, "MB", step=step, host=host, profile=prof)
        for t, running, startds in r["series"]:
            tb.record_metric("e5.running_over_time", running, "jobs", t=t, profile=prof)
            tb.record_metric("e5.startds_over_time", startds, "startds", t=t, profile=prof)
        # the paper's Figure 6 (742 running jobs per GB of the schedd host): MB per running job
        per_job = e5_points.submit_mb_per_job(r["steps"], tb.site.topo.role_host("submit").name)
        logger.console(f"  ramp stopped: {r['limit']} - {r['reason']}; at most {r['max_running']} running"
                       + (f"; the submit host's MemAvailable fell {per_job:.2f} MB per running job "
                          f"({1024 / per_job:.0f} jobs per GB)" if per_job else ""))
        return {"limit": r["limit"], "reason": r["reason"], "max_running": r["max_running"], "slots": r["slots"],
                "steps": len(r["steps"]), "profile": prof,
                "reached": [s["running"] for s in r["steps"]], "targets": [s["step"] for s in r["steps"]]}

    @keyword
    def remove_the_suites_jobs(self, role):
        """condor_rm the jobs tagged E5Role = role (and wait until they left the queue)."""
        left = self.exp.remove(role)
        if left:
            logger.warn(f"{left} {role} jobs still in the queue 300 s after condor_rm")

    # --- TCP streams ---------------------------------------------------------------------
    def _shared_port(self, prof):
        return str(prof.for_host(["worker"], "condor").get("USE_SHARED_PORT", "True")).lower() == "true"

    @keyword
    def use_worker_configuration(self, name, timeout=600):
        """Apply profile `name` and, when it changes shared port on the workers, restart their
        HTCondor; wait until every worker slot is back with an address that does (or does
        not) go through shared port. Returns the seconds the restart took (0 without one)."""
        tb = self.tb
        before = tb.site.profile_in_force or profiles.load("default")
        tb.site.apply_profile_if_needed(name, echo=logger.console)
        after = tb.site.profile_in_force
        if self._shared_port(before) == self._shared_port(after):
            return 0.0
        exp = self.exp
        exp.restart_condor([h.name for h in exp.workers])
        seconds = exp.wait_startds(exp.workers, self._shared_port(after), float(timeout))
        logger.console(f"  workers restarted under {name}: every slot back after {seconds:.0f} s")
        return seconds

    @keyword
    def count_tcp_streams_from_a_worker(self, label):
        """Established TCP connections from the first worker to other testbed hosts, with
        `streams_jobs` sleep jobs running on it; and the paper's model for this worker
        under the profile in force. Returns {total, by_process, by_peer, model, config}."""
        p, exp, tb = self.params(), self.exp, self.tb
        worker = exp.workers[0]
        req = f'regexp("^{worker.name}([.]|$)", TARGET.Machine)'
        exp.submit_sleepers(p["streams_jobs"], "streams", requirements=req)
        exp.wait_running("streams", p["streams_jobs"], float(p["failover_timeout_s"]))
        time.sleep(15)  # let the new job's connections settle
        streams = exp.count_streams(worker)
        s = scale.summarise_streams(streams)
        prof = tb.site.profile_in_force
        master_tcp = str(prof.for_host(["worker"], "condor").get("MASTER.UPDATE_COLLECTOR_WITH_TCP", "True")) \
            .lower() == "true"
        collectors = len(tb.site.topo.with_role("cm"))
        ccbs = len(tb.site.topo.with_role("ccb") or tb.site.topo.with_role("cm"))
        model = scale.stream_model(worker.startds, collectors, ccbs, p["streams_jobs"],
                                   self._shared_port(prof), master_tcp)
        logger.console(f"  {label}: {s['total']} streams from {worker.name} (paper's model {model}); "
                       f"by process {s['by_process']}, by peer {s['by_peer']}")
        self.remove_the_suites_jobs("streams")
        return dict(s, model=model, config=label, worker=worker.name, startds=worker.startds)

    # --- negotiation over the WAN -----------------------------------------------------------
    def negotiation_cycle_with_idle_requests(self, rtt_ms, protocol, timeout=None):
        """`negotiation_requests` idle jobs that no slot can match, each its own resource
        request (kept between rows: submitted once); `negotiation_cycles` cycles that start
        after this call and see them all, each asked for with condor_reschedule, the CMs
        already in `protocol`. Returns the negotiator's own figures of the last cycle
        {considered, idle, rejections, matches, protocol, rtt_ms, requests} with duration =
        the fastest cycle, median and durations (each to the millisecond from the CM's
        NegotiatorLog; the ad counts whole seconds), and prefetch = the fastest fetch of the
        schedd's request list (None when the log shows none) with prefetches, every cycle's."""
        p, exp = self.params(), self.exp
        n, k = p["negotiation_requests"], max(1, p["negotiation_cycles"])
        timeout = float(timeout or p["negotiation_timeout_s"])
        have = len(exp.job_ads("negotiation", ["ClusterId"]))
        if have < n:
            exp.submit_sleepers(n - have, "negotiation", distinct=True)
        cm = self.tb.site.pool.active_cm()
        after = exp.host_clock(cm)
        durations, prefetches, last = [], [], None
        for _ in range(k):
            cm, last = exp.next_cycle(cm, n, after, timeout)
            after = last["start"]
            logged = exp.logged_cycle(cm, last)
            if logged is None:
                logger.warn(f"the NegotiatorLog on {cm} has no sub-second times for the cycle of "
                            f"{last['start']}: its duration is the ad's whole seconds ({last['duration']} s)")
            durations.append(last["duration"] if logged is None else logged.duration)
            if logged is not None and logged.prefetch is not None:
                prefetches.append(logged.prefetch)
        fastest, median = scale.fastest_and_median(durations)
        prefetch = scale.fastest_and_median(prefetches)[0] if prefetches else None
        logger.console(f"  negotiation at {float(rtt_ms):g} ms, {protocol}: fastest {fastest} s, median {median} s of "
                       f"{len(durations)} cycles {durations}; request-list prefetch fastest {prefetch} s of "
                       f"{prefetches}; {last['considered']} jobs considered "
                       f"({last['idle']} idle by the submitter ads, {last['rejections']} rejections, {last['matches']} matches"
                       + (f"; out of time: {last['out_of_time']}" if last["out_of_time"] else "") + ")")
        return dict(last, duration=fastest, median=median, durations=durations, prefetch=prefetch,
                    prefetches=prefetches, protocol=protocol,
                    rtt_ms=rtt_label(rtt_ms), requests=n)  # 0, not 0.0: as the paper file

    @keyword
    def record_the_negotiation_summary(self):
        """For each protocol of this run with its cycles at 0 and 100 ms: the WAN cycle over
        the LAN one, the round trips the WAN added per request and to the request-list fetch
        (e5_points.negotiation_summary), recorded. Returns {protocol: '' or why its check
        failed}, {} when no protocol has both points."""
        n = self.params()["negotiation_requests"]
        out = {}
        for protocol in self.params()["negotiation_protocols"]:
            points = [self._point_value(name, protocol=protocol, rtt_ms=rtt, requests=n)
                      for name in ("e5.negotiation_cycle", "e5.negotiation_prefetch")
                      for rtt in (e5_points.LAN_MS, e5_points.WAN_MS)]
            if None in points:
                continue
            m = e5_points.negotiation_summary(protocol, n, *points)
            for name, value, unit, params in m.records:
                self.tb.record_metric(name, value, unit, **params)
            for line in m.lines:
                logger.console(line)
            out[protocol] = m.verdict() or ""
        return out

    def _point_value(self, name, **params):
        """The value a point row recorded last for `name` at `params` in this run, or None."""
        found = self.tb.recorded_values(name, **params)
        return found[-1] if found else None

    def negotiation_cycle_with_matchable_jobs(self, rtt_ms):
        """`negotiation_matchable` idle jobs that every free slot matches, each its own
        resource request, submitted `matchable_rounds` times (removed after each round); per
        round the first cycle that considered them all, timed to the millisecond from the
        NegotiatorLog. Returns {duration (the fastest), durations, prefetch (the fastest
        request-list fetch, or None), matches (of the fastest round), requests, rtt_ms}."""
        p, exp = self.params(), self.exp
        n, timeout = p["negotiation_matchable"], float(p["negotiation_timeout_s"])
        rounds, cm = [], self.tb.site.pool.active_cm()
        for _ in range(max(1, p["matchable_rounds"])):
            cm, cycle = exp.matched_cycle(cm, n, timeout)
            logged = exp.logged_cycle(cm, cycle)
            rounds.append((cycle["duration"] if logged is None else logged.duration,
                           None if logged is None else logged.prefetch, cycle["matches"]))
            self.remove_the_suites_jobs("matchable")
        fastest = min(rounds, key=lambda r: r[0])
        prefetches = [r[1] for r in rounds if r[1] is not None]
        logger.console(f"  {n} matchable jobs at {float(rtt_ms):g} ms: cycles {[r[0] for r in rounds]} s, "
                       f"matches {[r[2] for r in rounds]}, request-list prefetch {prefetches}")
        return {"duration": fastest[0], "durations": [r[0] for r in rounds], "matches": fastest[2],
                "prefetch": min(prefetches) if prefetches else None, "requests": n, "rtt_ms": rtt_label(rtt_ms)}

    # --- failover ------------------------------------------------------------------------------
    def _background_count(self):
        p = self.params()
        if p["failover_jobs"]:
            return p["failover_jobs"]
        return max(1, sum(h.total_slots for h in self.run_topology().with_role("worker")) - 1)

    @keyword
    def sleepers_running_for_the_failovers(self):
        """Every slot but one (or `failover_jobs`) runs a sleeper tagged `background`;
        returns their (JobStatus, NumJobStarts, NumShadowStarts) by job."""
        n, exp = self._background_count(), self.exp
        timeout = float(self.params()["failover_timeout_s"])
        exp.ensure_running("background", n, timeout + 300)
        starts = exp.running_baseline("background", timeout)
        logger.console(f"  {sum(1 for v in starts.values() if v[0] == 2)} background sleepers running")
        return starts

    @keyword
    def running_jobs_should_not_have_restarted(self, before, event):
        """Every job running before `event` still runs, with NumJobStarts and NumShadowStarts
        unchanged. Returns how many restarted (0) after recording it."""
        after = e5_failover.job_starts(self.exp.job_ads("background"))
        bad = e5_failover.restarted_jobs(before, after)
        self.tb.record_metric("e5.jobs_restarted", len(bad), "jobs", event=event, running=len(before))
        if bad:
            raise AssertionError(f"{len(bad)} of {len(before)} running jobs were disturbed by {event}: "
                                 + "; ".join(f"{j} {why}" for j, why in bad[:5]))
        return 0

    @keyword
    def hard_kill_the_active_central_manager(self):
        """SIGKILL every HTCondor process of the CM whose negotiator is active; a new job
        is submitted at once. Returns {killed, standby, negotiator (s until the standby's
        negotiator is the only one running), match (s until the new job runs)}."""
        p, pool, exp = self.params(), self.tb.site.pool, self.exp
        timeout = float(p["failover_timeout_s"])
        killed = pool.active_cm()
        standby = [h.name for h in self.tb.site.topo.with_role("cm") if h.name != killed][0]
        t0 = time.monotonic()
        pool.kill_cm(killed)
        exp.submit_sleepers(1, "probe")
        pool.wait_negotiator_on(standby, timeout=timeout)
        negotiator = time.monotonic() - t0
        exp.wait_running("probe", 1, max(1.0, timeout - negotiator))
        match = time.monotonic() - t0
        logger.console(f"  killed {killed}: negotiator active on {standby} after {negotiator:.0f} s, "
                       f"new job running after {match:.0f} s")
        return {"killed": killed, "standby": standby, "negotiator": negotiator, "match": match}

    @keyword
    def restore_the_central_managers(self):
        """Start HTCondor on every CM where it is not running (a killed one); with
        HAD_USE_PRIMARY the primary takes the lead back. Waits until the primary's
        negotiator is the only one running; returns the seconds that took."""
        pool = self.tb.site.pool
        cms = [h.name for h in self.tb.site.topo.with_role("cm")]
        Daemons.start_where_down(self.tb.site.ssh, cms)
        if len(cms) < 2:
            return 0.0
        seconds = pool.wait_negotiator_on(cms[0], timeout=float(self.params()["failover_timeout_s"]))
        logger.console(f"  central managers up; negotiator on {cms[0]} after {seconds:.0f} s")
        return seconds

    @keyword
    def bring_every_collector_back(self):
        """`condor_on -daemon collector` on every CM and CCB host (no-op where it runs)."""
        hosts = {h.name for h in self.tb.site.topo.with_role("cm") + self.tb.site.topo.with_role("ccb")}
        self.exp.collectors_on(hosts)

    @keyword
    def hard_kill_one_collector(self):
        """SIGKILL the collector (only) of the active CM; its master restarts it. A new job
        is submitted at once. Returns {host, match (s until the new job runs), back (s until
        that collector lists every startd again)}."""
        p, exp = self.params(), self.exp
        timeout = float(p["failover_timeout_s"])
        host = self.tb.site.pool.active_cm()
        startds = exp.observe("probe")["startds"]
        t0 = time.monotonic()
        exp.kill_collector(host)
        exp.submit_sleepers(1, "probe")
        exp.wait_running("probe", 1, timeout)
        match = time.monotonic() - t0
        exp.wait_collector_sees_startds(host, startds, max(1.0, timeout - match))
        back = time.monotonic() - t0
        logger.console(f"  collector on {host} killed: new job running after {match:.0f} s, the collector "
                       f"lists all {startds} startds again after {back:.0f} s")
        return {"host": host, "match": match, "back": back, "startds": startds}

    @keyword
    def take_one_ccb_down(self, seconds):
        """Stop the collector of a CCB server that is not the active CM for `seconds`; at
        its start a new job is submitted and must start through the other CCB. Returns
        {host, match (s until the new job ran), down (s it was down)}. The CCB stays down
        until `Bring The CCB Back`."""
        p, exp = self.params(), self.exp
        host = e5_failover.pick_ccb(self.tb.site.topo, self.tb.site.pool.active_cm())
        samples = []
        for _ in range(3):  # the steady count, not an update's passing connection
            samples.append(exp.worker_connections(host))
            time.sleep(3)
        connections = min(samples)
        t0 = time.monotonic()
        exp.stop_collector(host)
        exp.wait_collector_stopped(host)
        left = exp.worker_connections(host)  # reconnect attempts may show up for a moment
        logger.info(f"workers' connections to {host}:9618: {connections} before, {left} with its collector off")
        exp.submit_sleepers(1, "probe")
        exp.wait_running("probe", 1, float(p["failover_timeout_s"]))  # its failure says why
        match = time.monotonic() - t0
        rest = float(seconds) - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)
        logger.console(f"  CCB {host} down: new job running after {match:.0f} s; down {time.monotonic() - t0:.0f} s")
        return {"host": host, "match": match, "down": time.monotonic() - t0, "connections": connections}

    @keyword
    def bring_the_ccb_back(self, host, connections):
        """Start the CCB's collector again; seconds until the workers hold as many connections
        to it as before the outage and every startd's address names it again."""
        exp = self.exp
        exp.start_collector(host)
        seconds = exp.wait_reregistered(host, int(connections), float(self.params()["failover_timeout_s"]))
        logger.console(f"  CCB {host} back: every startd registered with it again after {seconds:.0f} s")
        return seconds

    # --- two-tier collectors -------------------------------------------------------------
    def _wait_single_negotiator(self, timeout):
        wait_single_had_leader(self.tb.site.pool, timeout,
                                           f"no single HAD leader {timeout:.0f} s after reconfiguring the CMs",
                                           error=AssertionError)

    @keyword
    def use_collector_shape(self, shape):
        """`tree`: child collectors (on the CCB hosts that are not CMs, else on the CMs, port
        9620) receive the workers' updates and forward them to the CMs' collectors; `flat`:
        back to the site's own configuration. Workers restart when the shape changes."""
        if shape not in ("flat", "tree"):
            raise AssertionError(f"shape must be flat or tree, not {shape!r}")
        exp = self.exp
        tree = e5_config.CollectorTree(exp, self.params()["startds_per_worker"])
        tree.use(shape)
        timeout = float(self.params()["failover_timeout_s"])
        if any(self.tb.site.topo.hosts[h].has("cm") for h in e5_config.child_collector_hosts(self.tb.site.topo)):
            self._wait_single_negotiator(timeout)
        return tree.wait_children(shape, 120)

    def measure_collector_shape(self, shape):
        """With the pool in `shape`: seconds until every slot is visible at the top-level
        collector after a restart of the workers' HTCondor; then every slot runs a sleeper
        for tree_settle_s; updates received and lost per collector in that window (summed
        over the slot ads each holds) and the negotiator's latest cycle. Returns {shape, profile, visible,
        stats, cycle, slots, children_ads}."""
        p, exp, tb = self.params(), self.exp, self.tb
        timeout = float(p["failover_timeout_s"])
        tree = e5_config.CollectorTree(exp)
        slots = sum(h.total_slots for h in self.run_topology().with_role("worker"))
        visible = tree.time_to_visible(slots, timeout)
        exp.ensure_running("tree", slots, timeout + 600)
        cm = tb.site.pool.active_cm()
        mark = exp.host_clock(cm)
        before = tree.update_stats()
        time.sleep(float(p["tree_settle_s"]))
        stats = tree.updates_since(before)
        cycle = exp.wait_cycle_after(cm, mark, timeout)
        children = sum(v["ads"] for k, v in stats.items() if ":" in k)
        logger.console(f"  collectors {shape}: every slot visible {visible:.0f} s after the restart; "
                       f"updates {stats}; negotiation cycle {cycle['duration']} s")
        self.remove_the_suites_jobs("tree")
        return {"shape": shape, "profile": tb.site.profile_name, "visible": visible, "stats": stats,
                "cycle": cycle["duration"], "slots": slots, "children_ads": children,
                "window_s": int(p["tree_settle_s"])}

    @keyword
    def restore_the_collector_shape(self):
        """Flat again; the workers restarted so that every daemon reports to the CMs again
        (nothing to do when no fragment of the tree is left)."""
        exp = self.exp
        if not e5_config.CollectorTree(exp).installed():
            return
        self.use_collector_shape("flat")
        exp.restart_condor([h.name for h in exp.workers])
        exp.wait_startds(exp.workers, True, float(self.params()["failover_timeout_s"]))
