"""Pool's waits: worker_startd_ads until every planned worker startd's daemon ad is listed; wait_negotiator_on until HAD and the running negotiator agree."""
import pytest

from testbed.model import topology
from testbed.model.errors import RemoteError
from testbed.remote import poll
from testbed.remote.ssh import Result
from testbed.services.condor import Pool

CCB = "<10.160.0.13:9618?CCBID=10.160.0.11:9618%3faddrs&sock=startd_1>"


class AnswersSSH:
    """condor_status answers in turn (the last one repeats)."""
    def __init__(self, *answers):
        self.answers, self.asked = list(answers), 0

    def run(self, host, command, check=True, timeout=None):
        assert host == "submit" and "condor_status -startd" in command
        self.asked += 1
        return Result(host, 0, self.answers.pop(0) if len(self.answers) > 1 else self.answers[0], "")


@pytest.fixture
def fake_time(monkeypatch):
    """poll_until's clock: sleeping moves it on, nothing really waits."""
    t = [0.0]

    class Clock:
        @staticmethod
        def monotonic():
            return t[0]

        @staticmethod
        def sleep(s):
            t[0] += s
    monkeypatch.setattr(poll, "time", Clock)
    return t


def test_the_startd_ads_are_waited_for_until_every_planned_startd_is_listed(fake_time):
    topo = topology.load("small")           # worker1: 2 startds
    # the collector the tool asked had no startd ad yet, then one, then both (and the DTN's)
    ssh = AnswersSSH("", f"worker1.small.testbed {CCB}\n",
                     f"worker1.small.testbed {CCB}\nworker1.small.testbed {CCB}\ndtn.small.testbed <x>\n")
    ads = Pool(topo, ssh).worker_startd_ads(timeout=60, poll=5)
    assert ssh.asked == 3 and [m for m, _ in ads] == ["worker1.small.testbed"] * 2
    assert all("CCBID" in a for _, a in ads)


def test_missing_startd_ads_fail_with_the_count_after_the_time_out(fake_time):
    ssh = AnswersSSH(f"worker1.small.testbed {CCB}\n")
    with pytest.raises(RemoteError, match=r"1 of 2 worker startd ads in the collector after 60 s"):
        Pool(topology.load("small"), ssh).worker_startd_ads(timeout=60, poll=5)
    assert ssh.asked >= 12


def test_wait_negotiator_on_needs_had_and_the_only_running_negotiator(fake_time, monkeypatch):
    states = [(["cm1"], ["cm1"]), (["cm2"], ["cm1", "cm2"]), (["cm2"], ["cm2"])]
    pool = Pool(topology.load("small"), None)
    seen = []

    def state():
        seen.append(states.pop(0) if len(states) > 1 else states[0])
        return seen[-1]
    monkeypatch.setattr(Pool, "had_leaders", lambda self: state()[0])
    monkeypatch.setattr(Pool, "negotiator_running", lambda self: seen[-1][1])
    assert pool.wait_negotiator_on("cm2", timeout=60, poll=5) == 10.0
    states[:] = [(["cm2"], ["cm1", "cm2"])]
    with pytest.raises(RemoteError, match="negotiator did not move to cm2 within 20 s"):
        pool.wait_negotiator_on("cm2", timeout=20, poll=5)
