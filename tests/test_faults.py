"""The fault layer and the fault suite: injectors build the right commands and always undo,
the invariants catch what they must (a restarted job, a changed checksum, an open permission),
and the suite's rows and scales are what CI can afford. SSH is faked throughout."""
import json
import re
import subprocess
import sys
import types
import zlib

import pytest

from testbed import PROJECT_ROOT
from testbed.experiments.faults import fault_interrupt as fi, faults as fx
from testbed.harness import registry
from testbed.injectors import condor_faults as fc, network_faults as fn, security_checks as fs, storage_faults as fst
from testbed.services import gateway
from testbed.model import topology
from testbed.model.constants import (CACHE_DIR, CACHE_UNIT, DATA_DISK_BY_ID, DEADMAN_MARGIN_S, JOB_LEASE_S, RAID_USERS,
                                     JobStatus)
from testbed.model.errors import RemoteError
from testbed.remote.ssh import Result
from testbed.results import runs
from testbed.services.storage import RECORD_MARK, XrootdUnits, units_command
from tests.support import script_env
from tests.test_gateway import JOB_LOG


class FakeSSH:
    """Records every command; answers with the first (pattern, stdout, rc) whose pattern is in it."""

    def __init__(self, answers=()):
        self.answers = list(answers)
        self.commands = []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        for pattern, out, rc in self.answers:
            if pattern in command:
                out = out(command) if callable(out) else out
                if check and rc:
                    raise RemoteError(f"{host}: failed")
                return Result(host, rc, out, "" if rc == 0 else "error")
        return Result(host, 0, "", "")

    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c, check=False) for h, c in commands.items()}


@pytest.fixture
def small():
    return topology.load("small")


# --- the experiment and its suite ---------------------------------------------------------------
def test_faults_is_registered_after_the_papers_experiments():
    exps = registry.experiments()
    assert list(exps)[0] == "smoke" and list(exps)[-1] == "faults"
    exp = exps["faults"]
    assert exp.suite_path.exists() and exp.seed is None and exp.profiles == ("default",)
    assert exp.scales["ci"]["long_faults"] == 0
    assert exp.scales["quick"]["long_faults"] == 1 and exp.scales["full"]["long_faults"] == 1
    for scale in registry.SCALES:  # worker cuts shorter than the job lease at every scale
        assert exp.scales[scale]["cutoff_s"] < JOB_LEASE_S and exp.scales[scale]["restart_cut_max_s"] < JOB_LEASE_S
    assert exp.scales["full"]["transfer_jobs"] == 8 and exp.scales["full"]["transfer_mb"] == 50
    assert exp.scales["full"]["wan_rtt_ms"] == 80 and exp.scales["full"]["wan_loss_pct"] == 1


def _rows(text):
    body = text.split("*** Test Cases ***", 1)[1].split("*** Keywords ***", 1)[0]
    rows, name = {}, None
    for line in body.splitlines():
        if line and not line.startswith(" "):
            name = line.strip()
            rows[name] = []
        elif name:
            rows[name].append(line.strip())
    return rows


def test_suite_rows_ci_and_long():
    rows = _rows(registry.get("faults").suite_path.read_text())
    ci = {"security", "schedd-restart", "origin-down", "tally"}
    long = {"active-cm-killed", "worker-cut-off", "worker-cut-off-no-transfer", "worker-cut-off-schedd-restart", "raid-two-members-fail", "ccb-server-down",
            "raid-third-failure", "dtn-reboot", "transfer-under-bad-wan", "interrupted-run-sigint",
            "interrupted-run-sigterm"}
    assert set(rows) == ci | long
    for name, lines in rows.items():
        tags = next(l for l in lines if l.startswith("[Tags]"))
        skips = any(l.startswith("Skip Unless Long Faults") for l in lines)
        assert ("    long" in tags) == (name in long) == skips, name
        assert ("    ci" in tags) == (name in ci), name
        # every row asserts something and records something
        assert any(l.startswith(("Should", "Length Should", "Interrupted Run Point")) for l in lines), name
        assert name == "tally" or any(l.startswith(("Record ", "Interrupted Run Point")) or "Record Metric" in l
                                      for l in lines), name
        if name not in ("security", "tally"):
            assert any(l.startswith("[Teardown]    Leave The Site Healthy") for l in lines), name


def test_cm_failover_moved_out_of_the_smoke_suite():
    smoke = (PROJECT_ROOT / "robot/suites/smoke.robot").read_text()
    assert "Kill Central Manager" not in smoke and "Negotiator Should Move To" not in smoke
    assert "active-cm-killed" in registry.get("faults").suite_path.read_text()


def test_every_suite_teardown_restores_the_default_profile():
    text = (PROJECT_ROOT / "robot/resources/experiment.resource").read_text()
    teardown = text.split("Finish Experiment And Restore The Site", 1)[1]
    assert "Restore The Default Profile" in teardown and "Clear WAN" in teardown


# --- HTCondor faults and the job invariants -----------------------------------------------------
def test_kill_script_matches_the_15_character_process_name():
    assert "pkill -KILL -x condor_negotiat" in fc.kill_script("negotiator")
    assert gateway.parse_killed("noise\nkilled=2\n") == 2 and gateway.parse_killed("") == 0
    with pytest.raises(ValueError):
        fc.kill_script("gridmanager")


