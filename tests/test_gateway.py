"""The HTCondor gateway (services/gateway.py): Schedd's submit handle and its wait, Daemons,
ConfigFragment."""
import json
import subprocess

import pytest

from testbed.model.errors import RemoteError
from testbed.remote.ssh import Result
from testbed.services import gateway, job_events


@pytest.fixture
def no_sleep(monkeypatch):
    from testbed.remote import poll
    now = [0.0]
    monkeypatch.setattr(poll.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(poll.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


class JobsSSH:
    """A submit host whose job event log reads `logs`, one text per read (the last repeats),
    and whose queue and history hold `ads`; records commands."""

    def __init__(self, logs, ads, submit_out="12.0 - 12.2\n", user_log="/home/tb/x/job.log"):
        self.logs, self.ads, self.submit_out, self.user_log = list(logs), ads, submit_out, user_log
        self.commands = []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        if "condor_submit" in command:
            return Result(host, 0, self.submit_out, "")
        if "-af UserLog" in command:
            return Result(host, 0, f"{self.user_log}\n" if self.user_log else "", "")
        if "cat " in command and "job.log" in command:
            return Result(host, 0, self.logs.pop(0) if len(self.logs) > 1 else self.logs[0], "")
        if "condor_q" in command:
            return Result(host, 0, json.dumps(self.ads) + "\n#SPLIT#\n[]\n", "")
        return Result(host, 0, "", "")


def ad(proc, status, **kw):
    return dict({"ClusterId": 12, "ProcId": proc, "JobStatus": status}, **kw)


def event(code, proc, text, *detail, cluster=12):
    return (f"{code} ({cluster:03d}.{proc:03d}.000) 2026-11-29 21:00:00 {text}\n"
            + "".join(f"\t{d}\n" for d in detail) + "...\n")


SUBMITTED3 = "".join(event("000", p, "Job submitted from host: <10.0.0.1:9618>") for p in range(3))


def test_submit_returns_a_handle_whose_wait_reads_the_event_log_and_returns_the_completed_ads(no_sleep):
    ended = SUBMITTED3 + "".join(event("005", p, "Job terminated.", "(1) Normal termination (return value 0)")
                                 for p in range(3))
    ssh = JobsSSH([SUBMITTED3, ended], [ad(0, 4), ad(1, 4), ad(2, 4)])
    jobs = gateway.Schedd(ssh, "dtn").submit("queue 3\n", "/home/tb/x", files={"a.sh": ("echo", "0755")})
    assert (jobs.cluster, jobs.count, jobs.schedd.host) == (12, 3, "dtn")
    assert all(h == "dtn" for h, _c in ssh.commands)
    assert "chmod 0755 a.sh" in ssh.commands[0][1]
    assert len(jobs.wait(timeout=60, poll=5)) == 3 and no_sleep[0] == 5
    # polled on the log alone: the schedd is asked for the log's path and, at the end, the ads
    assert sum("condor_q" in c for _h, c in ssh.commands) == 2


def test_a_held_job_is_an_error_naming_the_hold_reason(no_sleep):
    held = SUBMITTED3 + event("012", 1, "Job was held.", "disk full", "Code 13 Subcode 0")
    with pytest.raises(RemoteError, match=r"^job 12\.1 held: disk full$"):
        gateway.Schedd(JobsSSH([held], []), "submit").wait(12, 3, timeout=60)


def test_a_job_released_after_its_hold_is_waited_for():
    released = (SUBMITTED3 + event("012", 1, "Job was held.", "disk full") + event("013", 1, "Job was released.")
                + "".join(event("005", p, "Job terminated.") for p in range(3)))
    events = job_events.cluster_events(released, 12)
    assert events.held == {} and events.terminated == {0, 1, 2}


def test_removed_jobs_that_leave_too_few_to_end_are_an_error(no_sleep):
    removed = SUBMITTED3 + event("009", 0, "Job was aborted.", "via condor_rm (by user tb)") + \
        event("009", 1, "Job was aborted.")
    with pytest.raises(RemoteError, match=r"^cluster 12: 2 of 3 jobs removed, 2 can no longer end$"):
        gateway.Schedd(JobsSSH([removed], []), "submit").wait(12, 2, timeout=60)


def test_events_of_other_clusters_and_evictions_are_told_apart():
    text = (event("005", 0, "Job terminated.", cluster=11) + event("000", 0, "Job submitted") +
            event("004", 0, "Job was evicted.", "(0) Job was not checkpointed.") + event("005", 0, "Job terminated."))
    events = job_events.cluster_events(text, 12)
    assert (events.submitted, events.terminated, events.evictions) == ({0}, {0}, 1)


JOB_LOG = """000 (012.000.000) 2026-11-23 07:20:00 Job submitted from host: <10.160.0.10:9618>
...
001 (012.000.000) 2026-11-23 07:20:30 Job executing on host: <10.160.0.13:9618>
...
022 (012.000.000) 2026-11-23 07:21:00 Job disconnected, attempting to reconnect
    Socket between submit and execute hosts closed unexpectedly
...
023 (012.000.000) 2026-11-23 07:21:42 Job reconnected to slot1@startd1@worker1.small.testbed
...
022 (012.001.000) 11/23 07:21:00 Job disconnected, attempting to reconnect
...
024 (012.001.000) 11/23 07:41:00 Job reconnection failed
...
"""


def test_reconnects_from_the_job_event_log():
    r = job_events.cluster_events(JOB_LOG, 12).reconnects
    assert r[0] == {"disconnected": 1, "reconnected": 1, "failed": 0, "seconds": [42.0]}
    assert r[1]["failed"] == 1 and r[1]["seconds"] == []
    assert job_events.cluster_events(JOB_LOG, 11).reconnects == {}


def test_a_timeout_describes_the_unfinished_jobs(no_sleep):
    one_ended = event("000", 0, "Job submitted") + event("000", 1, "Job submitted") + event("005", 0, "Job terminated.")
    ssh = JobsSSH([one_ended], [ad(0, 4), ad(1, 1, LastRejMatchReason="no match found")])
    with pytest.raises(RemoteError, match=r"^cluster 12: 1 of 2 jobs done after 20 s; 1 idle; 12\.1 idle "
                                          r"\(LastRejMatchReason=no match found\)$"):
        gateway.Schedd(ssh, "submit").wait(12, 2, timeout=20)


def test_a_cluster_without_a_job_event_log_is_an_error_not_a_wait_forever(no_sleep):
    with pytest.raises(RemoteError, match="cluster 12's job event log"):
        gateway.Schedd(JobsSSH([""], [], user_log=None), "submit").wait(12, 1, timeout=60)


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
