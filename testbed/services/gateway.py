"""The HTCondor gateway: every `condor_*` command the package runs on a site goes through
one of these, in the spirit of HTCondor's own test framework (Ornithology's
`ClusterHandle.wait`, `JobStatus`).

- `Schedd(ssh, host)`: submit (returns a `Jobs` handle with `wait`), job ads from the queue
  and the history, queue length, removal; the queries a host asks of its pool.
- `Daemons(ssh, host)`: kill every daemon or one, hold one down and bring it back, restart,
  is-running (by `constants.comm()`).
- `ConfigFragment(ssh, host, path)`: install or remove a config.d fragment, then reconfig
  (or restart, and on a central manager restart HAD).
- `Advertise`: condor_advertise lines (ads sent as a daemon would send them).
"""
import json
import re
import shlex
import time
from dataclasses import dataclass

from testbed.model.constants import CONDOR_UNIT, SUBMIT_USER, JobStatus, comm
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services import job_events
from testbed.services.job_events import UNFINISHED_ATTRS, describe_jobs

WAIT_ATTRS = ["ClusterId", "ProcId", "JobStatus", "RemoteHost", "LastRemoteHost", "HoldReason"]


class _StillQueued(Exception):
    """Jobs still queued when a removal's time ran out (not an error: the count is returned)."""


def parse_terse(out):
    """`condor_submit -terse` output ('12.0 - 12.3') -> (cluster, count)."""
    first, _sep, last = out.strip().splitlines()[-1].partition(" - ")
    cluster = int(first.split(".")[0])
    try:
        count = int(last.split(".")[1]) - int(first.split(".")[1]) + 1
    except (IndexError, ValueError):   # one job (no range), or a form this does not know
        count = 1
    return cluster, count


@dataclass
class Jobs:
    """A submitted cluster (Ornithology's ClusterHandle): where it is queued and how many;
    `submitted`, the submit host's clock (epoch s) just before condor_submit, when asked for."""
    schedd: "Schedd"
    cluster: int
    count: int
    submitted: float = None

    def wait(self, condition="complete", timeout=600, poll=5, progress=None):
        """Wait until the cluster's jobs meet `condition` ("complete": `count` completed);
        returns their ads. Held job: RemoteError naming the hold reason."""
        if condition != "complete":
            raise ValueError(f"unknown job condition {condition!r}")
        return self.schedd.wait(self.cluster, self.count, timeout, poll, progress)


