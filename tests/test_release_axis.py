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
    from testbed.harness import runner
    from testbed.machines import box_choice, lifecycle, patched_box
    events, state = [], {"up": None, "box": None}
    site = Site(topology.load("small"), root=tmp_path)
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: site)
    monkeypatch.setattr(runner, "sized_for_site", lambda exp, scale, topo, accelerator, sets, **k: sets)
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

    def run(s, exp, scale, sets, profiles, select=(), **kw):
        events.append(("run", state["box"], tuple(select)))
        made = results.Run.create(exp.name, ["default"], topology={"box": state["box"]}, profile_contents={},
                                  accel="tcg", root=tmp_path / "results")
        made.record("smoke.x", 1.0, "s", profile="default")
        made.finish("complete")
        return 0, made

    monkeypatch.setattr(lifecycle, "up", up)
    monkeypatch.setattr(lifecycle, "down", down)
    monkeypatch.setattr(runner, "run_checked", run)
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


def runs_on_two_releases(root, suite, metric):
    """Two finished runs of `suite`, one record of `metric` each: on the stock box (HTCondor
    23.9.6) and on the sid release box (HTCondor 25.14.1)."""
    made = []
    for condor, box in (("23.9.6", "debian13"), ("25.14.1", "debian13+release:sid")):
        run = results.Run.create(suite, ["default"], topology={"box": box}, profile_contents={}, accel="tcg",
                                 root=root)
        run.update(versions={"condor": condor, "xrootd": "v6.2.0"})
        run.record(metric, 1.0, "s", profile="default")
        run.finish("complete")
        made.append(run)
    return made


def test_the_legend_names_each_runs_release_when_they_differ(tmp_path):
    made = runs_on_two_releases(tmp_path, "smoke", "smoke.x")
    _headers, _rows, legend = compare.table(made)
    assert legend[0].endswith("(HTCondor 23.9.6, XRootD 6.2.0, box debian13)")
    assert legend[1].endswith("(HTCondor 25.14.1, XRootD 6.2.0, box debian13+release:sid)")
    _headers, _rows, legend = compare.table([made[0], made[0]])
    assert "HTCondor" not in " ".join(legend)          # one release: nothing to tell apart


def test_a_metric_across_the_kept_references_of_each_release(tmp_path):
    from testbed.report import release_matrix as ex
    for key, condor, xrootd, values in (("quick-default", "23.9.6", "v5.8.1", (132.0, 57.3, 75.9)),
                                        ("quick-small+release-sid", "25.14.1", "v6.2.0", (3.2, 7.6, 1.3))):
        run = results.Run.create("e2", ["default"], topology={}, profile_contents={}, accel="tcg",
                                 path=tmp_path / "e2" / key)
        run.update(versions={"condor": condor, "xrootd": xrootd})
        for trial, value in enumerate(values, 1):
            results.Run(run.path, trial=trial).record("e2.round_trips_per_mb", value, "round trips/MB",
                                                      origin_rtt_ms=20.0, path="direct-pgread")
            results.Run(run.path, trial=trial).record("e2.round_trips_per_mb", 1.0, "round trips/MB",
                                                      origin_rtt_ms=0.0, path="direct-pgread")
        run.finish("complete")
    text = ex.by_release_section("e2:e2.round_trips_per_mb:origin_rtt_ms=20.0", tmp_path)
    lines = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(lines) == 2                                   # the 0 ms records are filtered out
    assert "| 23.9.6 | 5.8.1 |" in lines[0] and "88.4 [" in lines[0]
    assert "| 25.14.1 | 6.2.0 |" in lines[1] and "`quick-small+release-sid`" in lines[1] and "4.03 [" in lines[1]
    assert "No reference run kept yet for `e1`" in ex.by_release_section("e1:e1.x", tmp_path)


def test_runs_on_two_releases_print_beside_the_paper_figures_they_did_not_measure(tmp_path):
    made = runs_on_two_releases(tmp_path, "e2", "e2.submit_to_start")
    headers, rows, _legend = compare.table(made, compare.load_paper())
    assert "apart" in headers and "paper" in headers
    assert len(rows) > 1 and all(len(row) == len(headers) for row in rows)   # the paper's rows too
    assert "e2.submit_to_start" in compare.render_text(made, compare.load_paper())
