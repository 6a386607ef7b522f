"""HTCondor on a running site, as the experiments see it: the submit host's schedd (a
`gateway.Schedd`), the workers' startd ads, HA failover (HAD leader, negotiator).
Built on `testbed.services.gateway`."""
from testbed.model.constants import comm
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.gateway import Daemons, Schedd


# What a completed job's ad says of its run: job_stats reads its transfers, a batch where
# and when it ran
JOB_AD_ATTRS = ["ClusterId", "ProcId", "JobStatus", "ActivationSetupDuration", "ActivationExecutionDuration",
                "ActivationTeardownDuration", "TransferInStarted", "TransferInFinished", "TransferOutStarted",
                "TransferOutFinished", "BytesSent", "BytesRecvd", "JobCurrentStartDate", "CompletionDate",
                "RemoteWallClockTime", "LastRemoteHost", "QDate", "JobStartDate"]


def job_stats(ad):
    """Per-job transfer accounting from a completed job's ad (1 s resolution)."""
    setup = float(ad.get("ActivationSetupDuration") or 0)
    execution = float(ad.get("ActivationExecutionDuration") or 0)
    teardown = float(ad.get("ActivationTeardownDuration") or 0)
    t_in = max(0.0, float(ad.get("TransferInFinished", 0) or 0) - float(ad.get("TransferInStarted", 0) or 0))
    t_out = max(0.0, float(ad.get("TransferOutFinished", 0) or 0) - float(ad.get("TransferOutStarted", 0) or 0))
    return {"job": f"{ad.get('ClusterId')}.{ad.get('ProcId')}", "setup_s": setup, "execution_s": execution,
            "teardown_s": teardown, "transfer_in_s": t_in, "transfer_out_s": t_out,
            # the job's view: BytesSent = output it sent back, BytesRecvd = input it received
            "bytes_out": float(ad.get("BytesSent") or 0), "bytes_in": float(ad.get("BytesRecvd") or 0),
            "efficiency_lost": (setup + teardown) / execution if execution > 0 else None}


def submit_description(executable, arguments="", count=1, requirements=None, output_mb=0,
                       extra=None, file_transfer=True):
    """A vanilla-universe submit description (text) for `count` jobs. Without
    `file_transfer` the job runs in its submit directory as the worker sees it
    (should_transfer_files = NO): that directory must exist there too."""
    transfer = (["should_transfer_files = YES", "when_to_transfer_output = ON_EXIT"] if file_transfer
                else ["should_transfer_files = NO"])
    lines = [f"executable = {executable}", f"arguments = {arguments}", "universe = vanilla", *transfer,
             "log = job.log", "output = out.$(Process)",
             "error = err.$(Process)", "request_memory = 32", "request_disk = 1024"]
    if requirements:
        lines.append(f"requirements = {requirements}")
    if output_mb:
        lines.append("transfer_output_files = payload")
    for key, value in (extra or {}).items():
        lines.append(f"{key} = {value}")
    lines.append(f"queue {count}")
    return "\n".join(lines) + "\n"