class Schedd:
    """One schedd (the submit host's, the DTN's): its queue, history and the pool it sees."""

    QUEUED_OK = "#QUEUED-OK#"

    def __init__(self, ssh, host):
        self.ssh, self.host = ssh, host

    def as_user(self, command):
        return f"sudo -u {SUBMIT_USER} -H bash -c {shlex.quote(command)}"

    def submit(self, description, workdir, files=None, setup=None, timeout=None, stamp=False):
        """Write files + submit description into workdir (as the submit user); condor_submit.
        `setup` commands run in workdir before condor_submit. Returns a `Jobs` handle
        (`stamp`: with the host's clock read just before condor_submit)."""
        prepare = list(setup or [])
        setup = [f"rm -rf {workdir} && mkdir -p {workdir} && cd {workdir}"]
        for name, (content, mode) in (files or {}).items():
            setup.append(f"printf %s {shlex.quote(content)} > {name}" + (f" && chmod {mode} {name}" if mode else ""))
        setup += prepare
        setup.append(f"printf %s {shlex.quote(description)} > job.sub")
        if stamp:
            setup.append("echo submitted $(date +%s.%N)")
        setup.append("condor_submit -terse job.sub")
        kwargs = {"timeout": timeout} if timeout else {}
        out = self.ssh.run(self.host, self.as_user(" && ".join(setup)), **kwargs).stdout
        cluster, count = parse_terse(out)
        m = re.search(r"submitted ([0-9.]+)", out) if stamp else None
        return Jobs(self, cluster, count, float(m.group(1)) if m else None)

    def submit_as(self, user, workdir, description, timeout=120):
        """Submit `description` (sent on stdin) as `user` from `workdir` (made, owned by
        them); nothing is printed."""
        self.ssh.run(self.host, f"install -d -o {user} {workdir} && cd {workdir} && "
                                f"sudo -u {user} tee job.sub >/dev/null && sudo -u {user} condor_submit job.sub >/dev/null",
                     input_bytes=description.encode(), timeout=timeout)

    @staticmethod
    def wait_log_command(log, timeout):
        """condor_wait on a job event log (exit 0 once every job in it ended), at most `timeout` s."""
        return f"timeout {int(timeout)} condor_wait {log} >/dev/null"

    def jobs(self, cluster, attrs, as_user=True):
        """Ads of a cluster's jobs, from the queue and the history."""
        proj = ",".join(attrs)
        cmd = (f"condor_q {cluster} -json -attributes {proj} 2>/dev/null; echo '#SPLIT#'; "
               f"condor_history {cluster} -json -attributes {proj} 2>/dev/null")
        out = self.ssh.run(self.host, self.as_user(cmd) if as_user else cmd, check=False, timeout=120).stdout
        ads = {}
        for part in out.split("#SPLIT#"):
            part = part.strip()
            if part:
                for ad in json.loads(part):
                    ads[(ad.get("ClusterId"), ad.get("ProcId"))] = ad
        return list(ads.values())

    def user_log(self, cluster, as_user=True):
        """The job event log the cluster's jobs write (their UserLog, a full path), from the
        queue or the history; None when neither answers with one."""
        cmd = f"condor_q {cluster} -af UserLog 2>/dev/null; condor_history {cluster} -af UserLog -limit 1 2>/dev/null"
        out = self.ssh.run(self.host, self.as_user(cmd) if as_user else cmd, check=False, timeout=120).stdout
        return next((line.strip() for line in out.splitlines() if line.strip().startswith("/")), None)

    def wait(self, cluster, count, timeout=600, poll=5, progress=None, attrs=WAIT_ATTRS, as_user=True):
        """Wait until `count` jobs of the cluster ended, as its job event log says (one file
        read a poll, the schedd not asked); returns their ads from the queue and the history.
        A held job is a RemoteError naming the hold reason, and so are removals that leave
        fewer than `count` jobs to end; on timeout the error describes the unfinished jobs."""
        log = wait_for(f"cluster {cluster}'s job event log", lambda: self.user_log(cluster, as_user),
                       min(timeout, 300), poll, host=self.host).value
        read = f"cat {shlex.quote(log)}"
        seen = {"events": job_events.ClusterEvents()}

        def ended():
            text = self.ssh.run(self.host, self.as_user(read) if as_user else read, check=False, timeout=60).stdout
            events = seen["events"] = job_events.cluster_events(text, cluster)
            if events.held:
                proc, reason = min(events.held.items())
                raise RemoteError(f"job {cluster}.{proc} held: {reason}")
            if events.unreachable(count):
                raise RemoteError(f"cluster {cluster}: {len(events.aborted)} of {len(events.submitted)} jobs "
                                  f"removed, {count} can no longer end")
            if progress:
                progress(len(events.terminated), count)
            return len(events.terminated) >= count

        wait_for(f"cluster {cluster} complete", ended, timeout, poll, host=self.host,
                 message=lambda: f"cluster {cluster}: {len(seen['events'].terminated)} of {count} jobs done after "
                                 f"{timeout} s; " + self.describe_unfinished(cluster))

        def completed_ads():
            done = [a for a in self.jobs(cluster, attrs, as_user) if a.get("JobStatus") == JobStatus.COMPLETED]
            return done if len(done) >= count else False
        # an ended job's ad reaches the history a moment after its event
        return wait_for(f"cluster {cluster}'s ended jobs in the history", completed_ads, 120, poll,
                        host=self.host).value

    def describe_unfinished(self, cluster, limit=3):
        """Why jobs are not done: status counts and, for a few, starts and the last reasons."""
        ads = [a for a in self.jobs(cluster, UNFINISHED_ATTRS) if a.get("JobStatus") != JobStatus.COMPLETED]
        return describe_jobs(ads, limit)

    def query(self, constraint, attrs, timeout=120):
        """Ads (-json) of every user's queued jobs matching a ClassAd `constraint`."""
        out = self.ssh.run(self.host, f"condor_q -all -constraint {shlex.quote(constraint)} -json -attributes "
                                      f"{','.join(attrs)}", timeout=timeout)
        text = out.stdout.strip()
        return json.loads(text) if text else []

    def queued(self, constraint=None):
        """How many jobs of any user (matching `constraint`, a ClassAd expression, when
        given) are in the queue. A schedd that does not answer is a RemoteError, not an
        empty queue: the count is only trusted when condor_q exited 0 (only then does a
        sentinel line follow its output)."""
        match = "" if constraint is None else f" -constraint {shlex.quote(constraint)}"
        cmd = f"condor_q -all{match} -af ClusterId && echo '{self.QUEUED_OK}'"
        out = self.ssh.run(self.host, cmd, check=False)
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        if not out.ok or not lines or lines[-1].strip() != self.QUEUED_OK:
            detail = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
            raise RemoteError(f"{self.host}: condor_q failed (rc {out.rc}), the queue length "
                              f"is unknown: {detail}")
        return sum(1 for line in lines[:-1] if line.strip().isdigit())

    def rm(self, constraint=None, force=False):
        """condor_rm (no wait) the jobs matching `constraint` (None: every job)."""
        which = "-all" if constraint is None else f"-constraint {shlex.quote(constraint)}"
        self.ssh.run(self.host, f"condor_rm {which}" + (" -forcex" if force else ""), check=False)

    def rm_cluster(self, cluster):
        """condor_rm one cluster (as root; failures ignored)."""
        self.ssh.run(self.host, f"condor_rm {cluster}", check=False)

    @staticmethod
    def remote_client_command(action, schedd, pool):
        """A client tool asking a remote schedd (-debug, for what it says about security):
        read its queue (action=read) or submit job.sub to it (action=submit)."""
        if action == "read":
            return f"condor_q -debug -name {shlex.quote(schedd)} -pool {shlex.quote(pool)} -all -af ClusterId"
        if action == "submit":
            return f"condor_submit -debug -remote {shlex.quote(schedd)} -pool {shlex.quote(pool)} job.sub"
        raise ValueError(action)

    @staticmethod
    def rm_quiet_command(constraint, user=None):
        """The command that removes the jobs matching `constraint` (as `user`), ignoring
        failures (for run_many over several schedds)."""
        sudo = f"sudo -u {user} " if user else ""
        return f"{sudo}condor_rm -constraint {shlex.quote(constraint)} >/dev/null 2>&1; true"

    def remove(self, constraint=None, timeout=300, force_after=120, poll=5):
        """condor_rm the jobs matching `constraint` (None: every job) and wait until they
        have left the queue. Only jobs still there after `force_after` s are forced out
        (-forcex): forcing a running job out at once drops its shadow before it has told
        the starter, which then waits out the job lease (40 min) with its slot stuck in
        Preempting/Vacating. Returns the jobs left after `timeout` s."""
        self.rm(constraint)
        state = {"left": 0, "forced": False, "started": time.monotonic()}

        def gone():
            state["left"] = self.queued(constraint)
            return not state["left"]

        def force():
            if not state["forced"] and time.monotonic() - state["started"] > force_after:
                self.rm(constraint, force=True)
                state["forced"] = True

        try:
            wait_for("the removed jobs out of the queue", gone, timeout, poll, host=self.host,
                     fail_fast=force, error=_StillQueued)
        except _StillQueued:
            pass
        return state["left"]

    @staticmethod
    def observe_script(constraint):
        """One command: the states of the queued jobs matching `constraint` (section #Q,
        #QOK when condor_q answered) and the slot ads (#S, #SOK); parsers.parse_observation
        reads it."""
        constraint = shlex.quote(constraint)
        return (f"echo '#Q'; condor_q -all -constraint {constraint} -af JobStatus 2>&1 && echo '#QOK'; "
                f"echo '#S'; condor_status -af Name State 2>&1 && echo '#SOK' || echo \"condor_status exit $?\"; true")

    @staticmethod
    def pool_probe_script():
        """The pool as this host's collectors list it, one `key=value` line per ad: HAD
        leaders (had=), slots (slot=), startds with their address (startd=), collectors."""
        return ("\ncondor_status -subsystem had -af Name HadIsActive 2>/dev/null | sed 's/^/had=/'\n"
                "condor_status -af Machine Name 2>/dev/null | sed 's/^/slot=/'\n"
                "condor_status -startd -af Machine Name MyAddress 2>/dev/null | sed 's/^/startd=/'\n"
                "condor_status -collector -af Machine 2>/dev/null | sed 's/^/collector=/'\n")

    @staticmethod
    def analyze_command(constraint, lines=60):
        """Why the jobs of `constraint` do not run, as the schedd explains it (condor_q
        -better-analyze), its first `lines` lines."""
        return f"condor_q -better-analyze -constraint {shlex.quote(constraint)} 2>&1 | head -{int(lines)}"

    def reschedule(self):
        self.ssh.run(self.host, "condor_reschedule >/dev/null 2>&1", check=False, timeout=60)

    def status(self, args, check=False, timeout=None):
        """`condor_status <args>` run on this host (the pool it sees); the SSH result."""
        return self.ssh.run(self.host, f"condor_status {args}", check=check, timeout=timeout)

    def status_by_pool(self, pools, args, timeout=60, then=""):
        """{pool: output} of `condor_status -pool <pool> <args>` for each of `pools` (a
        collector host[:port]), asked in one command; '' for a pool that printed nothing.
        `then`: shell text after each condor_status (e.g. `&& echo ...`)."""
        res = self.ssh.run(self.host, "; ".join(f"echo '#{i}'; condor_status -pool {t} {args} 2>/dev/null{then}"
                                                for i, t in enumerate(pools)), check=False, timeout=timeout)
        return {t: (res.stdout.split(f"#{i}\n", 1)[-1].split(f"#{i + 1}\n", 1)[0] if f"#{i}" in res.stdout else "")
                for i, t in enumerate(pools)}

    ANSWERED = "#ANSWERED#"

    def answers_by_pool(self, pools, args, timeout=60):
        """{pool: output, or None when that collector did not answer (condor_status failed)}:
        `status_by_pool` that tells an empty answer from none."""
        out = self.status_by_pool(pools, args, timeout, then=f" && echo '{self.ANSWERED}'")
        return {t: text.replace(f"{self.ANSWERED}\n", "").replace(self.ANSWERED, "") if self.ANSWERED in text else None
                for t, text in out.items()}


