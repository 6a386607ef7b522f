"""HTCondor faults: SIGKILL of a host's daemons or of one daemon, a collector (CCB server)
held down and brought back, a clean schedd restart; and the fault suite's job batches,
whose starts and outputs are the invariants (a job that reconnects does not start again),
with file transfer or working in a directory that exists on their worker; and the log
lines of a refused output upload (HTCondor's transfer-key defect) written during a row.

Every injector has its undo next to it; the suite calls the undo in a teardown.
"""
import hashlib
import re
import shlex
import time
from dataclasses import dataclass, field

from testbed.model.constants import (CONDOR_LOG_DIR, FAULT_LOCAL_IWD, FAULT_WORKDIR, JOB_LEASE_S, SUBMIT_USER,
                                     JobStatus)
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.condor import submit_description
from testbed.services.gateway import Daemons
from testbed.services.job_events import cluster_events

START_ATTRS = ["ClusterId", "ProcId", "JobStatus", "NumJobStarts", "NumShadowStarts", "JobRunCount",
               "LastRemoteHost", "RemoteHost", "HoldReason"]

JOB_SCRIPT = """#!/bin/sh
# Fault-suite job: sleep through the fault, then print a line the suite can recompute.
# With a release file (third argument) it runs until the suite creates that file on the
# worker (at most $1 s): a job must still be running when its shadow reconnects, or
# the fault tests a finished job's output transfer instead of a reconnect.
end=$(( $(date +%s) + $1 ))
while [ "$(date +%s)" -lt "$end" ]; do
  if [ -n "$3" ] && [ -e "$3" ]; then break; fi
  sleep 2
done
echo "fault-job $2 $(printf 'fault-job-%s\\n' "$2" | sha256sum | cut -d' ' -f1)"
"""


kill_script = Daemons.kill_script


def expected_output(proc):
    """The line fault job `proc` prints: recomputed here, compared with what came back."""
    digest = hashlib.sha256(f"fault-job-{proc}\n".encode()).hexdigest()
    return f"fault-job {proc} {digest}"


@dataclass
class Batch:
    """Jobs submitted by the fault suite: where they work and what they were at each snapshot."""
    cluster: int
    count: int
    workdir: str
    seconds: int
    snapshots: dict = field(default_factory=dict)   # label -> {proc: ad}
    output_host: str = None      # where the jobs' output files are (None: the submit host)
    reconnected_at: float = None  # monotonic time wait_reconnected first saw every job reconnected


def starts(ads):
    """{proc: ad} of a cluster's ads (ClusterId/ProcId/JobStatus/NumJobStarts/...)."""
    return {int(ad.get("ProcId", -1)): ad for ad in ads}


def compare_starts(before, after):
    """What went wrong between two snapshots of the same jobs ({proc: ad}): a job gone from
    queue and history, removed or held, or started again (NumJobStarts grew). [] when none."""
    problems = []
    for proc, ad in sorted(before.items()):
        now = after.get(proc)
        if now is None:
            problems.append(f"job {proc} is gone from the queue and the history")
            continue
        status = now.get("JobStatus")
        if status in (JobStatus.REMOVED, JobStatus.HELD):
            why = f": {now.get('HoldReason')}" if now.get("HoldReason") else ""
            problems.append(f"job {proc} is {JobStatus(status).label}{why}")
        was, got = int(ad.get("NumJobStarts") or 0), int(now.get("NumJobStarts") or 0)
        if got > was:
            problems.append(f"job {proc} started again (NumJobStarts {was} -> {got})")
    return problems


def shadows_not_replaced(before, after):
    """The jobs ({proc: ad} snapshots) whose NumShadowStarts did not grow: no new shadow
    took them over (the schedd counts every shadow it spawns, a reconnecting one too)."""
    def shadows(ad):
        return int((ad or {}).get("NumShadowStarts") or 0)
    return sorted(p for p, ad in before.items() if shadows(after.get(p)) <= shadows(ad))


def lost_jobs(problems):
    """How many distinct jobs a list of compare_starts problems is about."""
    return len({p.split()[1] for p in problems if p.startswith("job ")})


