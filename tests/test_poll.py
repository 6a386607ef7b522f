"""poll_until, and the waits built on it, on a fake clock."""
import sys
import time
import types

import pytest

from testbed.model.errors import RemoteError
from testbed.remote import poll


@pytest.fixture
def clock(monkeypatch):
    """A fake monotonic clock (time.monotonic and time.sleep): sleep advances it and is logged."""
    state = types.SimpleNamespace(now=100.0, sleeps=[])

    def sleep(s):
        state.sleeps.append(s)
        state.now += s
    monkeypatch.setattr(time, "monotonic", lambda: state.now)
    monkeypatch.setattr(time, "sleep", sleep)
    return state


def checks(*answers, clock=None, cost=0.0):
    """A check returning `answers` in turn (the last one for ever), each call taking `cost` s."""
    seq, calls = list(answers), []

    def check(*_args):
        calls.append(1)
        if clock is not None:
            clock.now += cost
        return seq.pop(0) if len(seq) > 1 else seq[0]
    check.calls = calls
    return check


def test_returns_the_seconds_until_the_check_holds(clock):
    check = checks(False, 0, [], "yes", clock=clock, cost=1.0)
    assert poll.poll_until(check, 60, 5, "never") == pytest.approx(4 * 1.0 + 3 * 5)
    assert len(check.calls) == 4 and clock.sleeps == [5, 5, 5]


def test_a_check_that_holds_at_once_neither_sleeps_nor_times_out(clock):
    assert poll.poll_until(lambda: True, 0, 5, "never") == 0 and clock.sleeps == []


def test_raises_only_after_a_failed_check_past_the_timeout(clock):
    check = checks(False)
    with pytest.raises(RemoteError, match="^not yet$"):
        poll.poll_until(check, 12, 5, "not yet")
    # checks at 0, 5, 10 (not past 12: sleep), 15 (past: raise)
    assert len(check.calls) == 4 and clock.sleeps == [5, 5, 5]


def test_exactly_at_the_timeout_it_checks_once_more(clock):
    check = checks(False, False, True)
    assert poll.poll_until(check, 5, 5, "late") == 10 and len(check.calls) == 3  # at 0, 5 (not past 5), 10


def test_the_message_may_be_built_when_it_is_needed_and_the_error_chosen(clock):
    built = []

    def message():
        built.append(clock.now)
        return "built late"
    with pytest.raises(AssertionError, match="built late"):
        poll.poll_until(lambda: None, 3, 2, message, error=AssertionError)
    assert built == [104.0]


def test_waits_built_on_it_keep_their_messages(clock):
    from testbed.experiments.e5 import e5_scale
    from testbed.experiments.faults import faults as fx
    from testbed.injectors import condor_faults as fc

    running = fc.CondorFaults.__new__(fc.CondorFaults)
    running.running = lambda host, daemon: False
    with pytest.raises(RemoteError, match="^worker1: condor_schedd not running 4 s later$"):
        running.wait_running("worker1", "schedd", timeout=4, poll=2)

    exp = e5_scale.ScaleExperiment.__new__(e5_scale.ScaleExperiment)
    exp.collector_running = checks(True, True, False, clock=clock)
    assert exp.wait_collector_stopped("cm1", timeout=60, poll=2) == 4
    exp.collector_running = lambda host: True
    with pytest.raises(RemoteError, match="^the collector on cm1 still runs 3 s after condor_off$"):
        exp.wait_collector_stopped("cm1", timeout=3, poll=2)

    suite = fx.FaultSuite.__new__(fx.FaultSuite)
    assert suite.wait_for(checks(None, {"fs": "xfs"}), 30, poll=5) == 5
    with pytest.raises(RemoteError, match="^md0 after the reboot: not reached after 9 s$"):
        suite.wait_for(lambda: False, 9, poll=5, what="md0")

    suite.condor = types.SimpleNamespace(snapshot=checks({0: {"JobStatus": 1}}, {0: {"JobStatus": 2}}))
    suite.pool = types.SimpleNamespace(describe_unfinished=lambda cluster: f"{cluster}: 1 idle", submit_host="submit")
    batch = types.SimpleNamespace(count=1, cluster=7)
    assert suite.wait_back(batch, timeout=60, poll=5) == 5
    suite.condor = types.SimpleNamespace(snapshot=lambda batch, label: {0: {"JobStatus": 5}})
    with pytest.raises(RemoteError, match="^submit: cluster 7: every job running or done again after the schedd returned: "
                                         "not reached after 8 s; last seen: 7: 1 idle$"):
        suite.wait_back(batch, timeout=8, poll=5)