class Advertise:
    """condor_advertise command lines, each over TCP to one collector (`pool`: host[:port]
    or a shell word such as "$2"): one ad per process (a connection and a security
    handshake of its own), many ads over one connection, or an invalidation query."""

    @staticmethod
    def one(pool, ad_file):
        return f"condor_advertise -pool {pool} -tcp UPDATE_STARTD_AD {ad_file}"

    @staticmethod
    def many(pool, ads_file):
        return f"condor_advertise -pool {pool} -tcp -multiple UPDATE_STARTD_AD {ads_file}"

    @staticmethod
    def invalidate(pool, query_file):
        return f"condor_advertise -pool {pool} -tcp INVALIDATE_STARTD_ADS {query_file}"


def parse_killed(text):
    """N of the `killed=N` line a kill script prints (0 without one)."""
    m = re.search(r"^killed=(\d+)$", text, re.MULTILINE)
    return int(m.group(1)) if m else 0


class Daemons:
    """The HTCondor daemons of one host."""

    def __init__(self, ssh, host):
        self.ssh, self.host = ssh, host

    def kill_all(self):
        """SIGKILL every HTCondor daemon of the host, as a crash would. Undo: start."""
        self.ssh.run(self.host, f"systemctl kill -s KILL {CONDOR_UNIT}; systemctl stop {CONDOR_UNIT} || true")

    def start(self):
        self.ssh.run(self.host, f"systemctl start {CONDOR_UNIT}")

    START_IF_DOWN = f"systemctl is-active -q {CONDOR_UNIT} || systemctl start {CONDOR_UNIT}"

    @classmethod
    def start_where_down(cls, ssh, hosts, timeout=120):
        """HTCondor started on every one of `hosts` where it is not running (killed or
        stopped), all at once; {host: Result}, a failure said there, not raised."""
        return ssh.run_many({h: cls.START_IF_DOWN for h in hosts}, timeout=timeout)

    RESTART = f"systemctl restart {CONDOR_UNIT}"

    def restart(self, check=True, timeout=None):
        return self.ssh.run(self.host, self.RESTART, check=check, timeout=timeout)

    @staticmethod
    def kill_script(daemon):
        """SIGKILL every process of one daemon; prints `killed=N` (how many there were)."""
        name = comm(daemon)
        return f"n=$(pgrep -c -x {name} || true); pkill -KILL -x {name} || true; echo killed=${{n:-0}}"

    def kill(self, daemon):
        """SIGKILL every process of one daemon (its master restarts it after a back-off).
        Returns how many processes were killed; RemoteError when none ran."""
        killed = parse_killed(self.ssh.run(self.host, self.kill_script(daemon)).stdout)
        if not killed:
            raise RemoteError(f"{self.host}: no {comm(daemon)} process to kill")
        return killed

    # SIGKILL every collector process without -local-name (the top-level one); fails when none
    KILL_TOP_COLLECTOR = (f"n=0; for p in $(pgrep -x {comm('collector')}); do tr '\\0' ' ' < /proc/$p/cmdline | "
                          "grep -q -- -local-name || { kill -KILL $p && n=$((n+1)); }; done; [ $n -gt 0 ]")

    def kill_top_collector(self):
        """SIGKILL the top-level collector only (a child collector, -local-name COLLECTOR2,
        has the same process name); its master restarts it, as after a crash."""
        self.ssh.run(self.host, self.KILL_TOP_COLLECTOR)

    def off(self, daemon, fast=False):
        """condor_off one daemon: the master keeps it down until `on`."""
        if fast:
            self.ssh.run(self.host, f"condor_off -fast -daemon {daemon} >/dev/null 2>&1 || true; "
                                    f"pkill -KILL -x {comm(daemon)} || true")
        else:
            self.ssh.run(self.host, f"condor_off -daemon {daemon} >/dev/null")

    def hold_down(self, daemon):
        """SIGKILL a daemon and keep it down (condor_off, so the master does not restart it).
        Returns how many processes were killed. Undo: bring_back."""
        killed = self.kill(daemon)
        self.off(daemon, fast=True)
        return killed

    def on(self, daemon, check=True, quiet=False):
        self.ssh.run(self.host, self.on_command(daemon, quiet), check=check)

    bring_back = on

    @staticmethod
    def on_command(daemon, quiet=False):
        return f"condor_on -daemon {daemon}" + (" >/dev/null 2>&1; true" if quiet else "")

    def start_and_on(self, daemon, if_down=False):
        """Start the unit, then (should the master keep `daemon` off) condor_on it; with
        `if_down`, only when its process is not running. Failures are ignored (a teardown)."""
        on = f"pgrep -x {comm(daemon)} >/dev/null || condor_on -daemon {daemon}" if if_down \
            else f"condor_on -daemon {daemon}"
        self.ssh.run(self.host, f"systemctl start {CONDOR_UNIT}; {on}", check=False)

    @staticmethod
    def collector_restart_script(tries=12, pause=5):
        """Restart the host's collector through its master. 23.9's `condor_restart -subsystem
        collector` is refused ("Can't send Kill-Daemon command to local collector") while the
        collector is still coming back from a reconfig or an earlier restart (seen on `small`
        within seconds of one), so it is retried; a collector that never takes it fails
        with that message."""
        return (f"ok=; for i in $(seq {tries}); do "
                f"if out=$(condor_restart -subsystem collector 2>&1); then ok=1; break; fi; sleep {pause}; done; "
                f"[ -n \"$ok\" ] || {{ echo \"collector restart refused {tries} times: $out\" >&2; exit 1; }}")

    @staticmethod
    def config_dump_command(awk_name_regex):
        """Every knob of the configuration whose name matches (an awk regex), printed
        expanded: `NAME = value` lines."""
        return ("for n in $(condor_config_val -dump 2>/dev/null | "
                f"awk -F' = ' '$1 ~ /{awk_name_regex}/ {{print $1}}' | sort -u); do "
                "echo \"$n = $(condor_config_val \"$n\" 2>/dev/null)\"; done")

    @staticmethod
    def config_val_command(key):
        """The value of a knob as the running master has it (it has reconfigured), else
        as the files have it."""
        q = shlex.quote(key)
        return f"condor_config_val -master {q} 2>/dev/null || condor_config_val {q}"

    @staticmethod
    def config_vals_command(keys):
        """The values of knobs as the running master has them, one line each in order (a knob
        it lacks prints `Not defined: NAME` in its place), from one condor_config_val."""
        return "condor_config_val -master " + " ".join(shlex.quote(k) for k in keys) + " 2>/dev/null"

    # every knob of the release's own parameter table with its default, raw, as `NAME = value`
    # lines (no configuration file is read), and every knob of the host's configuration, expanded
    DEFAULTS_DUMP = "CONDOR_CONFIG=ONLY_ENV condor_config_val -dump 2>/dev/null"
    CONFIG_DUMP = "condor_config_val -dump -expand 2>/dev/null"

    def restart_daemon(self, daemon):
        """A clean restart of one daemon through its master (condor_restart, graceful)."""
        self.ssh.run(self.host, f"condor_restart -daemon {daemon}")

    @staticmethod
    def count_command(daemon):
        """Prints how many processes of a daemon run (0 when none)."""
        return f"pgrep -c -x {comm(daemon)} || true"

    def is_running(self, daemon):
        res = self.ssh.run(self.host, f"pgrep -x {comm(daemon)} >/dev/null && echo yes || echo no", check=False)
        return res.ok and res.stdout.strip() == "yes"

    def pid(self, daemon):
        """The oldest process id of a daemon, or None when it does not run."""
        res = self.ssh.run(self.host, f"pgrep -o -x {comm(daemon)}", check=False)
        return int(res.stdout.split()[0]) if res.ok and res.stdout.split() else None

    def wait_running(self, daemon, timeout=120, poll=2, running=None):
        """Seconds until a daemon's process runs again (`running`: the check, default is_running)."""
        running = running or (lambda: self.is_running(daemon))
        return float(wait_for(f"{comm(daemon)} running", running, timeout, poll, host=self.host,
                              message=f"{self.host}: {comm(daemon)} not running {timeout} s later"))

    def wait_stopped(self, daemon, timeout=60, poll=2, running=None):
        """Seconds until a daemon's process is gone (after condor_off)."""
        running = running or (lambda: self.is_running(daemon))
        return float(wait_for(f"{comm(daemon)} stopped", lambda: not running(), timeout, poll, host=self.host,
                              message=f"the {daemon} on {self.host} still runs {timeout} s after condor_off"))