def bad_outputs(texts, count):
    """[(proc, what is wrong)] for the outputs {proc: text} of a batch of `count` jobs."""
    bad = []
    for proc in range(count):
        text = texts.get(proc)
        if text is None:
            bad.append((proc, "no output file"))
        elif text.strip() != expected_output(proc):
            bad.append((proc, f"output {text.strip()[:80]!r} is not {expected_output(proc)[:30]}..."))
    return bad


# A starter's own view of its shadow (StarterLog lines "(pid:N) ..."): a starter whose last
# word on it is "Lost connection" waits for a reconnect the shadow may not try for minutes
# (seen: 137 s after a 47 s cut, the shadow noticing only then that updates had stopped).
STARTER_LINE = re.compile(r"\(pid:(\d+)\) (Lost connection to shadow|Recovered connection to shadow|"
                          r"Communicating with shadow)")


def disconnected_starters(log_text, running_pids):
    """The running starters (by pid) whose latest StarterLog line about their shadow says
    the connection is lost."""
    state = {}
    for line in log_text.splitlines():
        m = STARTER_LINE.search(line)
        if m:
            state[int(m.group(1))] = m.group(2).startswith("Lost")
    return sorted(pid for pid in running_pids if state.get(pid))


# A refused output upload after a reconnect by the same shadow (docs/upstream/
# htcondor-transfer-key.md): the starter's lines are D_ALWAYS, the shadow's D_FULLDEBUG
# (there only when SHADOW_DEBUG asks for it).
STARTER_LOGS, SHADOW_LOGS = f"{CONDOR_LOG_DIR}/StarterLog*", f"{CONDOR_LOG_DIR}/ShadowLog*"
STARTER_REFUSED = "File transfer failed, forcing disconnect|Failed to receive GoAhead message"
SHADOW_REFUSED = "transkey is invalid"


def log_sizes_script(pattern):
    """Shell: `size BYTES INODE PATH` for every log file matching `pattern`."""
    return f'for f in {pattern}; do [ -f "$f" ] && echo "size $(stat -c \'%s %i\' "$f") $f"; done; true\n'


def parse_sizes(text):
    """{path: (bytes, inode)} from log_sizes_script."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0] == "size" and parts[1].isdigit() and parts[2].isdigit():
            out[parts[3]] = (int(parts[1]), int(parts[2]))
    return out


def log_since_script(pattern, sizes, regex):
    """Shell: the lines matching `regex` (grep -E) written to the logs matching `pattern`
    since they had `sizes` ({path: (bytes, inode)}), each prefixed with its file's name; a
    file that is new, another file under the old name, or shorter than its mark (rotated) is
    read whole."""
    cases = "".join(f"    {shlex.quote(path)}) m={int(size)} i={int(inode)};;\n"
                    for path, (size, inode) in sorted(sizes.items()))
    return (f'for f in {pattern}; do\n  [ -f "$f" ] || continue\n  m=0 i=\n  case "$f" in\n{cases}  esac\n'
            '  set -- $(stat -c \'%s %i\' "$f")\n'
            '  if [ "$2" != "$i" ] || [ "$1" -lt "$m" ]; then m=0; fi\n'
            f'  tail -c +$((m + 1)) "$f" | grep -a -E {shlex.quote(regex)} | sed "s|^|${{f##*/}}: |"\n'
            'done; true\n')


def local_root_script():
    """Shell (root): the tree of the jobs without file transfer, writable by the submit user."""
    return f"install -d -m 0755 -o {SUBMIT_USER} -g {SUBMIT_USER} {FAULT_LOCAL_IWD}"


def local_iwd_script(workdir, script):
    """Shell (root) on a worker: a job directory at `workdir` with the job's executable.
    Mode 1777: the starter runs the job as its owner or as nobody, whichever its UID_DOMAIN
    check decides, and either must be able to write the job's output there."""
    d, exe = shlex.quote(workdir), shlex.quote(f"{workdir}/faultjob.sh")
    return (f"{local_root_script()} && rm -rf {d} && install -d -m 1777 -o {SUBMIT_USER} -g {SUBMIT_USER} {d} "
            f"&& printf %s {shlex.quote(script)} > {exe} && chmod 0755 {exe} && chown {SUBMIT_USER}: {exe}")


