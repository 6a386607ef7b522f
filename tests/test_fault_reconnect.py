"""The fault suite's worker-cut rows: jobs without file transfer work in a
directory on their worker, a cut around a schedd restart ends once the new shadows run,
the refused uploads of HTCondor's transfer-key defect are found in the logs a row wrote,
and a row broken by that known defect is reported SKIP - not a failure of the run - only
with its evidence. SSH is faked; the shell scripts and Robot run for real."""
import re
import shlex
import subprocess
import sys
import types

import pytest

from testbed import PROJECT_ROOT
from testbed.experiments.faults import fault_reconnect as fr, faults as fx
from testbed.harness import registry, runner
from testbed.injectors import condor_faults as fc, network_faults as fn
from testbed.model import topology
from testbed.model.constants import FAULT_LOCAL_IWD, JOB_LEASE_S, RESTART_CUT_HOLD_S, TRANSFER_KEY_DEFECT_DOC
from testbed.model.errors import RemoteError
from testbed.remote.site import Site
from testbed.remote.ssh import Result
from testbed.results import runs
from testbed.services import job_events
from testbed.services.condor import submit_description
from tests.test_faults import FakePool, FakeSSH, _rows, ad


@pytest.fixture
def small():
    return topology.load("small")


class HostSSH(FakeSSH):
    """FakeSSH whose answers may name the host: (host or None, pattern, stdout, rc)."""

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        for want, pattern, out, rc in self.answers:
            if want in (None, host) and pattern in command:
                return Result(host, rc, out, "")
        return Result(host, 0, "", "")


# --- jobs without file transfer -----------------------------------------------------------------
def test_a_job_without_file_transfer_says_so_and_names_no_time_to_transfer():
    desc = submit_description("x.sh", "1", file_transfer=False)
    assert "should_transfer_files = NO" in desc and "when_to_transfer_output" not in desc
    assert "should_transfer_files = YES" not in desc
    desc = submit_description("x.sh", "1")
    assert "should_transfer_files = YES" in desc and "when_to_transfer_output = ON_EXIT" in desc


def test_a_local_batch_has_its_directory_on_both_hosts_and_matches_only_that_worker(small):
    ssh = HostSSH([("worker1", "condor_config_val FILESYSTEM_DOMAIN", "worker1.small.testbed\n", 0)])
    pool = FakePool([[ad(0)]])
    batch = fc.CondorFaults(small, ssh, pool).submit_local_batch("cut-local", 2, 90, "worker1", release="/run/r")
    desc, workdir, files = pool.submitted[0]
    assert workdir.startswith(f"{FAULT_LOCAL_IWD}/cut-local-") and batch.workdir == workdir
    assert batch.output_host == "worker1" and files["faultjob.sh"] == (fc.JOB_SCRIPT, "0755")
    assert 'requirements = (TARGET.FileSystemDomain == "worker1.small.testbed")' in desc
    assert "should_transfer_files = NO" in desc and "arguments = 90 $(Process) /run/r" in desc
    assert f"job_lease_duration = {JOB_LEASE_S}" in desc and "queue 2" in desc
    on_worker = [c for h, c in ssh.commands if h == "worker1"]
    assert any(shlex.quote(workdir) in c and shlex.quote(fc.JOB_SCRIPT) in c for c in on_worker)
    assert ("submit", fc.local_root_script()) in ssh.commands


def test_a_worker_without_a_filesystem_domain_gets_no_jobs(small):
    pool = FakePool([[ad(0)]])
    with pytest.raises(RemoteError, match="worker1: no FILESYSTEM_DOMAIN"):
        fc.CondorFaults(small, HostSSH(), pool).submit_local_batch("cut-local", 1, 90, "worker1")
    assert pool.submitted == []


def test_outputs_of_a_local_batch_are_read_on_its_worker(small):
    line = f"0\t{fc.expected_output(0)}\n"
    ssh = HostSSH([("worker1", "out.*", line, 0)])
    faults = fc.CondorFaults(small, ssh, FakePool([[ad(0)]]))
    assert faults.outputs(fc.Batch(7, 1, "/srv/tb-faults/x", 9, output_host="worker1")) == {0: fc.expected_output(0)}
    assert faults.outputs(fc.Batch(7, 1, "/srv/tb-faults/x", 9)) == {}   # the submit host has none
    assert [h for h, _c in ssh.commands] == ["worker1", "submit"]