def reconfig_command(restart_had=False):
    """condor_reconfig; on a central manager HAD restarts too (23.9's HAD drops its leader
    state on reconfig)."""
    return "condor_reconfig >/dev/null" + ("; condor_restart -subsystem had >/dev/null" if restart_had else "")


class ConfigFragment:
    """One config.d fragment of one host: install (text) or remove ('') it, and make the
    daemons read it when it changed."""

    def __init__(self, ssh, host, path):
        self.ssh, self.host, self.path = ssh, host, path

    def script(self, text, restart_had=False, make_dirs=(), restart=False, restart_on=()):
        """Install (text) or remove ('') the fragment; reconfig when it changed (`restart`:
        restart HTCondor instead, e.g. for a slot layout; `restart_on`: knob names whose
        lines, when they differ between the old and the new fragment, make it a restart and
        otherwise a reconfig - a startd's slots change only when it restarts, while the
        master starts and stops the startds of its DAEMON_LIST on a reconfig). `make_dirs`:
        directories under $(EXECUTE) made first (owned by condor), e.g. for added startds."""
        path = self.path
        then, before, after = ("systemctl restart condor" if restart else reconfig_command(restart_had)), "", ""
        if restart_on and not restart:
            knobs = "|".join(restart_on)
            if not re.fullmatch(r"[A-Za-z0-9_.|]+", knobs):
                raise ValueError(f"restart_on names knobs, not {restart_on!r}")
            before = f"before=$(grep -E '^({knobs}) *=' {path} 2>/dev/null || true); "
            after = f"after=$(grep -E '^({knobs}) *=' {path}.new || true); "
            then = (f'if [ "$before" != "${{after:-}}" ]; then systemctl restart condor; '
                    f"else {reconfig_command(restart_had)}; fi")
        if not text:
            return f"if [ -e {path} ]; then {before}rm -f {path}; {then}; fi; true"
        dirs = ""
        if make_dirs:
            names = " ".join(shlex.quote(d) for d in make_dirs)
            dirs = (f"execute=$(condor_config_val EXECUTE) && for d in {names}; do "
                    f'install -d -m 0755 -o condor -g condor "$execute/$d" || exit 1; done && ')
        return (f"{dirs}printf %s {shlex.quote(text)} > {path}.new && if ! cmp -s {path}.new {path}; then "
                f"{before}{after}mv {path}.new {path}; {then}; else rm -f {path}.new; fi")

    def install(self, text, restart_had=False, make_dirs=(), timeout=120):
        return self.ssh.run(self.host, self.script(text, restart_had, make_dirs), timeout=timeout)

    def remove(self, restart_had=False, timeout=120):
        return self.ssh.run(self.host, self.script("", restart_had), timeout=timeout)

    def exists_command(self):
        return f"test -e {self.path} && echo yes || echo no"


def apply_fragments(ssh, scripts, what, error=RemoteError, timeout=120):
    """Run several hosts' fragment scripts ({host: script}) at once; `error(what + the
    failures)` naming every host where one failed. Returns the hosts."""
    res = ssh.run_many(scripts, timeout=timeout)
    bad = [f"{h}: {(r.stderr or r.stdout).strip()[-160:]}" for h, r in res.items() if not r.ok]
    if bad:
        raise error(what + "; ".join(bad))
    return sorted(scripts)
