"""Fault-suite keywords: thin over `testbed.experiments.faults.faults` (whose FaultSuite
holds the `testbed.injectors` injectors; the interrupted runs: `fault_interrupt`) and, for
the bad WAN, `testbed.network.wan`. Each keyword runs one fault flow (inject, wait, undo)
and returns what it saw; the suite records the timings and asserts the invariants. Undo
keywords are for teardowns: they put the site back whatever state a failed test left."""
import signal

from robot.api import SkipExecution, logger
from robot.api.deco import keyword, library

from testbed.experiments.faults import fault_interrupt, faults
from testbed.network import netem, wan
from testbed.services.gateway import Daemons
from _experiment_library import ExperimentLibrary


def _truth(value):
    return str(value).lower() in ("true", "1", "yes")


@library(scope="SUITE", auto_keywords=False)
class FaultLibrary(ExperimentLibrary):
    """Keywords that inject a fault, undo it and return what they measured; no state between
    tests (each test leaves the site healthy, the teardowns make sure)."""

    experiment, experiment_class = "faults", faults.FaultSuite

    @property
    def suite(self):
        return self.exp

    # --- rows ---------------------------------------------------------------------------------
    @keyword
    def skip_unless_long_faults(self, params, reason):
        """Skip a slow row unless the run asks for long faults (quick and full scales, or
        --set long_faults=1)."""
        if not int(params["long_faults"]):
            raise SkipExecution(f"slow fault, not run at {self.scale} scale ({reason}); "
                                f"run with --scale quick or --set long_faults=1")

    @keyword
    def worker_names(self):
        return [h.name for h in self.tb.site.topo.with_role("worker")]

    # --- 1: worker cut off ---------------------------------------------------------------------
    def _cut_result(self, r, what):
        """The job log's reconnect counts added to a cut's result, and one console line."""
        seconds = [s for e in r["reconnects"].values() for s in e["seconds"]]
        r["disconnected"] = sum(e["disconnected"] for e in r["reconnects"].values())
        r["reconnect_seconds"] = seconds
        logger.console(f"  {what}: {r['worker']} cut off {r['cut']['seconds']:.0f} s (ping loss "
                       f"{r['cut']['loss_during']:.0f}% during, {r['cut']['loss_after']:.0f}% after); "
                       f"{r['disconnected']} disconnects in the job log, reconnected after "
                       f"{', '.join(f'{s:.0f}' for s in seconds) or '-'} s; every job reconnected "
                       f"{r['reconnected_after_cut']:.0f} s after the cut; {len(r['problems'])} problems, "
                       f"{len(r['bad_outputs'])} bad outputs, {len(r['transfer_refusals'])} refused uploads in the logs")
        for line in r["transfer_refusals"]:
            logger.info(f"refused upload: {line}")
        return r

    @keyword
    def cut_a_worker_off_while_jobs_run(self, jobs, cutoff_s, margin_s):
        """Jobs on the first worker; the worker cut off the site network for cutoff_s (a tc
        drop rule, a guest-side dead-man timer removes it if the suite cannot); jobs finish.
        Returns {cut: {seconds, loss_during, loss_after}, problems, lost, bad_outputs,
        reconnects, disconnected, reconnect_seconds, reconnected_after_cut,
        transfer_refusals, known_defect}."""
        return self._cut_result(self.suite.worker_cut(int(jobs), int(cutoff_s), int(margin_s)), "file transfer")

    @keyword
    def cut_a_worker_off_while_jobs_without_file_transfer_run(self, jobs, cutoff_s, margin_s):
        """The same cut, the jobs with should_transfer_files = NO in a directory on the
        worker (their output is read there). Returns what `Cut A Worker Off While Jobs Run` does."""
        r = self.suite.worker_cut(int(jobs), int(cutoff_s), int(margin_s), file_transfer=False)
        return self._cut_result(r, "no file transfer")

    @keyword
    def restart_the_schedd_while_a_worker_is_cut_off(self, jobs, max_cut_s, margin_s):
        """The first worker cut off, the schedd restarted in the cut, the cut held until every
        job has a new shadow (at most max_cut_s). Returns what `Cut A Worker Off While Jobs Run`
        does with schedd_back (s), shadows_in_cut and not_replaced (jobs without a new shadow)."""
        r = self._cut_result(self.suite.schedd_restart_in_cut(int(jobs), int(max_cut_s), int(margin_s)),
                             "schedd restarted in the cut")
        logger.console(f"  new schedd answering {r['schedd_back']:.0f} s after the restart; new shadows "
                       f"{'started in' if r['shadows_in_cut'] else 'started only after'} the cut; "
                       f"jobs without a new shadow: {r['not_replaced'] or 'none'}")
        return r

    @keyword
    def heal_every_worker(self):
        """Teardown: no worker stays cut off (removes the rule and its timer)."""
        for h in self.tb.site.topo.with_role("worker"):
            self.suite.net.heal(h.name)

    # --- 2: schedd restarts --------------------------------------------------------------------
    @keyword
    def restart_the_schedd_while_jobs_run(self, jobs, margin_s):
        """A clean restart, then SIGKILL, of the submit host's schedd with jobs running.
        Returns {rounds: [{mode, back, reconnect, queue_problems}], problems, lost, bad_outputs}."""
        r = self.suite.schedd_restarts(int(jobs), int(margin_s))
        for rnd in r["rounds"]:
            logger.console(f"  schedd {rnd['mode']}: answering after {rnd['back']:.0f} s, jobs running again "
                           f"{rnd['reconnect']:.0f} s later; queue problems {len(rnd['queue_problems'])}")
        return r

    @keyword
    def start_the_schedd_if_down(self):
        self.suite.condor.start_and_bring_back(self.tb.site.pool.submit_host, "schedd", if_down=True)

    # --- 3: active CM killed -------------------------------------------------------------------
    @keyword
    def kill_the_active_central_manager_while_jobs_run(self, jobs, limit_s, margin_s):
        """Returns {killed, standby, failover (s), new_job_seconds, new_job_host, problems, lost, bad_outputs}."""
        r = self.suite.cm_kill(int(jobs), int(limit_s), int(margin_s))
        logger.console(f"  killed {r['killed']}: negotiator on {r['standby']} after {r['failover']:.0f} s; "
                       f"a new job ran on {r['new_job_host']} {r['new_job_seconds']:.0f} s after submit")
        return r

    @keyword
    def start_every_central_manager(self):
        """Teardown: condor.service running on every CM."""
        Daemons.start_where_down(self.tb.site.ssh, [h.name for h in self.tb.site.topo.with_role("cm")])

    # --- 4: one CCB server down ----------------------------------------------------------------
    @keyword
    def ccb_server_to_kill(self):
        return self.suite.ccb_target()

    @keyword
    def kill_a_ccb_server_while_jobs_run(self, target, jobs, outage_s, margin_s):
        r = self.suite.ccb_outage(int(jobs), int(outage_s), int(margin_s), target)
        logger.console(f"  CCB {r['target']} down {r['outage']:.0f} s: a new job ran on {r['new_job_host']} after "
                       f"{r['new_job_seconds']:.0f} s; startds registered again {r['reregister']:.0f} s after it "
                       f"returned; {len(r['during'])} problems during, {len(r['problems'])} after")
        return r

    @keyword
    def bring_the_collector_back(self, host):
        self.suite.condor.start_and_bring_back(host, "collector")

    # --- 5: RAID --------------------------------------------------------------------------------
    @keyword
    def fail_two_raid_members_and_rebuild(self, files, resync_timeout):
        r = self.suite.raid_two_members(int(files), int(resync_timeout))
        speeds = r["resync"]["speeds"]
        r["sync_speed_max"] = max(speeds) / 1000 if speeds else 0.0  # md reports K/s
        logger.console(f"  failed {', '.join(r['members'])}: degraded {r['degraded'].get('degraded')}; "
                       f"{len(r['names'])} files via the proxy, {len(r['proxy_mismatches'])} mismatches, "
                       f"{len(r['raid_mismatches'])} on the array; rebuilt in {r['resync']['seconds']:.0f} s "
                       f"({r['resync']['rate']:.1f} MB/s per member)")
        return r

    @keyword
    def fail_a_third_raid_member(self, resync_timeout):
        r = self.suite.raid_third_failure(int(resync_timeout))
        logger.console(f"  third failure: md0 {r['broken'].get('array_state')} "
                       f"({r['broken'].get('detail_state')}), degraded {r['broken'].get('degraded')}, raw read: "
                       f"{r['raw_read_error'] or 'worked'}; restored in {r['restore_seconds']:.0f} s")
        return r

    @keyword
    def restore_the_dtn_array(self, resync_timeout=1800):
        """Teardown of every RAID test: all data disks back in md0, /raid mounted, XRootD up."""
        info = self.suite.ensure_array(int(resync_timeout))
        logger.console(f"  md0 {info.get('array_state')}, {len(info['members'])} members in sync")
        return info

    # --- 6: origin down -------------------------------------------------------------------------
    @keyword
    def take_the_origin_down(self, bound_s):
        r = self.suite.origin_down(int(bound_s))
        logger.console(f"  origin down: cached {r['cached']} read {'ok' if r['hit']['ok'] else 'FAILED'} "
                       f"in {r['hit']['seconds'] or 0:.1f} s; uncached {r['uncached']} "
                       f"{'failed' if not r['miss']['ok'] else 'SUCCEEDED'} after {r['miss']['seconds'] or 0:.1f} s "
                       f"({r['miss']['error'] or 'no error printed'}); back after {r['back_seconds']:.0f} s")
        return r

    @keyword
    def start_the_origin(self):
        self.suite.storage.start_origin()

    # --- 7: DTN reboot --------------------------------------------------------------------------
    @keyword
    def reboot_the_dtn(self, files):
        r = self.suite.dtn_reboot(int(files))
        logger.console(f"  DTN back after {r['reboot']:.0f} s, md0 mounted after {r['storage_back']:.0f} s, "
                       f"services after {r['services_back']:.0f} s; members "
                       f"{'the same' if r['same_members'] else 'CHANGED'}")
        return r

    # --- 8: transfers under a bad WAN -----------------------------------------------------------
    @keyword
    def set_a_bad_wan(self, rtt_ms, loss_pct):
        """submit <-> workers at rtt_ms with loss_pct each way; returns the measured RTT (ms)."""
        tb = self.tb
        bad = netem.Link("submit", "worker", rtt_ms=float(rtt_ms), loss_pct=float(loss_pct))
        rows = wan.set_links(tb.site.topo, tb.site.ssh, tb.site.state, [bad], count=10)
        tb.site.wan_in_force = {}
        logger.console(f"  WAN submit<->worker: {float(rtt_ms):g} ms, {float(loss_pct):g}% loss; "
                       f"measured {rows[0]['measured_ms']} ms")
        return rows[0]["measured_ms"]

    @keyword
    def transfer_outputs_and_check(self, jobs, size_mb):
        """Jobs write size_mb of random output and its sha256 on the worker; returns {seconds,
        rate (MB/s), checked, mismatches: [(proc, worker sum, submit sum)]}."""
        r = self.suite.transfer_integrity(int(jobs), int(size_mb))
        logger.console(f"  {r['checked']} outputs of {int(size_mb)} MB in {r['seconds']:.0f} s "
                       f"({r['rate']:.1f} MB/s), {len(r['mismatches'])} sha256 mismatches")
        return r

    # --- 9: interrupted run ---------------------------------------------------------------------
    @keyword
    def interrupt_a_run(self, signal_name, suite="smoke"):
        """`testbed run SUITE --scale ci` in a subprocess, sent SIGINT or SIGTERM once it
        recorded a point; returns {folder, rc, exit_seconds, points, status, problems}."""
        signum = getattr(signal, str(signal_name).upper())
        r = fault_interrupt.interrupt_run(self.tb.site.topo.name, signum, suite=suite, echo=logger.console)
        logger.console(f"  {signal_name}: testbed run exited {r['rc']} after {r['exit_seconds']:.0f} s; "
                       f"{r['folder']} says {r['status']} with {r['points']} points")
        return r

    @keyword
    def site_should_be_restored(self):
        """WAN: no netem beyond the topology's own links; profile: `default` reads back."""
        problems = fault_interrupt.restore_problems(self.tb.site.topo, self.tb.site.ssh)
        if problems:
            raise AssertionError("site not restored after the interrupted run: " + "; ".join(problems))

    # --- the tally ------------------------------------------------------------------------------
    @keyword
    def fault_tally(self):
        """The suite's figures from this run's metrics, printed; returns the totals
        {injected, jobs_lost, files_corrupted, security_problems, kinds}."""
        if self.tb.site.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        rows, totals = faults.summarise(self.tb.site.run.metrics())
        logger.console("\n" + faults.render_summary(rows, totals))
        return totals

    # --- 10: security ---------------------------------------------------------------------------
    @keyword
    def permissions_open_to_anyone(self):
        found = self.suite.security.open_permissions()
        return [f"{h}: {k} = {v}" for h, items in found.items() for k, v in items]

    @keyword
    def anonymous_client_tries(self, action):
        """A client without credentials on a worker reads the queue (read) or submits (submit)."""
        sec = self.suite.security
        client = self.tb.site.topo.with_role("worker")[0].name
        r = sec.anonymous_client(client, self.tb.site.pool.submit_host, action)
        logger.console(f"  anonymous {action} from {client}: {r['verdict']}")
        logger.info(r["output"])
        return r

    @keyword
    def libvirt_networks_that_forward(self):
        found = self.suite.security.network_forwards()
        return [f"{net}: forward mode {', '.join(modes)}" for net, modes in found.items() if modes]

    @keyword
    def guests_with_a_default_route(self):
        return [f"{h}: {routes[0]}" for h, routes in self.suite.security.default_routes().items() if routes]