class Pool:
    """The site-level facade: the submit host's schedd, the pool's startds and HA."""

    QUEUED_OK = Schedd.QUEUED_OK

    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh
        self.submit_host = topo.role_host("submit").name
        self.schedd = Schedd(ssh, self.submit_host)

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
            out = self.schedd.status("-startd -af Machine MyAddress", timeout=60).stdout
            pairs = [line.strip().partition(" ")[::2] for line in out.splitlines() if line.strip()]
            got[:] = [(m, a) for m, a in pairs if m.split(".")[0] in workers]
            return len(got) >= want

        wait_for("every planned worker startd ad in the collector", listed, timeout, poll, host=self.submit_host,
                 message=lambda: f"{len(got)} of {want} worker startd ads in the collector after {timeout:.0f} s")
        return got

    def as_user(self, command):
        return self.schedd.as_user(command)

    def submit(self, description, workdir, files=None, setup=None):
        """Write files + submit description into workdir on the submit host; return cluster id.

        `setup` commands run in workdir (as the submit user) before condor_submit."""
        return self.schedd.submit(description, workdir, files, setup).cluster

    def jobs(self, cluster, attrs):
        """Ads of a cluster's jobs, from the queue and the history."""
        return self.schedd.jobs(cluster, attrs)

    def wait(self, cluster, count, timeout=600, poll=5, progress=None):
        """Wait until `count` jobs of the cluster completed; returns their ads."""
        return self.schedd.wait(cluster, count, timeout, poll, progress)

    def clear_queue(self, timeout=300, poll=5):
        """Remove every job left in the submit host's queue (an interrupted run's) and wait
        until it is empty, so a measurement never shares the site with stray jobs.
        Returns how many jobs were removed."""
        left = self.queued()
        if left and self.remove_jobs(None, timeout=2 * timeout, force_after=timeout, poll=poll):
            raise RemoteError(f"{self.submit_host}: jobs still queued {2 * timeout} s after condor_rm")
        return left

    def remove_jobs(self, constraint=None, timeout=300, force_after=120, poll=5):
        """Schedd.remove on the submit host: returns the jobs left after `timeout` s."""
        return self.schedd.remove(constraint, timeout, force_after, poll)

    def queued(self, constraint=None):
        """Schedd.queued on the submit host (RemoteError when the schedd does not answer)."""
        return self.schedd.queued(constraint)

    def describe_unfinished(self, cluster, limit=3):
        """Why jobs are not done: status counts and, for a few, starts and the last reasons."""
        return self.schedd.describe_unfinished(cluster, limit)

    CONTACTS_SCRIPT = ("condor_status -any -af Machine ScheddName 2>/dev/null && echo '#STATUS-OK#'; "
                       "condor_q -all -af GridResource 2>/dev/null && echo '#QUEUE-OK#'")

    def hosts_contacted(self):
        """{host: why} of the topology's hosts the main pool would contact: those an ad in its
        collectors comes from (Machine, or ScheddName of a submitter ad: a DTN whose schedd
        flocked jobs here), and those a queued job's GridResource names (HTCondor-C to the
        DTN). RemoteError when the collectors or the schedd do not answer."""
        out = self.ssh.run(self.submit_host, self.CONTACTS_SCRIPT, check=False, timeout=120).stdout
        if "#STATUS-OK#" not in out or "#QUEUE-OK#" not in out:
            raise RemoteError(f"{self.submit_host}: condor_status or condor_q did not answer; the pool's "
                              f"contacts are unknown")
        status, queue = out.split("#STATUS-OK#", 1)
        found = {}
        for text, why in ((status, "the pool's collectors list an ad from it"),
                          (queue.split("#QUEUE-OK#", 1)[0], "a queued job is routed to it (GridResource)")):
            for word in text.split():
                name = word.split("@")[-1].split(":")[0].split(".")[0]
                if name in self.topo.hosts:
                    found.setdefault(name, why)
        return found

    # --- high availability --------------------------------------------------------------
    def had_leaders(self):
        """CMs whose HAD ad says it is the leader (ads of a dead CM may linger)."""
        out = self.schedd.status("-subsystem had -af Name HadIsActive").stdout
        return [line.split()[0].split("@")[-1].split(".")[0] for line in out.splitlines()
                if len(line.split()) >= 2 and line.split()[1].strip('"').lower() == "true"]

    def negotiator_running(self):
        """CMs whose condor_negotiator process runs (ads of a dead one linger in the collector)."""
        cms = [h.name for h in self.topo.with_role("cm")]
        results = self.ssh.run_many({h: f"pgrep -x {comm('negotiator')} >/dev/null && echo yes || echo no"
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
        Daemons(self.ssh, host).kill_all()

    def restart_cm(self, host):
        Daemons(self.ssh, host).start()

    def wait_negotiator_on(self, host, timeout=300, poll=5):
        return float(wait_for(f"the negotiator on {host}",
                              lambda: host in self.had_leaders() and self.negotiator_running() == [host],
                              timeout, poll, host=host,
                              message=f"negotiator did not move to {host} within {timeout} s"))


def wait_single_had_leader(pool, timeout, message, error=RemoteError, poll=5):
    """Until exactly one HAD leader and one negotiator process are seen (after the CMs
    were reconfigured); `error(message)` when `timeout` s pass first."""
    return wait_for("a single HAD leader and negotiator",
                    lambda: len(pool.had_leaders()) == 1 and len(pool.negotiator_running()) == 1,
                    timeout, poll, host=pool.submit_host if hasattr(pool, "submit_host") else None,
                    state=lambda: f"HAD leaders {pool.had_leaders()}", error=error, message=message)
