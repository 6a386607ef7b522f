"""The progress line of `testbed run` (testbed/harness/progress.py): its format, the
estimate from a kept reference, from the run's own points, none when nothing is known; and
a real robot run with robot/listeners/Progress.py, whose line comes before the row's own."""
import json
import subprocess
import sys
import types

import pytest

from testbed.harness import progress, registry, runner
from testbed.model.clock import utc_iso
from testbed.model.constants import POINT_SECONDS_FIELD
from testbed.results import runs as results
from tests.support import script_env

NOW = 1_800_000_000.0


def timed(*seconds, trial=1, status="PASS"):
    return [{"test": f"p{k}", "trial": trial, "seconds": s, "status": status} for k, s in enumerate(seconds)]


def run_dir(tmp_path, trial=1, trials=1, started_ago=0.0, kept=(), suite="e1", scale="quick", topology="default"):
    path = tmp_path / "run"
    path.mkdir()
    manifest = {"suite": suite, "scale": scale, "topology": {"name": topology}, "profiles": ["default"],
                "start": utc_iso(NOW - started_ago), "end": None, "status": "running",
                "trials": trials, "trial": trial, POINT_SECONDS_FIELD: list(kept)}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def reference(root, key, seconds, suite="e1"):
    folder = root / suite / key
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"suite": suite, POINT_SECONDS_FIELD: timed(*seconds)}))


@pytest.mark.parametrize("seconds, clock, rough", [(0, "0s", "<1m"), (29, "29s", "<1m"), (252, "4m12s", "~4m"),
                                                   (539, "8m59s", "~9m"), (4810, "1h20m", "~1h20m")])
def test_durations_read_as_a_clock_and_an_estimate_as_rough(seconds, clock, rough):
    assert progress.clock(seconds) == clock and progress.rough(seconds) == rough


def test_the_line_says_which_point_of_how_many_the_trial_the_time_elapsed_and_left():
    line = progress.line("rtt40-2W-wan-tuned", 3, 15, 252, 2, 3, (560.0, progress.FROM_REFERENCE))
    assert line == "[point 3/15] rtt40-2W-wan-tuned (trial 2/3) · 4m12s elapsed · ~9m left (from the reference)"


def test_each_point_left_takes_its_own_time_and_one_never_timed_the_mean():
    kept = [("ramp", 1000.0), ("ramp", 1200.0), ("negotiation", 60.0)]   # mean of all: 753.3 s
    assert progress.seconds_left(["ramp", "negotiation"], kept) == (1160.0, progress.FROM_REFERENCE)
    seconds, source = progress.seconds_left(["negotiation", "failover"], (), kept)
    assert round(seconds, 1) == 813.3 and source == progress.FROM_THIS_RUN
    assert progress.seconds_left(["ramp"]) is None


def test_a_trial_after_a_long_first_point_is_estimated_point_by_point(tmp_path):
    # trial 2 of 2 of [ramp, negotiation]: trial 1 timed a 20 min ramp and a 1 min negotiation
    kept = [{"test": "ramp", "trial": 1, "seconds": 1200.0, "status": "PASS"},
            {"test": "negotiation", "trial": 1, "seconds": 60.0, "status": "PASS"}]
    p = progress.Progress(run_dir(tmp_path, trial=2, trials=2, kept=kept), ["ramp", "negotiation"], now=lambda: NOW,
                          reference_root=tmp_path / "none")
    assert p.starting("ramp").endswith("~21m left (from this run)")
    p.ended("ramp", "PASS", 1200.0)
    assert p.starting("negotiation").endswith("~1m left (from this run)")   # not (1200 + 60 + 1200) / 3


def test_a_run_of_one_trial_shows_no_trial_and_without_an_estimate_no_time_left():
    assert progress.line("rtt0-W-default", 1, 4, 5, 1, 1) == "[point 1/4] rtt0-W-default · 5s elapsed"


def test_the_points_are_the_measure_point_rows_or_every_test_of_a_suite_without_them():
    rows = [types.SimpleNamespace(name="raw-tcp", template=None),
            types.SimpleNamespace(name="rtt0-W-default", template="Measure Point"),
            types.SimpleNamespace(name="e1-loss-grows-with-rtt", template=None)]
    assert progress.points_of(rows) == ["rtt0-W-default"]
    assert progress.points_of(rows[::2]) == ["raw-tcp", "e1-loss-grows-with-rtt"]


def test_nothing_known_gives_no_estimate_before_the_first_point(tmp_path):
    p = progress.Progress(run_dir(tmp_path, started_ago=30), ["a", "b"], now=lambda: NOW,
                          reference_root=tmp_path / "none")
    assert p.starting("a") == "[point 1/2] a · 30s elapsed"


def test_the_estimate_comes_from_the_reference_of_the_same_scale_and_topology(tmp_path):
    root = tmp_path / "reference"
    reference(root, "quick-default", [100, 140])          # 120 s a point
    reference(root, "ci-small", [10])                     # another scale: not used while this one has times
    p = progress.Progress(run_dir(tmp_path, trial=2, trials=3, started_ago=600), ["p0", "p1", "p2"],
                          now=lambda: NOW, reference_root=root)
    # 3 points of this trial and 3 of the last one: 100 s, 140 s and (not kept) their mean
    assert p.starting("p0") == "[point 1/3] p0 (trial 2/3) · 10m00s elapsed · ~12m left (from the reference)"
    p.ended("p0", "PASS", 10.0)   # this run's own points do not replace the reference's
    assert p.starting("p1").endswith("~10m left (from the reference)")   # 140 + 120 + 100 + 140 + 120