def test_kill_daemon_with_nothing_to_kill_is_an_error(small):
    ssh = FakeSSH([("pkill", "killed=0\n", 0)])
    with pytest.raises(RemoteError, match="no condor_schedd"):
        fc.CondorFaults(small, ssh, None).kill_daemon("submit", "schedd")
    ssh = FakeSSH([("pkill", "killed=1\n", 0)])
    assert fc.CondorFaults(small, ssh, None).kill_daemon("submit", "schedd") == 1


def test_hold_down_keeps_the_master_from_restarting_it(small):
    ssh = FakeSSH([("pgrep -c", "killed=1\n", 0)])
    fc.CondorFaults(small, ssh, None).hold_down("cm2", "collector")
    assert "condor_off -fast -daemon collector" in ssh.commands[-1][1]
    fc.CondorFaults(small, ssh, None).bring_back("cm2", "collector")
    assert ssh.commands[-1] == ("cm2", "condor_on -daemon collector")


def test_expected_output_is_recomputable_and_distinct():
    assert fc.expected_output(0) != fc.expected_output(1)
    out = subprocess.run(["sh", "-c", "printf 'fault-job-%s\\n' 3 | sha256sum | cut -d' ' -f1"],
                         capture_output=True, text=True).stdout.strip()
    assert fc.expected_output(3) == f"fault-job 3 {out}"  # what JOB_SCRIPT prints


def ad(proc, status=JobStatus.RUNNING, starts=1, **extra):
    return dict({"ClusterId": 7, "ProcId": proc, "JobStatus": int(status), "NumJobStarts": starts}, **extra)


def test_compare_starts_catches_restarts_and_lost_jobs():
    before = fc.starts([ad(0), ad(1), ad(2), ad(3)])
    after = fc.starts([ad(0, JobStatus.COMPLETED), ad(1, JobStatus.COMPLETED, starts=2),
                       ad(3, JobStatus.HELD, HoldReason="lease expired")])
    problems = fc.compare_starts(before, after)
    assert "job 1 started again (NumJobStarts 1 -> 2)" in problems
    assert "job 2 is gone from the queue and the history" in problems
    assert any(p.startswith("job 3 is held: lease expired") for p in problems)
    assert fc.lost_jobs(problems) == 3
    assert fc.compare_starts(before, fc.starts([ad(p, JobStatus.COMPLETED) for p in range(4)])) == []


def test_bad_outputs():
    texts = {0: fc.expected_output(0) + " ", 1: "fault-job 1 deadbeef"}
    bad = dict(fc.bad_outputs(texts, 3))
    assert 0 not in bad and "is not" in bad[1] and bad[2] == "no output file"


class FakePool:
    submit_host = "submit"

    def __init__(self, ads_seq=()):
        self.ads_seq, self.submitted = list(ads_seq), []

    def submit(self, description, workdir, files=None, setup=None):
        self.submitted.append((description, workdir, files))
        return 7

    def jobs(self, cluster, attrs):
        return self.ads_seq.pop(0) if len(self.ads_seq) > 1 else self.ads_seq[0]

    def describe_unfinished(self, cluster):
        return "details"


def test_batches_set_the_lease_and_wait_for_real_starts(small, monkeypatch):
    monkeypatch.setattr(fc.time, "sleep", lambda s: None)
    pool = FakePool([[ad(0, starts=0), ad(1)], [ad(0), ad(1)]])
    faults = fc.CondorFaults(small, FakeSSH(), pool)
    batch = faults.submit_batch("t", 2, 90, requirements='(Machine == "worker1.small.testbed")')
    desc = pool.submitted[0][0]
    assert f"job_lease_duration = {JOB_LEASE_S}" in desc and "arguments = 90 $(Process)" in desc
    assert 'requirements = (Machine == "worker1.small.testbed")' in desc and "queue 2" in desc
    faults.wait_all_running(batch)
    assert all(a["NumJobStarts"] == 1 for a in batch.snapshots["before"].values())


def test_finish_needs_a_baseline(small):
    faults = fc.CondorFaults(small, FakeSSH(), FakePool([[ad(0)]]))
    with pytest.raises(ValueError, match="before"):
        faults.finish(fc.Batch(7, 1, "/w", 10))


# --- network: a cut is bounded and always undone ------------------------------------------------
def test_cut_arms_the_dead_man_before_cutting_and_spares_the_host_bridge(small):
    script = fn.cut_script(small.hosts["worker1"], small, 45)
    lines = script.splitlines()
    armed = next(i for i, l in enumerate(lines) if l.startswith("systemd-run"))
    first_cut = next(i for i, l in enumerate(lines) if l.startswith('tc qdisc add dev "$dev" clsact'))
    assert armed < first_cut
    assert f"--on-active={45 + DEADMAN_MARGIN_S}s" in lines[armed] and "clsact" in lines[armed]
    for hook, field in (("ingress", "src"), ("egress", "dst")):
        ok = next(i for i, l in enumerate(lines) if f" {hook} " in l and f"{field} 10.160.0.1/32 action ok" in l)
        drop = next(i for i, l in enumerate(lines) if f" {hook} " in l and f"{field} 10.160.0.0/24 action drop" in l)
        assert ok < drop
    assert "root" not in script.replace("root qdisc", "")  # the WAN's root qdisc is left alone


