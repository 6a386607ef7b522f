"""`testbed run SUITE --box A --box B`: the same points on each box in turn, the site moved
between boxes only when it runs another, and the runs side by side with their releases
(lifecycle, the runner and the box cache faked)."""
import pytest

from testbed import cli
from testbed.model import topology
from testbed.remote.site import Site
from testbed.results import compare, runs as results


@pytest.fixture
def axis(monkeypatch, tmp_path):
    """A fake lifecycle and runner recording what happens, on `small`; box names are the specs."""
    from testbed.cli import experiment_commands
    from testbed.experiments import runner
    from testbed.machines import box_choice, lifecycle, patched_box
    events, state = [], {"up": None, "box": None}
    site = Site(topology.load("small"), root=tmp_path)
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: site)
    monkeypatch.setattr(experiment_commands, "_sized_for_site", lambda suite, scale, topo, st, sets, label=None: sets)
    monkeypatch.setattr(patched_box, "box_for", lambda spec: type("B", (), {"name": str(spec)})())
    monkeypatch.setattr(box_choice, "booted_box", lambda s: state["box"])
    monkeypatch.setattr(lifecycle, "active_topology", lambda: state["up"])

    def up(s, profile, health, box=None, **kw):
        events.append(("up", box))
        state.update(up=s.name, box=box)
        return 0

    def down(s, **kw):
        events.append(("down", state["box"]))
        state.update(up=None, box=None)

    def run(s, suite, profiles, scale, sets, select=(), **kw):
        events.append(("run", state["box"], tuple(select)))
        made = results.Run.create(suite, ["default"], topology={"box": state["box"]}, profile_contents={},
                                  accel="tcg", root=tmp_path / "results")
        made.record("smoke.x", 1.0, "s", profile="default")
        made.finish("complete")
        return 0, made

    monkeypatch.setattr(lifecycle, "up", up)
    monkeypatch.setattr(lifecycle, "down", down)
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(experiment_commands, "_print_comparison",
                        lambda runs, against_paper=False, html=None: events.append(("compare", len(runs))))
    return events, state


def test_each_box_in_turn_and_one_comparison(axis):
    events, state = axis
    state.update(up="small", box="debian13")          # the site runs the first box already: kept
    assert cli.main(["-t", "small", "run", "smoke", "--scale", "ci", "--test", "A Job Runs On A Sleeper Worker Through CCB",
                     "--box", "debian13", "--box", "debian13+release:sid"]) == 0
    assert events == [("run", "debian13", ("--test", "A Job Runs On A Sleeper Worker Through CCB")),
                      ("down", "debian13"), ("up", "debian13+release:sid"),
                      ("run", "debian13+release:sid", ("--test", "A Job Runs On A Sleeper Worker Through CCB")), ("compare", 2)]


def test_a_box_named_twice_or_unknown_is_refused_before_a_site_moves(axis, capsys):
    events, _ = axis
    assert cli.main(["-t", "small", "run", "smoke", "--box", "debian13", "--box", "debian13"]) == 2
    assert "a box is named twice" in capsys.readouterr().err
    assert cli.main(["-t", "small", "run", "smoke", "--box", "debian13", "--box", "debian13+release:nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert events == []


def test_the_legend_names_each_runs_release_when_they_differ(tmp_path):
    made = []
    for condor, box in (("23.9.6", "debian13"), ("25.14.1", "debian13+release:sid")):
        run = results.Run.create("smoke", ["default"], topology={"box": box}, profile_contents={}, accel="tcg",
                                 root=tmp_path)
        run.update(versions={"condor": condor, "xrootd": "v6.2.0"})
        run.record("smoke.x", 1.0, "s", profile="default")
        run.finish("complete")
        made.append(run)
    _headers, _rows, legend = compare.table(made)
    assert legend[0].endswith("(HTCondor 23.9.6, XRootD 6.2.0, box debian13)")
    assert legend[1].endswith("(HTCondor 25.14.1, XRootD 6.2.0, box debian13+release:sid)")
    _headers, _rows, legend = compare.table([made[0], made[0]])
    assert "HTCondor" not in " ".join(legend)          # one release: nothing to tell apart
