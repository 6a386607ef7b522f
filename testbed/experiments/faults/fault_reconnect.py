"""The fault suite's reconnect rows: a worker cut off the site network while its jobs run,
and which reconnects HTCondor keeps.

- With file transfer (`worker_cut`): after the cut the same shadow reconnects, and its
  output upload is refused because the shadow dropped its transfer key on the disconnect
  (docs/upstream/htcondor-transfer-key.md); the job runs again. The flow says whether the
  logs written during the row show that refusal (`known_defect`).
- Without file transfer (`worker_cut(file_transfer=False)`): the jobs work in a directory
  that exists on their worker; nothing is uploaded, so the reconnect must keep them.
- With the schedd restarted during the cut (`schedd_restart_in_cut`): new shadows, with
  transfer keys of their own, reconnect, and the upload must work.

Every flow returns what it saw; robot/suites/faults.robot asserts no restart (NumJobStarts
unchanged) and the right output. A mixin of `faults.FaultSuite`: it uses the suite's topo,
ssh, pool, condor (testbed.injectors.condor_faults) and net (testbed.injectors.network_faults).
"""
import time

from testbed.injectors.condor_faults import shadows_not_replaced
from testbed.model.constants import JOB_LEASE_S, RESTART_CUT_HOLD_S
from testbed.model.errors import RemoteError

TRANSFER_KEY_DEFECT = "htcondor-transfer-key"   # the name the suite's tags and the tally use


def known_defect(result):
    """TRANSFER_KEY_DEFECT when a flow's jobs started again and the logs of the row show
    refused output uploads, else ''."""
    return TRANSFER_KEY_DEFECT if result.get("problems") and result.get("transfer_refusals") else ""


class ReconnectFlows:
    """The worker-cut flows of the fault suite (mixed into FaultSuite)."""

    def worker_requirements(self, worker):
        """Jobs on one worker, whatever domain its startds put in Machine."""
        return f'(Machine == "{worker}" || regexp("^{worker}[.]", Machine))'

    def cut_worker(self):
        return self.topo.with_role("worker")[0].name

    @staticmethod
    def check_cut(seconds):
        if seconds >= JOB_LEASE_S:
            raise ValueError(f"a cut of {seconds} s must be shorter than the job lease ({JOB_LEASE_S} s)")

    # 1: a worker cut off, with and without file transfer ------------------------------------
    def worker_cut(self, jobs, cutoff_s, margin_s, file_transfer=True):
        """The jobs on the first worker, which is cut off for cutoff_s; they finish once
        both sides say they reconnected. Returns finish()'s dict with worker, cut, cluster,
        reconnected_after_cut (s), transfer_refusals and known_defect."""
        self.check_cut(cutoff_s)
        worker = self.cut_worker()
        # the jobs run until released, so they are still running when their shadows reconnect:
        # a job that ended while its starter waited for the shadow had its output upload refused
        # after the reconnect ("Failed to receive GoAhead", 5 times 6 s apart) and restarted.
        # The shadows noticed a 47 s cut only 150 s after it began, so the release waits for the
        # starters' own logs too, not only for the job log's disconnect/reconnect pairs.
        # in /run: a job's /tmp may be its scratch directory (MOUNT_UNDER_SCRATCH)
        release = f"/run/tb-fault-release-{time.time_ns()}"
        seconds = cutoff_s + margin_s + 900
        if file_transfer:
            batch = self.condor.submit_batch("cut", jobs, seconds, self.worker_requirements(worker), release=release)
        else:
            batch = self.condor.submit_local_batch("cut-local", jobs, seconds, worker, release=release)
        r = self._cut_and_finish(batch, worker, release, cutoff_s, margin_s)
        return dict(r, known_defect=known_defect(r))

    def _cut_and_finish(self, batch, worker, release, cut_s, margin_s, during=None, after_cut=None,
                        every_job=False, poll=10):
        """Wait until the batch runs, cut `worker` off for cut_s (`during` every `poll` s,
        `after_cut` once healed), wait for the reconnects, release the jobs, finish."""
        self.condor.wait_all_running(batch)
        marks = self.condor.mark_logs(worker)
        try:
            cut = self.net.cut_for(worker, cut_s, probe_from=self.pool.submit_host, during=during, poll=poll)
            healed = time.monotonic()
            if after_cut:
                after_cut()
            self.condor.wait_reconnected(batch, settle=margin_s // 3 or 10, worker=worker, every_job=every_job)
        finally:
            self.ssh.run(worker, f"touch {release}", check=False)
        done = self.condor.finish(batch, timeout=margin_s + 900)
        self.ssh.run(worker, f"rm -f {release}", check=False)
        return dict(done, worker=worker, cut=cut, cluster=batch.cluster,
                    reconnected_after_cut=max(0.0, (batch.reconnected_at or healed) - healed),
                    transfer_refusals=self.condor.transfer_refusals(worker, marks))

    # 1c: the schedd restarted during the cut ---------------------------------------------------
    def schedd_restart_in_cut(self, jobs, max_cut_s, margin_s, poll=5):
        """The first worker cut off; at the cut's first tick the submit host's schedd is
        restarted cleanly (condor_restart: with a job lease it kills its shadows instead of
        vacating the jobs). The cut holds until every job has a new shadow and
        RESTART_CUT_HOLD_S more, at most max_cut_s, so the new shadows first try their
        starters through the cut. Returns finish()'s dict with worker, cut, cluster,
        reconnected_after_cut, transfer_refusals (a new shadow's upload refused would be a
        defect of its own), schedd_back (s from the
        restart until a new schedd answered), shadows_in_cut (every new shadow started
        before the cut ended) and not_replaced (jobs no new shadow took over)."""
        self.check_cut(max_cut_s)
        worker = self.cut_worker()
        release = f"/run/tb-fault-release-{time.time_ns()}"
        batch = self.condor.submit_batch("cut-schedd", jobs, max_cut_s + margin_s + 900,
                                         self.worker_requirements(worker), release=release)
        seen = {}

        def during():
            now = time.monotonic()
            if "old" not in seen:
                seen["old"], seen["restarted"] = self.condor.restart_schedd(), now
                return None
            try:
                if "back" not in seen and self.condor.schedd_answering(seen["old"]):
                    seen["back"] = now - seen["restarted"]
                if "back" in seen and "shadows" not in seen and not shadows_not_replaced(
                        batch.snapshots["before"], self.condor.snapshot(batch, "new-shadows")):
                    seen["shadows"] = now
            except RemoteError:   # the new schedd does not answer yet
                return None
            return False if "shadows" in seen and now - seen["shadows"] >= RESTART_CUT_HOLD_S else None

        def after_cut():
            if "old" not in seen:
                raise RemoteError(f"{self.pool.submit_host}: the schedd was not restarted during the cut")
            seen["shadows_in_cut"] = "shadows" in seen
            if "back" not in seen:
                self.condor.wait_schedd(seen["old"], timeout=300)
                seen["back"] = time.monotonic() - seen["restarted"]

        r = self._cut_and_finish(batch, worker, release, max_cut_s, margin_s, during=during, after_cut=after_cut,
                                 every_job=True, poll=poll)
        return dict(r, schedd_back=seen["back"],
                    shadows_in_cut=seen["shadows_in_cut"],
                    not_replaced=shadows_not_replaced(batch.snapshots["before"], batch.snapshots["done"]))