def test_cut_for_heals_even_when_the_fault_window_fails(small, monkeypatch):
    monkeypatch.setattr(fn.time, "sleep", lambda s: None)
    ssh = FakeSSH([("systemd-run", "cut-at=100.5 deadman=75\n", 0), ("tc qdisc del", "cut=0\n", 0),
                   ("ping", "3 packets transmitted, 0 received, 100% packet loss\n", 1)])
    net = fn.NetworkFaults(small, ssh)

    def boom():
        raise RuntimeError("suite crashed")
    with pytest.raises(RuntimeError):
        net.cut_for("worker1", 45, probe_from="submit", during=boom)
    assert "tb-fault-cut-worker1.timer" in ssh.commands[-1][1] and "clsact" in ssh.commands[-1][1]


def test_cut_for_calls_during_every_poll_and_heals_within_a_second_of_the_bound(small, monkeypatch):
    clock = types.SimpleNamespace(now=0.0)

    def sleep(s):
        clock.now += s
    monkeypatch.setattr("testbed.remote.poll.time.monotonic", lambda: clock.now)
    monkeypatch.setattr("testbed.remote.poll.time.sleep", sleep)
    monkeypatch.setattr(fn.time, "monotonic", lambda: clock.now)
    ssh = FakeSSH([("systemd-run", "cut-at=100.5 deadman=75\n", 0), ("tc qdisc del", "cut=0\n", 0),
                   ("ping", "3 packets transmitted, 0 received, 100% packet loss\n", 1)])
    calls = []
    r = fn.NetworkFaults(small, ssh).cut_for("worker1", 45, probe_from="submit",
                                             during=lambda: calls.append(clock.now), poll=10)
    assert calls == [0, 10, 20, 30, 40] and 45 <= r["seconds"] <= 46
    assert any("tc qdisc del" in c for _h, c in ssh.commands)  # healed


def test_heal_says_so_when_the_cut_is_still_there(small):
    ssh = FakeSSH([("tc qdisc del", "cut=1\n", 0)])
    with pytest.raises(RemoteError, match="still in place"):
        fn.NetworkFaults(small, ssh).heal("worker1")


def test_a_cut_that_failed_to_apply_is_removed(small):
    ssh = FakeSSH([("systemd-run", "", 2), ("tc qdisc del", "cut=0\n", 0)])
    with pytest.raises(RemoteError, match="could not cut"):
        fn.NetworkFaults(small, ssh).cut("worker1", 30)
    assert "cut=0" in "cut=0" and "clsact" in ssh.commands[-1][1]


def test_ping_loss():
    assert fn.ping_loss("3 packets transmitted, 3 received, 0% packet loss, time 1002ms") == 0
    assert fn.ping_loss("3 packets transmitted, 0 received, +3 errors, 100% packet loss") == 100
    assert fn.ping_loss("") == 100


# --- storage ------------------------------------------------------------------------------------
STATUS = """level=raid6
array_state=clean
raid_disks=6
degraded={degraded}
sync_action={action}
sync_completed={completed}
sync_speed={speed}
component_kb=1047552
uuid=0a1b2c3d:4e5f6071:8293a4b5:c6d7e8f9
detail_state={detail}
fs=xfs
disk=0 vdb in_sync
disk=1 vdc in_sync
disk=2 vdd in_sync
disk=3 vde in_sync
disk=4 vdf {r4}
disk=5 vdg {r5}
"""


def status_text(degraded=0, action="idle", completed="none", speed="none", detail="clean",
                r4="in_sync", r5="in_sync"):
    return STATUS.format(degraded=degraded, action=action, completed=completed, speed=speed, detail=detail,
                         r4=r4, r5=r5)


def test_parse_status_names_members_by_serial():
    info = fst.parse_status(status_text(degraded=2, r4="faulty", r5="none"))
    assert info["members"] == ["0", "1", "2", "3"] and info["faulty"] == ["4"] and info["outside"] == ["5"]
    assert info["level_n"] == 6 and info["degraded_n"] == 2 and not fst.array_failed(info)
    assert fst.pick_members(fst.parse_status(status_text()), 2) == ["4", "5"]
    with pytest.raises(ValueError):
        fst.pick_members(info, 5)


@pytest.mark.parametrize("changes, failed", [
    ({"degraded": 3}, True), ({"detail": "clean, FAILED"}, True), ({"degraded": 2}, False),
    ({"detail": "clean, degraded, recovering"}, False)])
def test_array_failed(changes, failed):
    assert fst.array_failed(fst.parse_status(status_text(**changes))) is failed
    assert fst.array_failed(fst.parse_status("array_state=broken\nlevel=raid6\ndegraded=2"))


def test_sync_progress_and_rate():
    assert fst.sync_fraction("1024 / 4096") == 0.25 and fst.sync_fraction("none") is None
    assert fst.resync_rate(1047552, 10.0) == pytest.approx(107.27, rel=1e-3)