def test_the_scale_library_waits_for_a_single_had_leader(clock, monkeypatch):
    from tests.test_experiment_libraries import load
    lib = load("ScaleLibrary")
    leaders = checks(["cm1", "cm2"], ["cm1"], clock=clock)
    pool = types.SimpleNamespace(had_leaders=leaders, negotiator_running=lambda: ["cm1"])
    tb = types.SimpleNamespace(site=types.SimpleNamespace(pool=pool))
    monkeypatch.setattr(lib, "tb", property(lambda self: tb))
    assert lib()._wait_single_negotiator(60.0) is None and clock.sleeps == [5]
    pool.had_leaders = lambda: []
    with pytest.raises(AssertionError, match="^no single HAD leader 10 s after reconfiguring the CMs$"):
        lib()._wait_single_negotiator(10.0)


# --- wait_for: the one wait primitive ----------------------------------------------------------

def test_wait_for_names_what_where_and_the_last_state(clock):
    listed = []

    def check():
        listed.append(1)
        return False
    with pytest.raises(RemoteError, match=r"^cm1: worker startds: not reached after 10 s; last seen: 4 of 8 listed$"):
        poll.wait_for("worker startds", check, 10, 5, host="cm1", state=lambda: f"{len(listed)} of 8 listed")


def test_wait_for_returns_the_seconds_and_the_checks_value(clock):
    waited = poll.wait_for("md0", checks(None, {"fs": "xfs"}), 30, 5)
    assert waited == 5 and waited.value == {"fs": "xfs"}


def test_wait_for_fails_fast_with_the_reason(clock):
    with pytest.raises(RemoteError, match=r"^job 7\.0 done: given up after 5 s: held \(disk full\)$"):
        poll.wait_for("job 7.0 done", lambda: False, 600, 5,
                      fail_fast=checks(None, "held (disk full)"))
    assert clock.sleeps == [5]


def test_wait_for_settles_a_condition_that_must_keep_holding(clock):
    # holds, lapses, then holds for good: settling starts again after the lapse
    check = checks(True, False, True, True, True, clock=clock)
    assert poll.wait_for("quiet", check, 100, 5, settle=10) == 20
    assert len(check.calls) == 5


def test_wait_for_prints_progress_on_a_long_wait(clock):
    lines = []
    check = checks(*([False] * 30 + [True]))
    poll.wait_for("the slots", check, 600, 5, host="submit", echo=lines.append, state="12 idle")
    assert lines == ["  submit: waiting for the slots: 60 s of 600 s (12 idle)",
                     "  submit: waiting for the slots: 120 s of 600 s (12 idle)"]


def test_a_state_that_cannot_be_read_does_not_hide_the_timeout(clock):
    def broken():
        raise OSError("ssh gone")
    with pytest.raises(RemoteError, match=r"not reached after 3 s; last seen: \(state unknown: ssh gone\)"):
        poll.wait_for("x", lambda: False, 3, 2, state=broken)


def test_repeat_for_calls_the_action_for_the_time_given(clock):
    seen = []
    assert poll.repeat_for(10, seen.append, 2) == 5 and seen == [0, 2, 4, 6, 8]
    assert poll.repeat_for(10, lambda t: t < 4, 2) == 3  # stopped by the action at t=4


def test_the_scale_library_waits_for_its_startds_without_the_paused_guests(monkeypatch):
    """A run pauses the guests it does not use (origin under E5): waiting for the run's startds
    must not wait for them too, or the suite's set-up times out on a guest it paused itself."""
    from tests.test_experiment_libraries import load
    lib = load("ScaleLibrary")
    module = sys.modules[lib.__module__]
    asked = {}

    def wait_healthy(topo, ssh, timeout, echo=None, skip=()):
        asked["skip"] = tuple(skip)
        return True, "healthy"
    monkeypatch.setattr(module.scale, "wait_healthy", wait_healthy)
    monkeypatch.setattr(module.uber, "measured_startd_memory", lambda exclude=None: None)
    monkeypatch.setattr(module.uber, "startds_refused", lambda params, topo, memory: None)
    monkeypatch.setattr(module.e5_config, "use_startds", lambda ssh, workers, count, slots: None)
    monkeypatch.setattr(module.uber, "StartdSampler",
                        lambda ssh, workers: types.SimpleNamespace(memory=lambda: {}))
    worker = types.SimpleNamespace(total_slots=4)
    topo = types.SimpleNamespace(with_role=lambda role: [worker], planned_startds=2)
    site = types.SimpleNamespace(paused=("origin",), ssh="ssh", topo=topo, run=None)
    monkeypatch.setattr(lib, "tb", property(lambda self: types.SimpleNamespace(site=site)))
    monkeypatch.setattr(lib, "exp", property(lambda self: types.SimpleNamespace(workers=["worker1"])))
    monkeypatch.setattr(lib, "params", lambda self: {"min_free_mb": 64})
    monkeypatch.setattr(lib, "topology_with", lambda self, count, slots=0: topo)
    assert lib().use_startds_per_worker(2, 1) == 4
    assert asked["skip"] == ("origin",)
