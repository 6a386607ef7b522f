"""`testbed test` meets a guest whose kernel died under TCG (runner.run_on_live_guests): the
site is brought back once and the suite run again, and what died is said."""
import types

import pytest

from testbed.harness import runner
from testbed.model.errors import TestbedError
from testbed.remote.site import Site

SITE = Site(types.SimpleNamespace(name="small", vm_hosts=[]))
PANIC = {"submit": "traps: PANIC: double fault, error_code: 0x0"}


class FakeRun:
    def __init__(self, label, status):
        self.label, self.status = label, status

    def manifest(self):
        return {"status": self.status}


@pytest.fixture
def site(monkeypatch):
    """rcs: each run's rc; deaths: dead_guests' answers in order (then {}); the calls made."""
    calls = {"runs": [], "brought_back": 0}
    plan = {"rcs": [], "deaths": []}

    def run(site, suite, profiles, scale, echo=print, **run_args):
        calls.setdefault("run_args", run_args)
        if plan.get("refuse_dead") and not calls["brought_back"]:   # as run() refuses a dead site
            raise TestbedError("the kernel of submit died")
        rc = plan["rcs"][len(calls["runs"])]
        calls["runs"].append(rc)
        return rc, FakeRun(f"run{len(calls['runs'])}", "complete" if rc == 0 else "failed")

    def dead(topo):
        return plan["deaths"].pop(0) if plan["deaths"] else {}

    def bring_back():
        calls["brought_back"] += 1
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(runner.console, "dead_guests", dead)
    return plan, calls, bring_back


def test_a_suite_that_passes_runs_once(site):
    plan, calls, bring_back = site
    plan["rcs"] = [0]
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e1", ["default"], "ci", bring_back, echo=lambda *_: None)
    assert rc == 0 and [r.label for r in runs] == ["run1"] and recovered is None and calls["brought_back"] == 0


def test_a_guest_death_during_a_failed_suite_brings_the_site_back_and_runs_it_again(site):
    plan, calls, bring_back = site
    plan["rcs"], plan["deaths"] = [1, 0], [{}, PANIC]     # alive before, dead after the first run
    said = []
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e1", ["default"], "ci", bring_back, echo=said.append,
                                                    sets={"rtts": "0"}, repeat=1)
    assert rc == 0 and calls == {"runs": [1, 0], "brought_back": 1, "run_args": {"sets": {"rtts": "0"}, "repeat": 1}}
    assert [(r.label, r.status) for r in runs] == [("run1", "failed"), ("run2", "complete")]
    assert recovered.startswith("during e1 (run run1, kept as failed): the kernel of submit")
    assert any("running e1 once more" in line and "double fault" in line for line in said)


def test_a_second_failure_after_the_recovery_is_the_suites(site):
    plan, calls, bring_back = site
    plan["rcs"], plan["deaths"] = [1, 1], [{}, PANIC, PANIC]
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e1", ["default"], "ci", bring_back, echo=lambda *_: None)
    assert rc == 1 and calls["runs"] == [1, 1] and calls["brought_back"] == 1 and recovered


def test_a_failure_on_live_guests_is_not_run_again(site):
    plan, calls, bring_back = site
    plan["rcs"] = [1]
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e1", ["default"], "ci", bring_back, echo=lambda *_: None)
    assert rc == 1 and len(runs) == 1 and recovered is None and calls["brought_back"] == 0


def test_without_a_recovery_left_a_dead_guest_fails_the_suite(site):
    plan, calls, bring_back = site
    plan["rcs"], plan["deaths"] = [1], [{}, PANIC]
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e2", ["default"], "ci", bring_back, may_recover=False,
                                                    echo=lambda *_: None)
    assert rc == 1 and len(runs) == 1 and recovered is None and calls["brought_back"] == 0


def test_a_guest_dead_before_the_suite_is_brought_back_first(site):
    plan, calls, bring_back = site
    plan["rcs"], plan["deaths"], plan["refuse_dead"] = [0], [PANIC], True
    rc, runs, recovered = runner.run_on_live_guests(SITE, "e2", ["default"], "ci", bring_back, echo=lambda *_: None)
    assert rc == 0 and calls["runs"] == [0] and calls["brought_back"] == 1 and recovered.startswith("before e2: the kernel of")