def test_wait_resync_measures_until_idle_and_whole(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    seq = [status_text(degraded=2, action="recover", completed="100 / 2095104", speed="30000", r4="spare"),
           status_text(degraded=1, action="recover", completed="2000000 / 2095104", speed="42000"),
           status_text()]
    ssh = FakeSSH([("md=", lambda _c: seq.pop(0) if len(seq) > 1 else seq[0], 0)])
    r = fst.StorageFaults(small, ssh).wait_resync(timeout=60)
    assert r["speeds"] == [30000, 42000] and r["component_kb"] == 1047552 and r["rate"] > 0


def test_wait_resync_names_md0_and_its_last_state_or_gives_up_when_it_failed(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    ssh = FakeSSH([("md=", status_text(degraded=1, action="recover", completed="10 / 2095104"), 0)])
    with pytest.raises(RemoteError, match=r"^dtn: md0 whole and idle .*: not reached after 0 s; "
                                          r"last seen: degraded 1, sync 10 / 2095104$"):
        fst.StorageFaults(small, ssh).wait_resync(timeout=0)
    ssh = FakeSSH([("md=", status_text(degraded=3, detail="clean, FAILED"), 0)])
    with pytest.raises(RemoteError, match=r"given up after 0 s: md0 failed while resyncing \(clean, FAILED\)"):
        fst.StorageFaults(small, ssh).wait_resync(timeout=600)


def test_cache_complete_returns_what_is_still_incomplete(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    ssh = FakeSSH([("a.cinfo", f'{RECORD_MARK}a\n{{"state_complete": "complete"}}\n'
                               f'{RECORD_MARK}b\n{{"state_complete": "no"}}\n', 0)])
    assert fst.StorageFaults(small, ssh).cache_complete(["a", "b"], timeout=0) == ["b"]


def test_add_back_never_touches_a_disk_still_in_the_array(small):
    ssh = FakeSSH([("md=", status_text(degraded=2, r4="faulty", r5="none"), 0)])
    fst.StorageFaults(small, ssh).add_back(["4", "5", "3"])
    cmds = [c for _h, c in ssh.commands if "mdadm" in c and "md=" not in c]
    assert cmds[0] == "mdadm /dev/md0 --remove /dev/vdf"   # the faulty one is taken out first
    cmd = cmds[1]
    for dev in ("vdf", "vdg"):
        guard, readd, wipe = (cmd.index(f"dev-{dev} ]"), cmd.index(f"--re-add /dev/{dev}"),
                              cmd.index(f"--zero-superblock /dev/{dev}"))
        assert guard < readd < wipe
    assert cmd.index("dev-vdg ]") < cmd.index("--re-add /dev/vdf")  # every guard before any change
    assert cmd.rstrip().endswith("mdadm /dev/md0 --add $add") and "vde" not in cmd  # in sync: untouched
    assert not any("--create" in c or "mkfs" in c for _h, c in ssh.commands)


def test_add_back_leaves_a_rebuilding_spare_alone(small):
    ssh = FakeSSH([("md=", status_text(degraded=1, action="recover", r4="spare", r5="none"), 0)])
    fst.StorageFaults(small, ssh).add_back(["4", "5"])
    text = "\n".join(c for _h, c in ssh.commands if "md=" not in c)
    assert "vdf" not in text and "--zero-superblock /dev/vdg" in text


def test_restore_assembles_by_force_from_the_data_disks_and_never_creates(small):
    ssh = FakeSSH([("md=", status_text(degraded=2, r4="none", r5="none"), 0)])
    fst.StorageFaults(small, ssh).restore_array([str(i) for i in range(6)])
    text = "\n".join(c for _h, c in ssh.commands)
    assert "mdadm --assemble --force --run /dev/md0 " + " ".join(f"{DATA_DISK_BY_ID}{i}" for i in range(6)) in text
    assert "--create" not in text and "mkfs" not in text and "--zero-superblock /dev/vdf" in text


def test_a_forced_assembly_that_stays_failed_is_reported(small):
    ssh = FakeSSH([("md=", status_text(degraded=3, detail="clean, FAILED"), 0)])
    with pytest.raises(RemoteError, match="did not come back"):
        fst.StorageFaults(small, ssh).restore_array([str(i) for i in range(6)])


def test_adler_script_computes_from_the_bytes(tmp_path):
    data = b"origin file" * 100000
    (tmp_path / "file-001").write_bytes(data)
    out = subprocess.run(["bash", "-c", fst.adler_command([str(tmp_path / "file-001"), str(tmp_path / "nope")])],
                         capture_output=True, text=True).stdout
    got = fst.parse_checksums(out)
    assert got["file-001"] == f"{zlib.adler32(data) & 0xffffffff:08x}" and got["nope"].startswith("error")
    assert fst.checksum_mismatches(got, {"file-001": got["file-001"], "nope": "00000001"}) == \
        [("nope", got["nope"], "00000001")]


def test_read_through_proxy_reports_the_xrootd_error(small):
    out = ("[0B/0B][100%][==================================================][0B/s]\n"
           "Run: [ERROR] Server responded with an error: [3005] Unable to open /data/file-020; "
           "Connection refused\nread client file-020 100.0 112.5 54\n")
    ssh = FakeSSH([("xrdcp", out, 0)])
    r = fst.StorageFaults(small, ssh).read_through_proxy("file-020", bound=60)
    assert not r["ok"] and r["rc"] == 54 and r["seconds"] == 12.5 and "[ERROR]" in r["error"]
    assert "XRD_REQUESTTIMEOUT=60" in ssh.commands[-1][1] and "timeout -k 5 90" in ssh.commands[-1][1]
    ssh = FakeSSH([("xrdcp", "adler32: 1a2b3c4d\nread client file-001 1 2 0\n", 0)])
    assert fst.StorageFaults(small, ssh).read_through_proxy("file-001")["adler32"] == "1a2b3c4d"


# --- security -----------------------------------------------------------------------------------
def test_open_permissions_finds_wildcards_with_any_prefix():
    dump = ("ALLOW_READ = 10.160.0.0/24, 127.0.0.1\nALLOW_WRITE = condor@password, vagrant@small.testbed\n"
            "SCHEDD.ALLOW_WRITE = *\nALLOW_NEGOTIATOR = */*\nSTARTD2.ALLOW_ADVERTISE_STARTD = *@*\n"
            "DENY_WRITE = *\nALLOW_CONFIG = \n")
    bad = fs.open_permissions(dump)
    assert [k for k, _v in bad] == ["SCHEDD.ALLOW_WRITE", "ALLOW_NEGOTIATOR", "STARTD2.ALLOW_ADVERTISE_STARTD"]


def test_open_permissions_of_a_silent_host_is_an_error(small):
    ssh = FakeSSH([("condor_config_val", "", 0)])
    with pytest.raises(RemoteError, match="no ALLOW_"):
        fs.SecurityChecks(small, ssh).open_permissions()


def test_forward_elements_and_default_routes():
    assert fs.forwards("<network><name>tb-small-site</name><bridge name='virbr3'/></network>") == []
    assert fs.forwards("<network><name>x</name><forward mode='nat'/></network>") == ["nat"]
    assert fs.forwards("<network><forward/></network>") == ["nat"]
    assert fs.default_routes("default via 192.168.160.1 dev eth0\n") == ["default via 192.168.160.1 dev eth0"]
    assert fs.default_routes("") == []


@pytest.mark.parametrize("rc, text, what, verdict", [
    (0, "-- Schedd: submit.small.testbed\n", "read", "allowed"),
    (1, "-- Failed to fetch ads from: <10.160.0.10:9618>\nAUTHENTICATE:1003:Failed to authenticate", "read", "denied"),
    (1, "ERROR: Can't find address of schedd submit.small.testbed", "submit", "unreached"),
    (1, "ERROR: Failed to connect to queue manager\nAUTHENTICATE:1003", "submit", "denied"),
    (1, "something else entirely", "read", "unreached")])
def test_judge_anonymous_client(rc, text, what, verdict):
    assert fs.judge_client(rc, text, what) == verdict


def test_anonymous_client_has_no_credentials_and_a_submitted_job_is_removed(small):
    script = fs.anonymous_script("submit.small.testbed", "10.160.0.11", "read")
    assert "runuser -u nobody -- env -i" in script and "_CONDOR_SEC_TOKEN_DIRECTORY" in script
    assert "condor_q -debug -name submit.small.testbed" in script
    ssh = FakeSSH([("condor_status -schedd", "submit.small.testbed submit.small.testbed\n", 0),
                   ("runuser", "1 job(s) submitted to cluster 42.\n#rc=0\n", 0)])
    r = fs.SecurityChecks(small, ssh).anonymous_client("worker1", "submit", "submit")
    assert r["verdict"] == "allowed" and ("submit", "condor_rm 42") in ssh.commands


# --- the experiment's own logic -----------------------------------------------------------------
def test_worker_cuts_refuse_a_cut_as_long_as_the_lease(small):
    suite = fx.FaultSuite(small, FakeSSH(), FakePool([[ad(0)]]))
    with pytest.raises(ValueError, match="job lease"):
        suite.worker_cut(1, JOB_LEASE_S, 10)
    with pytest.raises(ValueError, match="job lease"):
        suite.worker_cut(1, JOB_LEASE_S, 10, file_transfer=False)
    with pytest.raises(ValueError, match="job lease"):
        suite.schedd_restart_in_cut(1, JOB_LEASE_S, 10)


def test_transfer_sums():
    a, b = "a" * 64, "b" * 64
    sums = fx.parse_sums(f"sum 0 {a} {a}\nsum 1 {a} {b}\nnoise\nsum 3 none {a}\n")
    assert fx.transfer_mismatches(sums, 4) == [(1, a, b), (2, "missing", "missing"), (3, "none", a)]
    assert fx.transfer_mismatches({0: (a, a)}, 1) == []


def test_judge_interrupted():
    assert fi.judge_interrupted({"status": "interrupted", "end": "x"}, [{"name": "m"}], 130) == []
    problems = fi.judge_interrupted({"status": "running", "end": None}, [], 0)
    assert len(problems) == 4 and "'running'" in problems[0]


def test_new_run_folder_finds_the_suites_new_folder(tmp_path):
    old = runs.Run.create("smoke", ["default"], {}, {}, "tcg", root=tmp_path)
    before = {old.path.name}
    assert fi.new_run_folder(before, "smoke", tmp_path) is None
    runs.Run.create("e2", ["default"], {}, {}, "tcg", root=tmp_path, path=tmp_path / "20990101T000000Z-e2-default")
    new = runs.Run.create("smoke", ["default"], {}, {}, "tcg", root=tmp_path,
                          path=tmp_path / "20990101T000001Z-smoke-default")
    assert fi.new_run_folder(before, "smoke", tmp_path) == new.path
    assert fi.run_argv("small")[1:] == ["-m", "testbed", "-t", "small", "run", "smoke", "--scale", "ci"]


def test_summary_of_a_runs_metrics():
    recs = [{"name": "faults.cm_failover_seconds", "value": v, "params": {}} for v in (50.0, 70.0)]
    recs += [{"name": "faults.injected", "value": 1, "params": {"kind": k}} for k in ("cm-kill", "worker-cut")]
    recs += [{"name": "faults.jobs_lost", "value": 0, "params": {}}, {"name": "faults.files_corrupted",
                                                                       "value": 1, "params": {}}]
    rows, totals = fx.summarise(recs)
    assert rows == [(fx.FIGURES["faults.cm_failover_seconds"], 2, 50.0, 60.0, 70.0)]
    assert totals == {"injected": 2, "jobs_lost": 0, "files_corrupted": 1, "security_problems": 0,
                      "kinds": ["cm-kill", "worker-cut"], "known_defects": {}}
    text = fx.render_summary(rows, totals)
    assert "faults injected 2 (cm-kill, worker-cut): jobs lost 0, files corrupted 1" in text


def test_benchmark_prints_a_runs_figures(tmp_path):
    run = runs.Run.create("faults", ["default"], {}, {}, "tcg", root=tmp_path)
    run.record("faults.raid_resync_rate", 35.5, "MB/s", members=2)
    run.record("faults.injected", 1, "count", kind="raid-2-members")
    proc = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks/faults.py"), str(run.path)],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, env=script_env())
    assert proc.returncode == 0, proc.stderr
    assert "RAID member rebuild, MB/s" in proc.stdout and "35.5" in proc.stdout
    assert re.search(r"faults injected 1 \(raid-2-members\): jobs lost 0, files corrupted 0", proc.stdout)


def test_the_submit_hosts_queue_needs_authentication_to_read():
    text = (PROJECT_ROOT / "provision/templates/condor/submit.conf.j2").read_text()
    assert re.search(r"^SCHEDD\.SEC_READ_AUTHENTICATION = REQUIRED$", text, re.MULTILINE)


class Recorder:
    """Stands in for an injector: methods named in `fail` raise, every call is recorded."""

    def __init__(self, fail=(), answers=None):
        self.calls, self.fail, self.answers = [], set(fail), dict(answers or {})

    def __getattr__(self, name):
        def method(*args, **kwargs):
            self.calls.append(name)
            if name in self.fail:
                raise RemoteError(f"{name} failed")
            value = self.answers.get(name)
            return value(*args, **kwargs) if callable(value) else value
        return method


def test_origin_comes_back_even_when_a_read_fails(small):
    def read(name, bound=None):
        if bound is not None:  # the reads made while the origin is down
            raise RemoteError("client hung")
        return {"ok": True, "adler32": "00000001"}
    suite = fx.FaultSuite(small, FakeSSH(), FakePool([[ad(0)]]))
    suite.storage = Recorder(answers={"origin_records": {"file-001": "00000001", "file-020": "00000002"},
                                      "cache_complete": [], "read_through_proxy": read})
    with pytest.raises(RemoteError, match="client hung"):
        suite.origin_down(30)
    calls = suite.storage.calls
    assert calls[-1] == "start_origin" and calls.index("stop_origin") < calls.index("start_origin")


def test_an_origin_that_does_not_come_back_fails_the_row_naming_the_last_read(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    monkeypatch.setattr(fx, "ORIGIN_BACK_S", 0)

    def read(name, bound=None):
        if bound is None:
            return {"ok": True, "adler32": "00000001"}
        return {"ok": False, "rc": 54, "seconds": 3.0, "adler32": None,
                "error": "Run: [ERROR] Server responded with an error: [3005] Unable to open"}
    suite = fx.FaultSuite(small, FakeSSH(), FakePool([[ad(0)]]))
    suite.storage = Recorder(answers={"origin_records": {"file-001": "00000001", "file-020": "00000002"},
                                      "cache_complete": [], "read_through_proxy": read})
    suite.storage.client = types.SimpleNamespace(name="client")
    with pytest.raises(RemoteError, match=r"^client: uncached file-020 read through the proxy again after the "
                                          r"origin started: not reached after 0 s; last seen: read rc 54: .*Unable "
                                          r"to open; while the origin was down: cached file-001 NOT read"):
        suite.origin_down(30)


def test_wait_registered_names_the_ccb_and_how_many_registered(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    suite = fx.FaultSuite(small, FakeSSH(), FakePool([[ad(0)]]))
    suite.ccb_registrations = lambda collector=None: {"cm2": 1}
    with pytest.raises(RemoteError, match=rf"registered with CCB cm2 after it returned: not reached after 0 s; "
                                          rf"last seen: 1 of {small.planned_startds} startds registered$"):
        suite.wait_registered("cm2", timeout=0)


def test_schedd_restarts_check_the_queue_after_each_round(small, monkeypatch):
    suite = fx.FaultSuite(small, FakeSSH(), FakePool([[ad(0)]]))
    batch = fc.Batch(7, 2, "/w", 90, {"before": fc.starts([ad(0), ad(1)])})
    snaps = iter([fc.starts([ad(0), ad(1)]), fc.starts([ad(0), ad(1, starts=2)])])
    suite.condor = Recorder(answers={"submit_batch": batch, "restart_schedd": 100, "pid": 101,
                                     "wait_schedd": 3.0, "snapshot": lambda b, label: next(snaps),
                                     "finish": {"problems": [], "lost": 0, "bad_outputs": []}})
    monkeypatch.setattr(fx.FaultSuite, "wait_back", lambda self, b, timeout=600, poll=5: 4.0)
    r = suite.schedd_restarts(2, 30)
    assert [x["mode"] for x in r["rounds"]] == ["clean", "kill"]
    assert r["rounds"][0]["queue_problems"] == []
    assert r["rounds"][1]["queue_problems"] == ["job 1 started again (NumJobStarts 1 -> 2)"]
    assert suite.condor.calls.index("restart_schedd") < suite.condor.calls.index("kill_daemon")


@pytest.mark.parametrize("result, source", [
    ({"ok": True, "rc": 0, "error": ""}, "none"),
    ({"ok": False, "rc": 54, "error": "Run: [ERROR] Server responded with an error: [3005] Unable to open"}, "server"),
    ({"ok": False, "rc": 51, "error": "Run: [ERROR] Operation expired"}, "client-timeout"),
    ({"ok": False, "rc": 124, "error": ""}, "client-timeout")])
def test_who_ended_a_failed_read(result, source):
    assert fst.error_source(result, 60) == source


def test_ccb_registrations_asked_of_the_returned_collector(small):
    addr = ("<10.160.0.13:9618?CCBID=10.160.0.11:9618%3faddrs%3d10.160.0.11-9618#1%2010.160.0.12:9618"
            "%3faddrs%3d10.160.0.12-9618#1&addrs=10.160.0.13-9618&noUDP&sock=startd1_887_fc98>")
    ssh = FakeSSH([("condor_status", f"worker1.small.testbed startd1@worker1.small.testbed {addr}\n"
                                     f"worker1.small.testbed startd2@worker1.small.testbed {addr}\n", 0)])
    suite = fx.FaultSuite(small, ssh, FakePool([[ad(0)]]))
    assert suite.ccb_registrations(collector="cm2") == {"cm1": 2, "cm2": 2}
    assert "-pool 10.160.0.12 " in ssh.commands[-1][1]
    assert suite.wait_registered("cm2", timeout=1) >= 0


def test_an_authentication_refusal_at_the_collector_is_a_denial_and_allow_client_is_client_side():
    from testbed.injectors import security_checks
    text = ("SECMAN: required authentication with collector at <10.160.0.12:9618> failed\n"
            "ERROR: AUTHENTICATE:1003:Failed to authenticate with any method\n"
            "Error: Couldn't contact the condor_collector on 10.160.0.12.\n")
    assert security_checks.judge_client(1, text, "read") == "denied"
    assert security_checks.judge_client(1, "Error: Couldn't contact the condor_collector on cm1\n", "read") == "unreached"
    assert security_checks.open_permissions("ALLOW_CLIENT = *\nSCHEDD.ALLOW_WRITE = *\n") == [("SCHEDD.ALLOW_WRITE", "*")]


def test_cut_off_jobs_are_released_only_when_every_disconnect_has_its_reconnect(small, monkeypatch):
    monkeypatch.setattr(fc.time, "sleep", lambda s: None)
    head = JOB_LOG.split("022 (012.001.000)")[0]  # job 0: disconnected, then reconnected
    logs = [head.split("023 ")[0], head, head]    # first still waiting, then reconnected
    ssh = FakeSSH([("job.log", lambda _c: logs.pop(0) if len(logs) > 1 else logs[0], 0)])
    batch = fc.Batch(12, 1, "/home/tb/faults/cut-1", 60)
    events = fc.CondorFaults(small, ssh, FakePool()).wait_reconnected(batch, settle=0)
    assert events[0]["reconnected"] == 1 and len(logs) == 1


def test_the_fault_job_runs_until_its_release_file_exists(tmp_path):
    import subprocess
    script = tmp_path / "faultjob.sh"
    script.write_text(fc.JOB_SCRIPT)
    release = tmp_path / "release"
    slow = subprocess.Popen(["sh", str(script), "60", "3", str(release)], stdout=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        slow.wait(timeout=1)           # not released: still running
    release.touch()
    out, _ = slow.communicate(timeout=10)
    assert out.startswith("fault-job 3 ")


STARTER_LOG = """\
11/23/26 10:55:09 (pid:1056) Communicating with shadow <10.160.0.10:9618?sock=shadow_1093>
11/23/26 10:55:35 (pid:1056) Lost connection to shadow, last activity was 13 secs ago, waiting 2387 secs for reconnect
11/23/26 10:55:09 (pid:1060) Communicating with shadow <10.160.0.10:9618?sock=shadow_1094>
11/23/26 10:55:36 (pid:1060) Lost connection to shadow, last activity was 14 secs ago, waiting 2386 secs for reconnect
11/23/26 10:57:52 (pid:1060) Recovered connection to shadow after 137 seconds
11/23/26 09:00:00 (pid:900) Lost connection to shadow, last activity was 1 secs ago, waiting 2399 secs for reconnect
"""


def test_a_starter_still_waiting_for_its_shadow_is_found_in_its_own_log():
    # 1056 lost its shadow and never got it back; 1060 recovered; 900 no longer runs
    assert fc.disconnected_starters(STARTER_LOG, [1056, 1060]) == [1056]
    assert fc.disconnected_starters(STARTER_LOG, [1060]) == []
    assert fc.disconnected_starters("", [1056]) == []


# --- waits through poll_until -------------------------------------------------------------------
def test_reboot_waits_for_a_new_boot_id_and_times_out_on_the_old_one(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    ids = ["old", "old", "", "new"]  # before, still the old boot, no answer, the new boot
    ssh = FakeSSH([("boot_id", lambda _c: ids.pop(0) if len(ids) > 1 else ids[0], 0)])
    assert fst.StorageFaults(small, ssh).reboot("dtn", timeout=60) >= 0
    assert sum("boot_id" in c for _h, c in ssh.commands) == 4
    ssh = FakeSSH([("boot_id", "old", 0)])
    with pytest.raises(RemoteError, match=r"^dtn: back after the reboot \(a new boot id\): not reached after 0 s; last seen: the old boot id old$"):
        fst.StorageFaults(small, ssh).reboot("dtn", timeout=0)


def test_wait_schedd_needs_a_new_pid_that_answers(small, monkeypatch):
    monkeypatch.setattr("testbed.remote.poll.time.sleep", lambda s: None)
    pids = ["101", "101", "202", "202"]
    ssh = FakeSSH([("pgrep -o", lambda _c: pids.pop(0) if len(pids) > 1 else pids[0], 0)])
    answers = [RemoteError("not yet"), 3]

    class Pool:
        submit_host = "submit"

        def queued(self):
            a = answers.pop(0)
            if isinstance(a, Exception):
                raise a
            return a

    assert fc.CondorFaults(small, ssh, Pool()).wait_schedd(old_pid=101, timeout=60) >= 0
    assert pids == ["202"] and answers == []
    ssh = FakeSSH([("pgrep -o", "101", 0)])
    with pytest.raises(RemoteError, match=r"no new schedd answering 0 s .*pid before 101, now 101"):
        fc.CondorFaults(small, ssh, Pool()).wait_schedd(old_pid=101, timeout=0)


def test_one_timed_read_serves_the_site_the_faults_and_e2():
    from testbed.services import storage
    line = storage.timed_read("root://dtn:1094//data/file-001", "submit", "file-001", bound=60, checksum=True)
    assert "XRD_REQUESTTIMEOUT=60" in line and "timeout -k 5 90 xrdcp -f -s -C adler32:print" in line
    assert line.endswith("echo read submit file-001 $s $e $rc")
    out = "[ERROR] no\nadler32: 1a2b3c\nread submit file-001 10.5 12.0 0\nread c2 - 1 2 54\n"
    assert storage.timed_reads(out) == [("submit", "file-001", 10.5, 12.0, 0), ("c2", "-", 1.0, 2.0, 54)]
    assert storage.read_checksum(out) == "001a2b3c" and storage.read_checksum("nothing") is None


def test_a_read_via_an_endpoint_gives_the_checksum_and_the_clients_seconds(small):
    from testbed.services.storage import Storage
    ok = FakeSSH([("xrdcp", "adler32: 1a2b3c4d\nread c1 - 100.0 102.5 0\n", 0)])
    assert Storage(small, ok).read_via("dtn:1094", "/data/file-001") == ("1a2b3c4d", 2.5)
    failed = FakeSSH([("xrdcp", "[ERROR] refused\nread c1 - 100.0 100.1 54\n", 0)])
    with pytest.raises(RemoteError, match="printed no checksum"):
        Storage(small, failed).read_via("dtn:1094", "/data/file-001")


def test_the_xrootd_units_gateway_empties_the_cache_between_stop_and_start():
    ssh = FakeSSH()
    XrootdUnits(ssh, "dtn").restart_without(CACHE_UNIT, ["/raid/xcache/data/f 1", "/raid/xcache/data/f 1.cinfo"])
    (host, cmd), = ssh.commands
    assert host == "dtn" and cmd.index("systemctl stop xrootd@xcache.service") < cmd.index("rm -rf")
    assert cmd.index("rm -rf") < cmd.index("systemctl start xrootd@xcache.service")
    assert "'/raid/xcache/data/f 1' '/raid/xcache/data/f 1.cinfo'" in cmd   # quoted: a name is never two paths


def test_the_xrootd_units_gateway_reads_which_units_run():
    ssh = FakeSSH([("is-active", "xrootd@data=active\ncmsd@data=failed\n", 0)])
    assert XrootdUnits(ssh, "dtn").active(["xrootd@data", "cmsd@data", "xrootd@xcache"]) == {
        "xrootd@data": True, "cmsd@data": False, "xrootd@xcache": False}


def test_releasing_the_raid_stops_its_users_before_unmounting(small):
    ssh = FakeSSH()
    fst.StorageFaults(small, ssh).release_raid()
    stops = [c for _h, c in ssh.commands if c.startswith("systemctl stop")]
    assert stops == [units_command("stop", RAID_USERS, tolerant=True)]
    assert [c for _h, c in ssh.commands].index(stops[0]) < next(
        i for i, (_h, c) in enumerate(ssh.commands) if "umount /raid" in c)


def test_evicted_files_and_their_records_leave_the_cache(small):
    ssh = FakeSSH()
    fst.StorageFaults(small, ssh).evict(["file-001"])
    (host, cmd), = ssh.commands
    assert host == "dtn" and f"{CACHE_DIR}/data/file-001 {CACHE_DIR}/data/file-001.cinfo" in cmd
