"""The HTCondor gateway (services/gateway.py): Schedd's submit handle and its wait, Daemons,
ConfigFragment."""
import json
import subprocess

import pytest

from testbed.model.errors import RemoteError
from testbed.remote.ssh import Result
from testbed.services import gateway


@pytest.fixture
def no_sleep(monkeypatch):
    from testbed.remote import poll
    now = [0.0]
    monkeypatch.setattr(poll.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(poll.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


class JobsSSH:
    """condor_q/condor_history answers, one per call (the last repeats); records commands."""

    def __init__(self, answers, submit_out="12.0 - 12.2\n"):
        self.answers, self.submit_out, self.commands = list(answers), submit_out, []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        if "condor_submit" in command:
            return Result(host, 0, self.submit_out, "")
        if "condor_q" in command:
            ads = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            return Result(host, 0, ("[]" if ads is None else json.dumps(ads)) + "\n#SPLIT#\n[]\n", "")
        return Result(host, 0, "", "")


def ad(proc, status, **kw):
    return dict({"ClusterId": 12, "ProcId": proc, "JobStatus": status}, **kw)


def test_submit_returns_a_handle_whose_wait_returns_the_completed_ads(no_sleep):
    ssh = JobsSSH([[ad(0, 2), ad(1, 1), ad(2, 1)], [ad(0, 4), ad(1, 4), ad(2, 4)]])
    jobs = gateway.Schedd(ssh, "dtn").submit("queue 3\n", "/home/tb/x", files={"a.sh": ("echo", "0755")})
    assert (jobs.cluster, jobs.count, jobs.schedd.host) == (12, 3, "dtn")
    assert all(h == "dtn" for h, _c in ssh.commands)
    assert "chmod 0755 a.sh" in ssh.commands[0][1]
    assert len(jobs.wait(timeout=60, poll=5)) == 3 and no_sleep[0] == 5


def test_a_held_job_is_an_error_naming_the_hold_reason(no_sleep):
    ssh = JobsSSH([[ad(0, 5, HoldReason="disk full")]])
    with pytest.raises(RemoteError, match=r"^job 12\.0 held: disk full$"):
        gateway.Schedd(ssh, "submit").wait(12, 1, timeout=60)


def test_a_schedd_too_busy_to_answer_is_not_0_done_and_a_timeout_describes_the_jobs(no_sleep):
    ssh = JobsSSH([None, None, [ad(0, 4)]])
    assert gateway.Schedd(ssh, "submit").wait(12, 1, timeout=60) == [ad(0, 4)]
    ssh = JobsSSH([[ad(0, 4), ad(1, 1, LastRejMatchReason="no match found")]])
    with pytest.raises(RemoteError, match=r"^cluster 12: 1 of 2 jobs done after 20 s; 1 idle; 12\.1 idle "
                                          r"\(LastRejMatchReason=no match found\)$"):
        gateway.Schedd(ssh, "submit").wait(12, 2, timeout=20)


def test_parse_terse_counts_the_jobs_of_a_cluster():
    assert gateway.parse_terse("noise\n7.0 - 7.0\n") == (7, 1)
    assert gateway.parse_terse("7.0 - 7.15\n") == (7, 16)


def test_remove_forces_out_only_what_is_left_after_force_after(no_sleep):
    counts = [3, 3, 3, 1, 0]

    class QueueSSH:
        commands = []

        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            self.commands.append(command)
            if "condor_q" in command:
                return Result(host, 0, "5\n" * counts.pop(0) + gateway.Schedd.QUEUED_OK + "\n", "")
            return Result(host, 0, "", "")

    ssh = QueueSSH()
    assert gateway.Schedd(ssh, "submit").remove("E5Role =?= \"x\"", timeout=300, force_after=12, poll=5) == 0
    rms = [c for c in ssh.commands if "condor_rm" in c]
    assert len(rms) == 2 and rms[1].endswith("-forcex") and not rms[0].endswith("-forcex")


class Recorder:
    def __init__(self, out=""):
        self.out, self.commands = out, []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        return Result(host, 0, self.out, "")


def test_daemons_kill_one_by_its_comm_and_hold_one_down():
    ssh = Recorder("killed=2\n")
    d = gateway.Daemons(ssh, "cm1")
    assert d.kill("negotiator") == 2
    assert "pkill -KILL -x condor_negotiat" in ssh.commands[0][1]
    d.hold_down("collector")
    assert "condor_off -fast -daemon collector" in ssh.commands[-1][1]
    assert "condor_collecto" in gateway.Daemons.KILL_TOP_COLLECTOR and "-local-name" in gateway.Daemons.KILL_TOP_COLLECTOR
    with pytest.raises(RemoteError, match="no condor_schedd process to kill"):
        gateway.Daemons(Recorder("killed=0\n"), "submit").kill("schedd")


def test_a_config_fragment_reconfigures_only_when_it_changed(tmp_path):
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    for name in ("condor_reconfig", "condor_restart"):
        (bin_dir / name).write_text(f"#!/bin/sh\necho {name} $* >> {log}\n")
        (bin_dir / name).chmod(0o755)
    frag = gateway.ConfigFragment(None, "cm1", str(tmp_path / "70-x.conf"))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    for _ in range(2):  # the second install changes nothing: no second reconfig
        assert subprocess.run(["bash", "-c", frag.script("X = 1\n", restart_had=True)], env=env).returncode == 0
    assert (tmp_path / "70-x.conf").read_text() == "X = 1\n"
    assert log.read_text().splitlines() == ["condor_reconfig", "condor_restart -subsystem had"]
    assert subprocess.run(["bash", "-c", frag.script("")], env=env).returncode == 0
    assert not (tmp_path / "70-x.conf").exists() and log.read_text().count("condor_reconfig") == 2
    assert "systemctl restart condor" in frag.script("X = 1\n", restart=True)