class CondorFaults:
    """Faults of the HTCondor pool and the fault suite's job batches."""

    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool

    # --- daemons ----------------------------------------------------------------------------
    def daemons(self, host):
        return Daemons(self.ssh, host)

    def kill_daemon(self, host, daemon):
        """SIGKILL one daemon on a host (its condor_master restarts it after a back-off).
        Returns how many processes were killed; RemoteError when none ran (no fault made).
        Undo: the master's restart (wait_running), or start_host."""
        return self.daemons(host).kill(daemon)

    def kill_host(self, host):
        """SIGKILL every HTCondor daemon of a host, as a crash would. Undo: start_host."""
        self.daemons(host).kill_all()

    def start_host(self, host):
        self.daemons(host).start()

    def hold_down(self, host, daemon):
        """SIGKILL a daemon and keep it down (condor_off, so the master does not restart it).
        Undo: bring_back."""
        return self.daemons(host).hold_down(daemon)

    def bring_back(self, host, daemon):
        self.daemons(host).bring_back(daemon)

    def start_and_bring_back(self, host, daemon, if_down=False):
        """Teardown: HTCondor started on `host` and `daemon` on (only if it is not running,
        with `if_down`)."""
        self.daemons(host).start_and_on(daemon, if_down)

    def running(self, host, daemon):
        return self.daemons(host).is_running(daemon)

    def wait_running(self, host, daemon, timeout=120, poll=2):
        """Seconds until a daemon's process runs on a host again."""
        return Daemons(None, host).wait_running(daemon, timeout, poll, running=lambda: self.running(host, daemon))

    def pid(self, host, daemon):
        """The oldest process id of a daemon on a host, or None when it does not run."""
        return self.daemons(host).pid(daemon)

    def restart_schedd(self):
        """A clean restart of the submit host's schedd (condor_restart, graceful, through its
        master). Returns the old schedd's pid, for wait_schedd."""
        old = self.pid(self.pool.submit_host, "schedd")
        self.daemons(self.pool.submit_host).restart_daemon("schedd")
        return old

    def schedd_answering(self, old_pid=None, seen=None):
        """Whether a new schedd (not `old_pid`) runs and answers condor_q now (`seen["pid"]`:
        the schedd's pid found)."""
        seen = {} if seen is None else seen
        seen["pid"] = now = self.pid(self.pool.submit_host, "schedd")
        if now is None or now == old_pid:
            return False
        try:
            self.pool.queued()
            return True
        except RemoteError:
            return False

    def wait_schedd(self, old_pid=None, timeout=300, poll=2):
        """Seconds until a new schedd (not `old_pid`) runs and answers condor_q."""
        seen = {"pid": None}

        def answering():
            return self.schedd_answering(old_pid, seen)

        return float(wait_for("a new schedd answering condor_q", answering, timeout, poll,
                              host=self.pool.submit_host,
                              message=lambda: f"{self.pool.submit_host}: no new schedd answering {timeout} s "
                                              f"after the restart (pid before {old_pid}, now {seen['pid']})"))

    # --- job batches ---------------------------------------------------------------------------
    def submit_batch(self, tag, count, seconds, requirements="(IsDTN =!= True)", release=None):
        """`count` jobs that sleep `seconds` (or until the file `release` exists on their
        worker) and print expected_output(proc); the lease is JOB_LEASE_S, set explicitly
        (a fault shorter than it must not restart a job)."""
        workdir = f"{FAULT_WORKDIR}/{tag}-{time.time_ns()}"
        desc = self._description(count, seconds, requirements, release, file_transfer=True)
        cluster = self.pool.submit(desc, workdir, files={"faultjob.sh": (JOB_SCRIPT, "0755")})
        return Batch(cluster, int(count), workdir, int(seconds))

    def submit_local_batch(self, tag, count, seconds, worker, release=None):
        """The same jobs without file transfer (should_transfer_files = NO), on `worker`:
        their directory, FAULT_LOCAL_IWD/<tag>-<ns>, is made on the submit host (submit file,
        job log) and on the worker (the executable, the jobs' output, which `outputs` reads
        there), and they match only where that directory is (the worker's FileSystemDomain,
        which also keeps condor_submit from adding a clause of its own)."""
        workdir = f"{FAULT_LOCAL_IWD}/{tag}-{time.time_ns()}"
        domain = self.filesystem_domain(worker)
        self.ssh.run(self.pool.submit_host, local_root_script(), timeout=60)
        self.ssh.run(worker, local_iwd_script(workdir, JOB_SCRIPT), timeout=60)
        desc = self._description(count, seconds, f'(TARGET.FileSystemDomain == "{domain}")', release,
                                 file_transfer=False)
        cluster = self.pool.submit(desc, workdir, files={"faultjob.sh": (JOB_SCRIPT, "0755")})
        return Batch(cluster, int(count), workdir, int(seconds), output_host=worker)

    @staticmethod
    def _description(count, seconds, requirements, release, file_transfer):
        args = f"{int(seconds)} $(Process)" + (f" {release}" if release else "")
        return submit_description("faultjob.sh", args, count=int(count), requirements=requirements,
                                  extra={"job_lease_duration": JOB_LEASE_S}, file_transfer=file_transfer)

    def filesystem_domain(self, host):
        """The FILESYSTEM_DOMAIN of a host's HTCondor (RemoteError when it has none)."""
        out = self.ssh.run(host, Daemons.config_val_command("FILESYSTEM_DOMAIN"), check=False, timeout=60).stdout.strip()
        if not out or " " in out:
            raise RemoteError(f"{host}: no FILESYSTEM_DOMAIN from condor_config_val ({out[:80] or 'no output'})")
        return out

    def snapshot(self, batch, label):
        """The batch's jobs now ({proc: ad}), kept under `label`."""
        snap = starts(self.pool.jobs(batch.cluster, START_ATTRS))
        batch.snapshots[label] = snap
        return snap

    def wait_all_running(self, batch, timeout=600, poll=5):
        """Seconds until every job of the batch runs (JobStatus 2); the first time, that
        snapshot is kept as `before`, the baseline of the invariants. RemoteError if a job
        finishes, is held or the time runs out first."""
        last = {}

        def all_running():
            snap = last["snap"] = self.snapshot(batch, "running")
            states = [ad.get("JobStatus") for ad in snap.values()]
            # a job counts from its first start on (NumJobStarts may trail JobStatus briefly)
            started = all(int(ad.get("NumJobStarts") or 0) >= 1 for ad in snap.values())
            if len(snap) == batch.count and started and all(s == JobStatus.RUNNING for s in states):
                batch.snapshots.setdefault("before", snap)  # the baseline the invariants compare with
                return True
            return False

        def left_running():
            done = [p for p, ad in last["snap"].items() if ad.get("JobStatus") in (JobStatus.COMPLETED, JobStatus.HELD,
                                                                                  JobStatus.REMOVED)]
            if done:
                raise RemoteError(f"cluster {batch.cluster}: job {done[0]} left the running state before "
                                  f"the fault ({self.pool.describe_unfinished(batch.cluster)})")

        return float(wait_for(f"every job of cluster {batch.cluster} running", all_running, timeout, poll,
                              host=self.pool.submit_host, fail_fast=left_running,
                              message=lambda: f"cluster {batch.cluster}: not all {batch.count} jobs running after "
                                              f"{timeout} s; {self.pool.describe_unfinished(batch.cluster)}"))

    def job_log(self, batch):
        return self.ssh.run(self.pool.submit_host, f"cat {shlex.quote(batch.workdir)}/job.log",
                            check=False).stdout

    def reconnects(self, batch):
        """The batch's disconnects and reconnects as its job log tells them
        (ClusterEvents.reconnects: {proc: {disconnected, reconnected, failed, seconds}})."""
        return cluster_events(self.job_log(batch), batch.cluster).reconnects

    def wait_reconnected(self, batch, settle=30, timeout=900, poll=5, worker=None, every_job=False):
        """After a fault: wait until every disconnect in the job log has its reconnect (with
        `every_job`, also every job has a reconnect: a new shadow logs no disconnect), no
        starter on `worker` (if given) is still waiting for its shadow, and nothing changed
        for `settle` s; the reconnect counts (`reconnects`), and `batch.reconnected_at`
        is when that state was first seen. The starter's side matters: a shadow notices a
        silent starter only minutes later, so an empty job log does not mean the pair is
        connected."""
        last = {"seen": None, "since": None, "pending": [], "lost": []}

        def reconnected_and_quiet():
            events = self.reconnects(batch)
            pending = [p for p, e in events.items() if e["disconnected"] > e["reconnected"] + e["failed"]]
            if every_job:
                pending += [p for p in range(batch.count) if not events.get(p, {}).get("reconnected")]
            last["pending"] = sorted(set(pending))
            lost = last["lost"] = self.disconnected_starters(worker) if worker else []
            if (events, lost) != last["seen"]:   # a change starts the quiet time again
                last["seen"], last["since"] = (events, lost), time.monotonic()
            return not pending and not lost and time.monotonic() - last["since"] >= settle

        wait_for(f"every job of cluster {batch.cluster} reconnected and quiet for {settle} s",
                 reconnected_and_quiet, timeout, poll, host=self.pool.submit_host,
                 message=lambda: f"cluster {batch.cluster}: jobs {last['pending']} not reconnected "
                                 f"{timeout} s after the fault; starters on {worker} still waiting for "
                                 f"their shadow: {last['lost']}")
        batch.reconnected_at = last["since"]
        return last["seen"][0]

    def disconnected_starters(self, worker):
        """Pids of the running starters on `worker` that have lost their shadow."""
        out = self.ssh.run(worker, "pgrep -x condor_starter; echo --; "
                                   f"cat {CONDOR_LOG_DIR}/StarterLog* 2>/dev/null | grep -a 'shadow'",
                           check=False, timeout=60).stdout
        pids, _sep, logs = out.partition("--\n")
        running = [int(p) for p in pids.split() if p.isdigit()]
        return disconnected_starters(logs, running)

    def finish(self, batch, timeout=900):
        """Wait for the batch to complete; returns {problems (vs the `before` snapshot), lost,
        bad_outputs, reconnects (from the job log), seconds}."""
        if not batch.snapshots.get("before"):
            raise ValueError(f"cluster {batch.cluster}: no `before` snapshot to compare with (wait_all_running first)")
        start = time.monotonic()
        self.pool.wait(batch.cluster, batch.count, timeout=timeout)
        after = self.snapshot(batch, "done")
        problems = compare_starts(batch.snapshots.get("before", {}), after)
        texts = self.outputs(batch)
        bad = bad_outputs(texts, batch.count)
        return {"problems": problems, "lost": lost_jobs(problems), "bad_outputs": bad,
                "reconnects": self.reconnects(batch), "seconds": time.monotonic() - start}

    def outputs(self, batch):
        """{proc: text of out.<proc>} as they came back to the submit host (or, for jobs
        without file transfer, as they are on their worker)."""
        cmd = (f"cd {shlex.quote(batch.workdir)} && for f in out.*; do [ -f \"$f\" ] && "
               f"printf '%s\\t%s\\n' \"${{f#out.}}\" \"$(head -c 400 \"$f\" | tr '\\n' ' ')\"; done")
        out = self.ssh.run(batch.output_host or self.pool.submit_host, cmd, check=False).stdout
        texts = {}
        for line in out.splitlines():
            proc, _sep, text = line.partition("\t")
            if proc.isdigit():
                texts[int(proc)] = text
        return texts

    # --- a refused output upload -----------------------------------------------------------
    def _refusal_logs(self, worker):
        return ((worker, STARTER_LOGS, STARTER_REFUSED), (self.pool.submit_host, SHADOW_LOGS, SHADOW_REFUSED))

    def mark_logs(self, worker):
        """Where the worker's StarterLogs and the submit host's ShadowLogs end now:
        {host: {path: (bytes, inode)}}, for transfer_refusals."""
        return {host: parse_sizes(self.ssh.run(host, log_sizes_script(pattern), check=False, timeout=60).stdout)
                for host, pattern, _regex in self._refusal_logs(worker)}

    def transfer_refusals(self, worker, marks, limit=8):
        """The lines of a refused output upload written since `marks` ("HOST FILE: line"; the
        first `limit`, then how many more): the starter's "File transfer failed, forcing
        disconnect" and, with SHADOW_DEBUG at D_FULLDEBUG, the shadow's "transkey is invalid"."""
        lines = []
        for host, pattern, regex in self._refusal_logs(worker):
            out = self.ssh.run(host, log_since_script(pattern, marks.get(host, {}), regex), check=False,
                               timeout=120).stdout
            lines += [f"{host} {line.strip()}" for line in out.splitlines() if line.strip()]
        return lines[:limit] + ([f"... {len(lines) - limit} more"] if len(lines) > limit else [])
