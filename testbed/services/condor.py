"""HTCondor operations on a running site: submit, wait, job ads, HA failover."""
import json
import shlex
import time

from testbed.model.errors import RemoteError
from testbed.remote.poll import poll_until

from testbed.model.constants import SUBMIT_USER, JobStatus


def submit_description(executable, arguments="", count=1, requirements=None, output_mb=0,
                       extra=None):
    """A vanilla-universe submit description (text) for `count` jobs."""
    lines = [f"executable = {executable}", f"arguments = {arguments}",
             "universe = vanilla", "should_transfer_files = YES",
             "when_to_transfer_output = ON_EXIT", "log = job.log", "output = out.$(Process)",
             "error = err.$(Process)", "request_memory = 32", "request_disk = 1024"]
    if requirements:
        lines.append(f"requirements = {requirements}")
    if output_mb:
        lines.append("transfer_output_files = payload")
    for key, value in (extra or {}).items():
        lines.append(f"{key} = {value}")
    lines.append(f"queue {count}")
    return "\n".join(lines) + "\n"


STATUS_NAMES = {s.value: s.label for s in JobStatus}
DETAIL_ATTRS = ["NumShadowStarts", "NumJobStarts", "NumShadowExceptions", "LastRemoteHost",
                "LastRejMatchReason", "LastHoldReason"]
UNFINISHED_ATTRS = ["ClusterId", "ProcId", "JobStatus"] + DETAIL_ATTRS