def test_the_worker_directory_script_makes_a_runnable_job_anyone_can_write_beside(tmp_path, monkeypatch):
    import getpass
    import grp
    import os
    monkeypatch.setattr(fc, "FAULT_LOCAL_IWD", str(tmp_path / "root"))
    monkeypatch.setattr(fc, "SUBMIT_USER", getpass.getuser())
    user_group = grp.getgrgid(os.getgid()).gr_name
    if user_group != getpass.getuser():
        pytest.skip("the script names the submit user's own group, which this user does not have")
    workdir = tmp_path / "root" / "cut-local-1"
    workdir.mkdir(parents=True)
    (workdir / "stale").write_text("from an earlier row")
    proc = subprocess.run(["sh", "-c", fc.local_iwd_script(str(workdir), fc.JOB_SCRIPT)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert oct(workdir.stat().st_mode & 0o7777) == "0o1777" and not (workdir / "stale").exists()
    release = tmp_path / "release"
    release.touch()
    out = subprocess.run([str(workdir / "faultjob.sh"), "30", "1", str(release)], capture_output=True,
                         text=True, timeout=20).stdout
    assert out.strip() == fc.expected_output(1)


# --- the logs of a refused upload --------------------------------------------------------------
def test_log_lines_since_a_mark_only_what_the_row_wrote(tmp_path):
    kept, rotated = tmp_path / "StarterLog.startd1", tmp_path / "StarterLog.startd2"
    kept.write_text("01/01/26 00:00:00 (pid:1) File transfer failed, forcing disconnect.\n")
    rotated.write_text("a line that goes with the rotation\n")
    pattern = f"{tmp_path}/StarterLog*"
    marks = fc.parse_sizes(subprocess.run(["sh", "-c", fc.log_sizes_script(pattern)],
                                          capture_output=True, text=True).stdout)
    assert marks == {str(kept): (kept.stat().st_size, kept.stat().st_ino),
                     str(rotated): (35, rotated.stat().st_ino)}
    with kept.open("a") as f:
        f.write("05/01/26 10:00:00 (pid:12) File transfer failed, forcing disconnect.\n"
                "05/01/26 10:00:01 (pid:12) Recovered connection to shadow after 137 seconds\n")
    rotated.rename(tmp_path / "old")   # HTCondor rotates by renaming: a new file, longer than the mark
    rotated.write_text("05/01/26 10:00:02 (pid:13) Failed to receive GoAhead message from <10.160.0.10:9618>.\n")
    (tmp_path / "StarterLog.startd3").write_text("y File transfer failed, forcing disconnect.\n")   # new
    out = subprocess.run(["sh", "-c", fc.log_since_script(pattern, marks, fc.STARTER_REFUSED)],
                         capture_output=True, text=True).stdout
    assert out.splitlines() == [
        "StarterLog.startd1: 05/01/26 10:00:00 (pid:12) File transfer failed, forcing disconnect.",
        "StarterLog.startd2: 05/01/26 10:00:02 (pid:13) Failed to receive GoAhead message from <10.160.0.10:9618>.",
        "StarterLog.startd3: y File transfer failed, forcing disconnect."]
    shorter = {str(kept): (10 ** 6, kept.stat().st_ino)}   # same file, cut below its mark
    out = subprocess.run(["sh", "-c", fc.log_since_script(pattern, shorter, fc.STARTER_REFUSED)],
                         capture_output=True, text=True).stdout
    assert out.splitlines()[:2] == ["StarterLog.startd1: 01/01/26 00:00:00 (pid:1) File transfer failed, "
                                    "forcing disconnect.", "StarterLog.startd1: 05/01/26 10:00:00 (pid:12) "
                                    "File transfer failed, forcing disconnect."]


def test_transfer_refusals_read_each_hosts_logs_since_its_own_marks(small):
    ssh = HostSSH([
        ("worker1", 'echo "size', "size 10 501 /var/log/condor/StarterLog.startd1\n", 0),
        ("submit", 'echo "size', "size 99 77 /var/log/condor/ShadowLog\n", 0),
        ("worker1", "tail -c", "StarterLog.startd1: a File transfer failed, forcing disconnect.\n"
                               "StarterLog.startd1: b File transfer failed, forcing disconnect.\n", 0),
        ("submit", "tail -c", "ShadowLog: 05/01/26 10:00:00 transkey is invalid!\n", 0)])
    faults = fc.CondorFaults(small, ssh, FakePool([[ad(0)]]))
    marks = faults.mark_logs("worker1")
    assert marks == {"worker1": {"/var/log/condor/StarterLog.startd1": (10, 501)},
                     "submit": {"/var/log/condor/ShadowLog": (99, 77)}}
    lines = faults.transfer_refusals("worker1", marks, limit=2)
    assert lines == ["worker1 StarterLog.startd1: a File transfer failed, forcing disconnect.",
                     "worker1 StarterLog.startd1: b File transfer failed, forcing disconnect.", "... 1 more"]
    scripts = {h: c for h, c in ssh.commands[-2:]}
    assert "m=10 i=501;;" in scripts["worker1"] and "StarterLog*" in scripts["worker1"]
    assert "m=99 i=77;;" in scripts["submit"] and "transkey is invalid" in scripts["submit"]


# --- reconnects by new shadows -------------------------------------------------------------------
NEW_SHADOW_LOG = """000 (012.000.000) 2026-11-23 07:20:00 Job submitted from host: <10.160.0.10:9618>
...
023 (012.000.000) 2026-11-23 07:21:42 Job reconnected to slot1@startd1@worker1.small.testbed
...
"""
BOTH_RECONNECTED = NEW_SHADOW_LOG + "023 (012.001.000) 2026-11-23 07:21:44 Job reconnected to slot2\n...\n"


def test_a_new_shadow_logs_no_disconnect_so_every_job_must_show_its_reconnect(small, monkeypatch):
    monkeypatch.setattr(fc.time, "sleep", lambda s: None)
    logs = [NEW_SHADOW_LOG, NEW_SHADOW_LOG, BOTH_RECONNECTED]
    ssh = FakeSSH([("job.log", lambda _c: logs.pop(0) if len(logs) > 1 else logs[0], 0)])
    batch = fc.Batch(12, 2, "/home/tb/faults/cut-schedd-1", 60)
    faults = fc.CondorFaults(small, ssh, FakePool())
    events = faults.wait_reconnected(batch, settle=0, every_job=True)
    assert events[1]["reconnected"] == 1 and len(logs) == 1 and batch.reconnected_at is not None
    # without every_job, job 1's silence would have counted as connected
    assert (faults.wait_reconnected(fc.Batch(12, 2, "/w", 60), settle=0)
            == job_events.cluster_events(BOTH_RECONNECTED, 12).reconnects)


def test_wait_reconnected_names_the_jobs_without_a_reconnect(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    ssh = FakeSSH([("job.log", NEW_SHADOW_LOG, 0)])
    with pytest.raises(RemoteError, match=r"jobs \[1\] not reconnected"):
        fc.CondorFaults(small, ssh, FakePool()).wait_reconnected(fc.Batch(12, 2, "/w", 60), settle=0, timeout=0,
                                                                 every_job=True)


def test_shadows_not_replaced():
    before = fc.starts([ad(0, NumShadowStarts=1), ad(1, NumShadowStarts=1), ad(2, NumShadowStarts=1)])
    after = fc.starts([ad(0, NumShadowStarts=2), ad(1, NumShadowStarts=1)])
    assert fc.shadows_not_replaced(before, after) == [1, 2]
    assert fc.shadows_not_replaced(before, fc.starts([ad(p, NumShadowStarts=3) for p in range(3)])) == []


def test_a_cut_ends_as_soon_as_during_says_so_and_is_healed(small, monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr("testbed.remote.poll.time.monotonic", lambda: clock.now)
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: setattr(clock, "now", clock.now + s))
    monkeypatch.setattr(fn.time, "monotonic", lambda: clock.now)
    ssh = FakeSSH([("systemd-run", "cut-at=100.5 deadman=75\n", 0), ("tc qdisc del", "cut=0\n", 0),
                   ("ping", "3 packets transmitted, 0 received, 100% packet loss\n", 1)])
    r = fn.NetworkFaults(small, ssh).cut_for("worker1", 120, probe_from="submit",
                                             during=lambda: False if clock.now >= 20 else None, poll=5)
    assert 20 <= r["seconds"] < 21 and "tc qdisc del" in ssh.commands[-2][1]


# --- the flows, on fake injectors ---------------------------------------------------------------
class FlowCondor:
    """CondorFaults for the flows: records the calls; the schedd answers from `answers_at`
    (s after the restart) and the new shadows show from `shadows_at`."""

    def __init__(self, clock, problems=(), refusals=(), answers_at=15, shadows_at=20, fail_reconnect=False):
        self.clock, self.calls = clock, []
        self.problems, self.refusals = list(problems), list(refusals)
        self.answers_at, self.shadows_at, self.fail_reconnect = answers_at, shadows_at, fail_reconnect
        self.restarted = None

    def _batch(self, local):
        self.batch = fc.Batch(7, 2, "/w", 9, output_host="worker1" if local else None)
        return self.batch

    def submit_batch(self, tag, count, seconds, requirements, release=None):
        self.calls.append(("submit_batch", requirements, release))
        return self._batch(False)

    def submit_local_batch(self, tag, count, seconds, worker, release=None):
        self.calls.append(("submit_local_batch", worker, release))
        return self._batch(True)

    def wait_all_running(self, batch):
        batch.snapshots["before"] = fc.starts([ad(p, NumShadowStarts=1) for p in range(2)])

    def mark_logs(self, worker):
        return {worker: {}}

    def restart_schedd(self):
        self.restarted = self.clock.now
        self.calls.append(("restart_schedd", self.clock.now))
        return 100

    def _since(self):
        return self.clock.now - self.restarted

    def schedd_answering(self, old_pid=None):
        return self._since() >= self.answers_at

    def snapshot(self, batch, label):
        shadows = 2 if self._since() >= self.shadows_at else 1
        return fc.starts([ad(p, NumShadowStarts=shadows) for p in range(2)])

    def wait_schedd(self, old_pid=None, timeout=300):
        self.calls.append(("wait_schedd", old_pid))
        self.clock.now = max(self.clock.now, self.restarted + self.answers_at)
        return 1.0

    def wait_reconnected(self, batch, settle=30, worker=None, every_job=False):
        self.calls.append(("wait_reconnected", every_job))
        if self.fail_reconnect:
            raise RemoteError("not reconnected")
        self.clock.now += 30
        batch.reconnected_at = self.clock.now

    def finish(self, batch, timeout=900):
        batch.snapshots["done"] = fc.starts([ad(p, NumShadowStarts=2 if p == 0 else 1) for p in range(2)])
        return {"problems": self.problems, "lost": len(self.problems), "bad_outputs": [], "reconnects": {}}

    def transfer_refusals(self, worker, marks):
        return self.refusals


class FlowNet:
    """cut_for on a fake clock: `during` every `poll` s until the bound or a False."""

    def __init__(self, clock):
        self.clock = clock

    def cut_for(self, host, seconds, probe_from, during=None, poll=10):
        started = self.clock.now
        self.clock.now += 3   # the ping that checks the cut holds
        while self.clock.now - started < seconds:
            if during and during() is False:
                break
            self.clock.now += poll
        return {"seconds": self.clock.now - started, "loss_during": 100.0, "loss_after": 0.0}


def flow_suite(small, monkeypatch, **condor):
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(fr.time, "monotonic", lambda: clock.now)
    ssh = FakeSSH()
    suite = fx.FaultSuite(small, ssh, FakePool([[ad(0)]]))
    suite.condor, suite.net = FlowCondor(clock, **condor), FlowNet(clock)
    return suite, ssh


def test_a_cut_without_file_transfer_uses_a_local_batch_and_always_releases_its_jobs(small, monkeypatch):
    suite, ssh = flow_suite(small, monkeypatch, fail_reconnect=True)
    with pytest.raises(RemoteError):
        suite.worker_cut(2, 45, 30, file_transfer=False)
    kind, worker, release = suite.condor.calls[0]
    assert kind == "submit_local_batch" and worker == "worker1" and release.startswith("/run/")
    assert ("worker1", f"touch {release}") in ssh.commands


def test_a_cut_says_it_is_the_known_defect_only_with_restarts_and_refused_uploads(small, monkeypatch):
    refused = ["worker1 StarterLog.startd1: File transfer failed, forcing disconnect."]
    for problems, refusals, want in (([], refused, ""), (["job 0 started again (NumJobStarts 1 -> 2)"], [], ""),
                                     (["job 0 started again (NumJobStarts 1 -> 2)"], refused, "htcondor-transfer-key")):
        suite, _ssh = flow_suite(small, monkeypatch, problems=problems, refusals=refusals)
        r = suite.worker_cut(2, 45, 30)
        assert r["known_defect"] == want and r["transfer_refusals"] == refusals
        assert suite.condor.calls[0][0] == "submit_batch" and r["reconnected_after_cut"] == 30


def test_a_cut_around_a_schedd_restart_ends_once_the_new_shadows_run(small, monkeypatch):
    suite, _ssh = flow_suite(small, monkeypatch, answers_at=15, shadows_at=20)
    r = suite.schedd_restart_in_cut(2, 120, 30)
    calls = [c[0] for c in suite.condor.calls]
    assert calls.index("restart_schedd") < calls.index("wait_reconnected") and "wait_schedd" not in calls
    assert suite.condor.calls[1] == ("restart_schedd", 1003.0)             # the cut's first tick
    assert r["schedd_back"] == 15 and r["shadows_in_cut"]
    # new shadows seen 20 s after the restart, the cut held RESTART_CUT_HOLD_S more (5 s ticks)
    assert 3 + 20 + RESTART_CUT_HOLD_S <= r["cut"]["seconds"] < 3 + 20 + RESTART_CUT_HOLD_S + 5
    assert ("wait_reconnected", True) in suite.condor.calls
    assert r["not_replaced"] == [1] and r["reconnected_after_cut"] == 30


def test_a_schedd_slower_than_the_cut_is_waited_for_and_the_row_says_so(small, monkeypatch):
    suite, _ssh = flow_suite(small, monkeypatch, answers_at=200, shadows_at=210)
    r = suite.schedd_restart_in_cut(2, 60, 30)
    assert 60 <= r["cut"]["seconds"] < 66 and not r["shadows_in_cut"]
    assert ("wait_schedd", 100) in suite.condor.calls and r["schedd_back"] == 200


# --- the tally, the rows, the report -------------------------------------------------------------
def test_jobs_lost_to_a_known_defect_are_counted_apart():
    recs = [{"name": "faults.injected", "value": 1, "params": {"kind": k}} for k in ("worker-cut", "schedd")]
    recs += [{"name": "faults.jobs_lost", "value": 2, "params": {"kind": "worker-cut",
                                                                  "known_defect": fr.TRANSFER_KEY_DEFECT}},
             {"name": "faults.jobs_lost", "value": 1, "params": {"kind": "schedd"}},
             {"name": "faults.reconnected_after_cut_seconds", "value": 12.0, "params": {"kind": "worker-cut"}}]
    rows, totals = fx.summarise(recs)
    assert totals["jobs_lost"] == 1 and totals["known_defects"] == {"htcondor-transfer-key": 2}
    assert rows == [(fx.FIGURES["faults.reconnected_after_cut_seconds"], 1, 12.0, 12.0, 12.0)]
    assert ("jobs lost 1 (and 2 to the known upstream defect htcondor-transfer-key)"
            in fx.render_summary(rows, totals))


def test_the_reconnect_rows_keep_the_invariant_and_only_the_defects_row_may_skip():
    rows = _rows(registry.get("faults").suite_path.read_text())
    for name in ("worker-cut-off", "worker-cut-off-no-transfer", "worker-cut-off-schedd-restart"):
        lines = rows[name]
        assert any(l.startswith("Should Be Empty    ${r}[problems]") for l in lines), name
        assert any(l.startswith("Should Be Empty    ${r}[bad_outputs]") for l in lines), name
        assert ("robot:skip-on-failure" in " ".join(lines)) == (name == "worker-cut-off"), name
    ft = rows["worker-cut-off"]
    tags = next(l for l in ft if l.startswith("[Tags]"))
    assert "robot:skip-on-failure" in tags and "upstream-defect:htcondor-transfer-key" in tags
    assert TRANSFER_KEY_DEFECT_DOC in " ".join(ft) and (PROJECT_ROOT / TRANSFER_KEY_DEFECT_DOC).exists()
    steps = [l for l in ft if not l.startswith(("[", "..."))]
    assert [s.split("    ")[0] for s in steps[:2]] == ["Skip Unless Long Faults", "Fail Until The Known Defect Shows"]

    def at(prefix):
        return next(i for i, s in enumerate(steps) if s.startswith(prefix))
    # the testbed's own checks come before the defect may skip, the invariant after
    assert (at("The Cut Should Have Held") < at("Skip On Failure When The Known Defect Shows    ${r}[known_defect]")
            < at("Should Be Empty    ${r}[problems]"))
    assert "defect=${r}[known_defect]" in steps[at("Record Fault")]   # the tally counts its lost jobs apart


def test_the_report_carries_the_patch_file_as_its_diff():
    doc = (PROJECT_ROOT / TRANSFER_KEY_DEFECT_DOC).read_text()
    patch = (PROJECT_ROOT / "provision" / "patches" / "htcondor-reconnect-transkey.patch").read_text()
    assert patch.strip() in doc and "provision/patches/htcondor-reconnect-transkey.patch" in doc
    assert re.search(r"^--- a/src/condor_shadow\.V6\.1/remoteresource\.cpp$", patch, re.M)
    assert re.search(r"^\+\s+filetrans\.abortActiveTransfer\(\);$", patch, re.M)
    assert re.search(r"^-\s+abortFileTransfer\(\);$", patch, re.M)
    for hunk in re.finditer(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", patch, re.M):   # counts match the lines
        body = patch[hunk.end():].split("\n@@")[0].split("\n")[1:]
        body = [l for l in body if l[:1] in (" ", "-", "+")]
        assert sum(l[:1] in " -" for l in body) == int(hunk.group(2))
        assert sum(l[:1] in " +" for l in body) == int(hunk.group(4))


# --- a known defect's SKIP, under real Robot ----------------------------------------------------
DEFECT_SUITE = """*** Settings ***
Resource    {resource}

*** Test Cases ***
defect seen
    [Tags]    robot:skip-on-failure
    Fail Until The Known Defect Shows
    ${{evidence}}=    Create List    starter: File transfer failed, forcing disconnect.
    Skip On Failure When The Known Defect Shows    ${{evidence}}
    Fail    job 0 started again

other failure
    [Tags]    robot:skip-on-failure
    Fail Until The Known Defect Shows
    ${{evidence}}=    Create List
    Skip On Failure When The Known Defect Shows    ${{evidence}}
    Fail    the cut did not hold

failure before the evidence
    [Tags]    robot:skip-on-failure
    Fail Until The Known Defect Shows
    Fail    no new schedd answering

fixed upstream
    [Tags]    robot:skip-on-failure
    Fail Until The Known Defect Shows
    Skip On Failure When The Known Defect Shows    ${{EMPTY}}
    Log    every job kept its one start
"""


def robot_run(tmp_path, select=()):
    from robot.api import ExecutionResult
    suite = tmp_path / "defect.robot"
    suite.write_text(DEFECT_SUITE.format(resource=PROJECT_ROOT / "robot" / "resources" / "known_defect.resource"))
    out = tmp_path / f"out-{len(select)}"
    proc = subprocess.run([sys.executable, "-m", "robot", "--outputdir", str(out), "--consolecolors", "off",
                           *select, str(suite)], capture_output=True, text=True, timeout=120)
    return proc.returncode, {t.name: (t.status, t.message) for t in ExecutionResult(str(out / "output.xml")).suite.tests}


def test_a_known_defect_is_skip_with_its_failure_as_reason_and_anything_else_fails(tmp_path):
    rc, got = robot_run(tmp_path)
    assert got["defect seen"][0] == "SKIP" and "job 0 started again" in got["defect seen"][1]
    assert got["other failure"] == ("FAIL", "the cut did not hold")
    assert got["failure before the evidence"] == ("FAIL", "no new schedd answering")
    assert got["fixed upstream"] == ("PASS", "")
    assert rc == 2   # robot's exit status counts the failures only


def test_a_run_whose_only_failure_is_a_known_defect_is_complete(tmp_path, monkeypatch):
    run_ = runs.Run.create("faults", ["default"], topology={"name": "small"}, profile_contents={},
                           accel="tcg", root=tmp_path)
    monkeypatch.setattr(runner, "check", lambda *a, **k: (registry.get("faults"), {}))
    monkeypatch.setattr(runner, "open_run", lambda *a, **k: run_)
    monkeypatch.setattr(runner, "write_report", lambda *a, **k: None)
    seen = {}

    def robot_ran(argv, ack, echo):
        seen["rc"], seen["rows"] = robot_run(tmp_path, ["--test", "defect seen", "--test", "fixed upstream"])
        return seen["rc"], []
    monkeypatch.setattr(runner, "supervise", robot_ran)
    rc, run = runner.run(Site(types.SimpleNamespace(name="small", vm_hosts=[])), "faults", ["default"], "ci",
                         echo=lambda *_: None)
    assert seen["rows"]["defect seen"][0] == "SKIP" and rc == 0
    assert run.manifest()["status"] == "complete"
