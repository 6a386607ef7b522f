"""A suite's `Apply Profile If Needed`: no apply when the suite applied the profile last, or when
the site's record names it and every value reads back; an apply otherwise. Its
`Set WAN Latency If Needed`: no setting when the suite set that RTT between the pair last."""
import pytest

from testbed.harness import session
from testbed.model import profiles, topology
from testbed.remote.profile_record import record_profile


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    s = session.Session(topo, ssh=object())
    s.state.ensure_dirs()
    calls = []
    s.mismatches_given = []
    monkeypatch.setattr(s, "apply_profile", lambda name, echo: calls.append(("apply", name)) or 7.0)

    def mismatches(name):
        calls.append(("read back", name))
        return 40, list(s.mismatches_given)
    monkeypatch.setattr(s, "profile_mismatches", mismatches)
    return s, calls


def test_a_profile_the_record_names_and_the_site_reads_back_is_not_applied(site):
    s, calls = site
    record_profile(s.state, profiles.load("default"))
    said = []
    assert s.apply_profile_if_needed("default", said.append) == 0.0
    assert calls == [("read back", "default")] and s.profile_in_force.name == "default"
    assert "already in force: 40 values read back" in said[0]
    assert s.apply_profile_if_needed("default", said.append) == 0.0 and len(calls) == 1   # this suite's own


def test_a_value_that_does_not_read_back_means_an_apply(site):
    s, calls = site
    record_profile(s.state, profiles.load("default"))
    s.mismatches_given = ["worker1: sysctl net.core.rmem_max is '1', profile default wants '2'"]
    assert s.apply_profile_if_needed("default", print) == 7.0
    assert calls == [("read back", "default"), ("apply", "default")]


@pytest.mark.parametrize("recorded", [None, "wan-tuned"])
def test_another_or_no_recorded_profile_is_applied_without_reading_back(site, recorded):
    s, calls = site
    if recorded:
        record_profile(s.state, profiles.load(recorded))
    assert s.apply_profile_if_needed("default", print) == 7.0
    assert calls == [("apply", "default")]


def test_an_apply_that_failed_part_way_leaves_no_profile_known_in_force(tmp_path, monkeypatch):
    """Some hosts took the profile and some not: the suite and the site's record forget what
    is in force, so the teardown's restore applies `default` in full instead of trusting them."""
    from testbed.model.errors import TestbedError
    from testbed.remote.profile_record import recorded_profile
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    s = session.Session(topo, ssh=object())
    s.state.ensure_dirs()
    record_profile(s.state, profiles.load("default"))
    s.profile_in_force = profiles.load("default")

    def half_applied(*a, **k):
        raise TestbedError("profile wan-tuned: applying failed on worker1: sysctl: not found")
    monkeypatch.setattr(session.tuning, "apply", half_applied)
    with pytest.raises(TestbedError, match="applying failed on worker1"):
        s.apply_profile("wan-tuned", echo=print)
    assert s.profile_in_force is None and s.current_profile() is None and recorded_profile(s.state) is None
    assert "applying failed on worker1" in s.state.profile_record.read_text()
    applied = []
    monkeypatch.setattr(session.tuning, "apply", lambda topo, ssh, prof, previous, **k: applied.append(prof.name)
                        or {"seconds": 1.0, "changed": {}, "readback": {}, "read_again": False})
    assert s.apply_profile_if_needed("default", echo=print) == 1.0 and applied == ["default"]


def test_a_wan_latency_the_suite_set_last_is_not_set_again(monkeypatch):
    s = session.Session(topology.load("small"), ssh=object())
    applied = []
    monkeypatch.setattr(session.wan, "set_links", lambda topo, ssh, state, links, count, skip=(): applied.append(links)
                        or [{"measured_ms": 41.0 + len(applied), "min_ms": 40.0 + len(applied), "samples": 10}])
    assert s.set_wan_latency_if_needed("submit", "worker", "40", print) == 41.0 and len(applied) == 1
    assert s.set_wan_latency_if_needed("submit", "worker", 40.0, print) == 41.0 and len(applied) == 1
    assert s.set_wan_latency_if_needed("submit", "worker", 80, print) == 42.0 and len(applied) == 2
    assert s.set_wan_latency_if_needed("submit", "cm", 80, print) == 43.0 and len(applied) == 3


def test_a_measured_rtt_matches_within_1_ms_and_5_percent_over_the_lans_own():
    session.Session.check_measured_rtt("40", "41.5", "0.8")
    with pytest.raises(AssertionError, match=r"^RTT 12.1 ms \(base 0.0 ms\) is not within 1 ms \+ 5% of 10 ms$"):
        session.Session.check_measured_rtt(10, 12.1)
