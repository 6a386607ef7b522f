"""What a site carried before a run: recorded at bring-up, restore and each run's start,
written into the run's manifest and described in one phrase."""
from testbed.model import site_history
from testbed.model.state import TestbedState
from testbed.remote.site import Site


def test_a_run_on_a_fresh_site_says_so_and_the_next_one_names_it(tmp_path):
    state = TestbedState("default", root=tmp_path)
    site_history.began(state, "bring-up")
    first = site_history.for_run(state)
    assert first["how"] == "bring-up" and first["runs_before"] == [] and first["since"].endswith("Z")
    assert site_history.describe(first) == "a site fresh from a bring-up"
    site_history.add_run(state, "20261129T120000Z-e3-default")
    second = site_history.for_run(state)
    assert second["runs_before"] == ["20261129T120000Z-e3-default"]
    assert site_history.describe(second) == ("a site that had carried 1 run since a bring-up "
                                             "(20261129T120000Z-e3-default)")


def test_a_new_bring_up_starts_a_new_history_and_down_forgets_it(tmp_path):
    state = TestbedState("default", root=tmp_path)
    site_history.began(state, "bring-up")
    site_history.add_run(state, "a")
    site_history.began(state, "snapshot clean")
    assert site_history.describe(site_history.for_run(state)) == "a site fresh from snapshot clean"
    site_history.forget(state)
    assert site_history.for_run(state) == {"how": "unknown", "runs_before": []}


def test_a_site_nothing_recorded_is_of_unknown_history_and_counts_no_runs(tmp_path):
    state = TestbedState("default", root=tmp_path)
    site_history.add_run(state, "a")   # a plain `vagrant up`: nothing says how the site came up
    assert site_history.read(state) is None
    assert site_history.describe(site_history.for_run(state)) == "a site of unknown history"
    assert site_history.describe(None) == "a site of unknown history"
    assert site_history.describe({"how": "bring-up", "runs_before": ["a", "b"]}) == (
        "a site that had carried 2 runs since a bring-up (a, b)")


def test_open_run_writes_the_site_into_the_manifest_and_counts_the_run(tmp_path, monkeypatch):
    from testbed.harness import registry, runner
    from testbed.model import profiles, topology
    from testbed.results import runs
    monkeypatch.setattr(runs, "RESULTS_ROOT", tmp_path / "results")
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(runner.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(runner.disks, "describe", lambda topo: {})
    topo = topology.load("small")
    site_history.began(TestbedState("small"), "bring-up")
    one = runner.open_run(Site(topo), registry.get("smoke"), [profiles.load("default")], "ci", [])
    two = runner.open_run(Site(topo), registry.get("smoke"), [profiles.load("default")], "ci", [])
    assert one.manifest()["site"]["runs_before"] == []
    assert two.manifest()["site"]["runs_before"] == [one.path.name]