def test_a_run_on_another_release_takes_the_estimate_of_that_releases_reference(tmp_path):
    root = tmp_path / "reference"
    reference(root, "quick-default", [600])
    reference(root, "quick-default+release-sid", [60])
    folder = run_dir(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["topology"]["box"] = "debian13+release:sid"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    p = progress.Progress(folder, ["a", "b"], now=lambda: NOW, reference_root=root)
    assert p.starting("a").endswith("~2m left (from the reference)")   # 2 x 60 s, not 2 x 600 s


def test_without_a_reference_the_estimate_comes_from_the_points_this_run_finished(tmp_path):
    folder = run_dir(tmp_path, trial=2, trials=2, kept=timed(60.0, 60.0) + timed(1.0, status="SKIP"))
    p = progress.Progress(folder, ["a", "b"], now=lambda: NOW, reference_root=tmp_path / "none")
    # trial 1's points (the SKIP measured nothing), then this trial's
    assert p.starting("a").endswith("~2m left (from this run)")
    p.ended("a", "PASS", 240.0)   # mean (60 + 60 + 240) / 3 = 120 s
    assert p.starting("b").endswith("~2m left (from this run)")
    p.ended("b", "SKIP", 0.0)
    kept = results.Run(folder).manifest()[POINT_SECONDS_FIELD]
    assert kept[-1] == {"test": "a", "trial": 2, "seconds": 240.0, "status": "PASS"} and len(kept) == 4


def test_a_reference_at_another_scale_serves_until_this_run_has_a_point_of_its_own(tmp_path):
    root = tmp_path / "reference"
    reference(root, "ci-small", [30, 30])
    reference(root, "quick-default", [])                  # kept before points were timed
    p = progress.Progress(run_dir(tmp_path), ["a", "b", "c"], now=lambda: NOW, reference_root=root)
    assert p.starting("a").endswith("~2m left (from the experiment's other references)")   # 3 x 30 s
    p.ended("a", "FAIL", 600.0)   # a failed row measured: it is timed
    assert p.starting("b").endswith("~20m left (from this run)")


def test_a_point_this_run_has_not_reached_takes_another_references_time_for_it(tmp_path):
    root = tmp_path / "reference"
    reference(root, "ci-small", [5, 600])                 # p0 short, p1 ten minutes
    p = progress.Progress(run_dir(tmp_path), ["p0", "p1"], now=lambda: NOW, reference_root=root)
    p.starting("p0")
    p.ended("p0", "PASS", 10.0)
    # p1 from the other reference (600 s), not this run's mean of its short first point (10 s)
    assert p.starting("p1").endswith("~10m left (from the experiment's other references)")
    kept = [("p0", 10.0)]
    assert progress.seconds_left(["p0", "p1", "p2"], (), kept, [("p1", 600.0)]) == \
        (620.0, "from this run and the experiment's other references")   # p2: this run's mean


def test_under_a_plain_robot_the_clock_starts_with_the_listener(tmp_path):
    clock = iter([NOW, NOW + 75])
    p = progress.Progress(None, ["a"], now=lambda: next(clock))
    assert p.starting("a") == "[point 1/1] a · 1m15s elapsed"
    p.ended("a", "PASS", 75.0)   # no manifest to keep it in


def test_a_run_passes_the_listener_its_results_folder(tmp_path):
    argv = runner.robot_argv(registry.get("e1"), "ci", tmp_path)
    assert argv[argv.index("--listener") + 1] == f"{runner.PROGRESS_LISTENER};{tmp_path}"
    assert runner.PROGRESS_LISTENER.is_file()


SUITE = """*** Test Cases ***
raw-tcp
    No Operation
rtt0-W-default
    [Template]    Measure Point
    0.2
rtt80-W-default
    [Template]    Measure Point
    0.1

*** Keywords ***
Measure Point
    [Arguments]    ${seconds}
    Sleep    ${seconds}
"""


def test_a_real_robot_run_prints_a_whole_line_before_each_points_row(tmp_path):
    (tmp_path / "x.robot").write_text(SUITE)
    folder = run_dir(tmp_path, trial=1, trials=2, suite="x")
    out = subprocess.run([sys.executable, "-m", "robot", "--outputdir", str(tmp_path / "out"), "--consolewidth", "60",
                          "--listener", f"{runner.PROGRESS_LISTENER};{folder}", str(tmp_path / "x.robot")],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, env=script_env(), timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("[point 1/2]")))
    assert lines[first].startswith("[point 1/2] rtt0-W-default (trial 1/2) · ")
    assert lines[first + 1].startswith("rtt0-W-default ") and lines[first + 1].endswith("| PASS |")
    second = next(line for line in lines if line.startswith("[point 2/2]"))
    assert second.startswith("[point 2/2] rtt80-W-default (trial 1/2) · ") and "left (from this run)" in second
    assert "\r" not in out.stdout and not any(line.startswith("[point") and "raw-tcp" in line for line in lines)
    assert [e["test"] for e in results.Run(folder).manifest()[POINT_SECONDS_FIELD]] == ["rtt0-W-default",
                                                                                        "rtt80-W-default"]
