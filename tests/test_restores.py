"""A restore step of a suite's teardown that fails is recorded, fails the teardown, and the
next run on that site is refused with the line that repairs it."""
import pytest

from testbed.model import topology
from testbed.model.errors import TestbedError
from testbed.model.state import TestbedState
from testbed.remote import repair_record
from testbed.remote.site import Site

from test_experiment_libraries import load


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    state = TestbedState(topo.name).ensure_dirs()
    return topo, state


def library(site, monkeypatch, outcomes):
    """TestbedLibrary without a site: BuiltIn's run_keyword raises for the steps in
    `outcomes` that map to an exception, and the suite is named E9."""
    mod = load("TestbedLibrary")
    import TestbedLibrary as module
    ran = []

    class FakeBuiltIn:
        def run_keyword(self, name, *args):
            ran.append((name, *args))
            if outcomes.get(name):
                raise outcomes[name]
            return "ok"

        def get_variable_value(self, name, default=None):
            return "E9" if name == "${SUITE NAME}" else default

    monkeypatch.setattr(module, "BuiltIn", FakeBuiltIn)
    from testbed.harness import session
    lib = mod.__new__(mod)
    lib.site = session.Session.__new__(session.Session)
    lib.site.topo, lib.site.state = site
    return lib, ran


def test_a_failed_restore_step_is_recorded_and_fails(site, monkeypatch):
    lib, ran = library(site, monkeypatch, {"Clear WAN": AssertionError("tc: RTNETLINK answers: busy\nmore")})
    assert lib.restore_step("Restore The Default Profile") == "ok"
    assert repair_record.needed(site[1]) == []
    with pytest.raises(AssertionError, match="RTNETLINK"):
        lib.restore_step("Clear WAN")
    assert repair_record.needed(site[1]) == [{"suite": "E9", "step": "Clear WAN",
                                              "problem": "tc: RTNETLINK answers: busy more"}]
    with pytest.raises(AssertionError, match="site small needs repair: E9's teardown could not `Clear WAN`"):
        lib.start_experiment("e9")


def test_the_refusal_is_one_line_naming_the_step_and_the_repair(site):
    topo, state = site
    assert repair_record.refusal(topo, state) is None
    repair_record.record(state, "E5", "Bring Every Collector Back", "cm1: collector did not answer")
    repair_record.record(state, "E5", "Restore The Central Managers", "timed out")
    line = repair_record.refusal(topo, state)
    assert "\n" not in line and "E5's teardown could not `Bring Every Collector Back` (and 1 more step(s))" in line
    assert "`./tb -t small down && ./tb -t small up` brings up a clean site" in line
    repair_record.clear(state)
    assert repair_record.refusal(topo, state) is None


def test_a_run_is_refused_on_a_site_that_needs_repair(site, monkeypatch):
    from testbed.harness import runner
    topo, state = site
    repair_record.record(state, "E2", "Restore The Topology Disk Limits", "virsh blkdeviotune failed")
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: {})
    with pytest.raises(TestbedError, match="testbed run e2: site small needs repair"):
        runner.run(Site(topo), "e2", [], "ci")