def describe_jobs(ads, limit=3):
    """One line on unfinished jobs: counts per status, then details of the first few."""
    counts = {}
    for ad in ads:
        name = STATUS_NAMES.get(ad.get("JobStatus"), str(ad.get("JobStatus")))
        counts[name] = counts.get(name, 0) + 1
    parts = [", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "no unfinished jobs"]
    for ad in sorted(ads, key=lambda a: a.get("ProcId", 0))[:limit]:
        detail = [f"{k}={ad[k]}" for k in DETAIL_ATTRS if ad.get(k) not in (None, "", 0)]
        parts.append(f"{ad.get('ClusterId')}.{ad.get('ProcId')} "
                     f"{STATUS_NAMES.get(ad.get('JobStatus'), ad.get('JobStatus'))}"
                     + (f" ({', '.join(detail)})" if detail else ""))
    return "; ".join(parts)


class Pool:
    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh
        self.submit_host = topo.role_host("submit").name

    def worker_startd_ads(self, timeout=180.0, poll=5.0):
        """[(machine, MyAddress)] of the workers' startd daemon ads, once every startd the
        topology plans is listed. Waits: a tool asks a collector of COLLECTOR_HOST at random,
        and a startd's daemon ad can reach the second CM a minute after the first (seen in
        CI: cm2 had the 16 slot ads but no startd ad 12 s after the site was healthy).
        RemoteError with the count the last query listed when time runs out."""
        workers = {h.name for h in self.topo.with_role("worker")}
        want = self.topo.planned_startds
        got = []

        def listed():
            out = self.ssh.run(self.submit_host, "condor_status -startd -af Machine MyAddress",
                               check=False, timeout=60).stdout
            pairs = [line.strip().partition(" ")[::2] for line in out.splitlines() if line.strip()]
            got[:] = [(m, a) for m, a in pairs if m.split(".")[0] in workers]
            return len(got) >= want

        poll_until(listed, timeout, poll,
                   lambda: f"{len(got)} of {want} worker startd ads in the collector after {timeout:.0f} s")
        return got

    def as_user(self, command):
        return f"sudo -u {SUBMIT_USER} -H bash -c {shlex.quote(command)}"

    def submit(self, description, workdir, files=None, setup=None):
        """Write files + submit description into workdir on the submit host; return cluster id.

        `setup` commands run in workdir (as the submit user) before condor_submit."""
        prepare = list(setup or [])
        setup = [f"rm -rf {workdir} && mkdir -p {workdir} && cd {workdir}"]
        for name, (content, mode) in (files or {}).items():
            setup.append(f"printf %s {shlex.quote(content)} > {name} && chmod {mode} {name}")
        setup += prepare
        setup.append(f"printf %s {shlex.quote(description)} > job.sub")
        setup.append("condor_submit -terse job.sub")
        out = self.ssh.run(self.submit_host, self.as_user(" && ".join(setup))).stdout
        first = out.strip().splitlines()[-1].split(" - ")[0]
        return int(first.split(".")[0])

    def jobs(self, cluster, attrs):
        """Ads of a cluster's jobs, from the queue and the history."""
        proj = ",".join(attrs)
        cmd = (f"condor_q {cluster} -json -attributes {proj} 2>/dev/null; echo '#SPLIT#'; "
               f"condor_history {cluster} -json -attributes {proj} 2>/dev/null")
        out = self.ssh.run(self.submit_host, self.as_user(cmd), check=False, timeout=120).stdout
        ads = {}
        for part in out.split("#SPLIT#"):
            part = part.strip()
            if part:
                for ad in json.loads(part):
                    ads[(ad.get("ClusterId"), ad.get("ProcId"))] = ad
        return list(ads.values())

    def wait(self, cluster, count, timeout=600, poll=5, progress=None):
        """Wait until `count` jobs of the cluster completed; returns their ads."""
        deadline = time.monotonic() + timeout
        attrs = ["ClusterId", "ProcId", "JobStatus", "RemoteHost", "LastRemoteHost", "HoldReason"]
        while True:
            ads = self.jobs(cluster, attrs)
            if not ads and time.monotonic() < deadline:
                # a schedd too busy to answer (AUTHENTICATE:1006 under load) is not "0 done"
                time.sleep(poll)
                continue
            done = [a for a in ads if a.get("JobStatus") == JobStatus.COMPLETED]
            held = [a for a in ads if a.get("JobStatus") == 5]
            if held:
                raise RemoteError(f"job {cluster}.{held[0]['ProcId']} held: {held[0].get('HoldReason')}")
            if progress:
                progress(len(done), count)
            if len(done) >= count:
                return done
            if time.monotonic() > deadline:
                raise RemoteError(f"cluster {cluster}: {len(done)} of {count} jobs done after {timeout} s; "
                                  + self.describe_unfinished(cluster))
            time.sleep(poll)

    def clear_queue(self, timeout=300, poll=5):
        """Remove every job left in the submit host's queue (an interrupted run's) and wait
        until it is empty, so a measurement never shares the site with stray jobs.
        Returns how many jobs were removed."""
        left = self.queued()
        if left and self.remove_jobs(None, timeout=2 * timeout, force_after=timeout, poll=poll):
            raise RemoteError(f"{self.submit_host}: jobs still queued {2 * timeout} s after condor_rm")
        return left

    def remove_jobs(self, constraint=None, timeout=300, force_after=120, poll=5):
        """condor_rm the jobs matching `constraint` (a ClassAd expression; None: every job)
        and wait until they have left the queue. Only jobs still there after `force_after`
        s are forced out (-forcex): forcing a running job out at once drops its shadow
        before it has told the starter, which then waits out the job lease (40 min) with
        its slot stuck in Preempting/Vacating. Returns the jobs left after `timeout` s."""
        which = "-all" if constraint is None else f"-constraint {shlex.quote(constraint)}"
        self.ssh.run(self.submit_host, f"condor_rm {which}", check=False)
        started, forced = time.monotonic(), False
        while True:
            left = self.queued(constraint)
            elapsed = time.monotonic() - started
            if not left or elapsed > timeout:
                return left
            if not forced and elapsed > force_after:
                self.ssh.run(self.submit_host, f"condor_rm {which} -forcex", check=False)
                forced = True
            time.sleep(poll)

    QUEUED_OK = "#QUEUED-OK#"

    def queued(self, constraint=None):
        """How many jobs of any user (matching `constraint`, a ClassAd expression, when
        given) are in the submit host's queue. A schedd that does not answer is a
        RemoteError, not an empty queue: the count is only trusted when condor_q exited 0
        (only then does a sentinel line follow its output)."""
        match = "" if constraint is None else f" -constraint {shlex.quote(constraint)}"
        cmd = f"condor_q -all{match} -af ClusterId && echo '{self.QUEUED_OK}'"
        out = self.ssh.run(self.submit_host, cmd, check=False)
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        if not out.ok or not lines or lines[-1].strip() != self.QUEUED_OK:
            detail = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
            raise RemoteError(f"{self.submit_host}: condor_q failed (rc {out.rc}), the queue length "
                              f"is unknown: {detail}")
        return sum(1 for line in lines[:-1] if line.strip().isdigit())

    def describe_unfinished(self, cluster, limit=3):
        """Why jobs are not done: status counts and, for a few, starts and the last reasons."""
        ads = [a for a in self.jobs(cluster, UNFINISHED_ATTRS) if a.get("JobStatus") != JobStatus.COMPLETED]
        return describe_jobs(ads, limit)

    # --- high availability --------------------------------------------------------------
    def had_leaders(self):
        """CMs whose HAD ad says it is the leader (ads of a dead CM may linger)."""
        out = self.ssh.run(self.submit_host, "condor_status -subsystem had -af Name HadIsActive",
                           check=False).stdout
        return [line.split()[0].split("@")[-1].split(".")[0] for line in out.splitlines()
                if len(line.split()) >= 2 and line.split()[1].strip('"').lower() == "true"]

    def negotiator_running(self):
        """CMs whose condor_negotiator process runs (ads of a dead one linger in the collector)."""
        cms = [h.name for h in self.topo.with_role("cm")]
        results = self.ssh.run_many({h: "pgrep -x condor_negotiat >/dev/null && echo yes || echo no"
                                     for h in cms}, timeout=30)
        return [h for h in cms if results[h].ok and results[h].stdout.strip() == "yes"]

    def active_cm(self):
        running = self.negotiator_running()
        if len(running) != 1:
            raise RemoteError(f"no single active central manager: negotiator running on {running}, "
                              f"HAD leaders {self.had_leaders()}")
        return running[0]

    def kill_cm(self, host):
        """Stop every HTCondor daemon on a central manager, as a crash would."""
        self.ssh.run(host, "systemctl kill -s KILL condor.service; systemctl stop condor.service || true")

    def restart_cm(self, host):
        self.ssh.run(host, "systemctl start condor.service")

    def wait_negotiator_on(self, host, timeout=300, poll=5):
        return poll_until(lambda: host in self.had_leaders() and self.negotiator_running() == [host],
                          timeout, poll, f"negotiator did not move to {host} within {timeout} s")
