"""The E1 noise benchmark's library (testbed/experiments/e1/noise.py): keeping a pair of
arms in the repository, reading it back, and the documentation section made from it."""
import json

import pytest

from testbed.experiments.e1 import noise as e1_noise
from testbed.model.errors import ConfigError
from testbed.results import runs


def arm(root, values, jobs, paused=(), pin_plan=None, topo="default", point_params=None):
    run = runs.Run.create("e1", ["table4-default"], topology={"name": topo}, profile_contents={}, accel="tcg",
                          root=root, experiment_parameters={"sweep_jobs": jobs})
    run.update(selection=["--test", "rtt80-2W-table4-default"], trials=len(values),
               quiet={"paused": list(paused), "pin_plan": pin_plan or {}})
    params = point_params or {"rtt_ms": 80.0, "rate": "2W", "profile": "table4-default"}
    for trial, value in enumerate(values, 1):
        runs.Run(run.path, trial=trial).record("e1.efficiency_lost", value, "ratio", **params)
    return run


def pair(tmp_path, without=(0.4, 0.6, 0.5), with_=(0.50, 0.52, 0.48), jobs=16):
    return [("without pausing/pinning", arm(tmp_path / "a", without, jobs)),
            ("with pausing/pinning", arm(tmp_path / "b", with_, jobs, paused=["origin"],
                                         pin_plan={"submit": "0"}))]


def test_a_kept_pair_reads_back_as_the_benchmark_printed_it(tmp_path):
    arms = pair(tmp_path)
    printed, cvs = e1_noise.report(arms, "rtt80-2W-table4-default")
    target = e1_noise.keep(arms, "rtt80-2W-table4-default", root=tmp_path / "kept")
    assert target.name == "rtt80-2W-table4-default-16jobs-default"
    assert sorted(p.name for p in target.iterdir()) == ["with", "without"]
    (point, kept_arms), = e1_noise.kept(tmp_path / "kept")
    assert point == "rtt80-2W-table4-default"
    again, _ = e1_noise.report(kept_arms, point)
    assert again == printed                       # same runs' labels, values, jobs and host noise
    assert arms[0][1].label in again and "16" in again.splitlines()[2]
    assert cvs[0] == pytest.approx(0.2) and cvs[1] == pytest.approx(0.04)
    section = e1_noise.section(tmp_path / "kept")
    assert printed in section and "rtt80-2W-table4-default-16jobs-default" in section


def test_keeping_again_replaces_the_pair_whole_and_leaves_no_hidden_folder(tmp_path):
    root = tmp_path / "kept"
    e1_noise.keep(pair(tmp_path / "1"), "rtt80-2W-table4-default", root=root)
    e1_noise.keep(pair(tmp_path / "2", with_=(0.3, 0.3, 0.6)), "rtt80-2W-table4-default", root=root)
    assert [p.name for p in root.iterdir()] == ["rtt80-2W-table4-default-16jobs-default"]
    values = [json.loads(line)["value"] for line in
              (root / "rtt80-2W-table4-default-16jobs-default" / "with" / "metrics.jsonl").read_text().splitlines()]
    assert values == [0.3, 0.3, 0.6]


def test_an_arm_without_the_points_records_is_refused_and_nothing_is_written(tmp_path):
    arms = pair(tmp_path)
    other = arm(tmp_path / "c", [0.5, 0.5], 16, point_params={"rtt_ms": 0.0, "rate": "2W",
                                                              "profile": "table4-default"})
    with pytest.raises(ConfigError, match="no e1.efficiency_lost of rtt80-2W-table4-default"):
        e1_noise.keep([arms[0], ("with pausing/pinning", other)], "rtt80-2W-table4-default", root=tmp_path / "kept")
    assert not (tmp_path / "kept").exists() or not any((tmp_path / "kept").iterdir())


def test_with_no_pair_kept_the_section_says_how_to_keep_one(tmp_path):
    assert "benchmarks/e1_noise.py --keep" in e1_noise.section(tmp_path / "none")


def test_the_goal_line_says_when_the_goal_is_within_one_standard_error(tmp_path):
    arms = pair(tmp_path, without=(0.4, 0.6, 0.5), with_=(0.46, 0.54, 0.5))   # CV 8.0% from 3 trials
    text, _cvs = e1_noise.report(arms, "rtt80-2W-table4-default")
    assert "goal CV <= 10% with pausing and pinning: met (8.0% ± 4.0%; the goal is within one standard error)" in text
    arms = pair(tmp_path / "far", without=(0.4, 0.6, 0.5), with_=(0.49, 0.51, 0.5))  # CV 2.0% ± 1.0%
    text, _cvs = e1_noise.report(arms, "rtt80-2W-table4-default")
    assert text.endswith("goal CV <= 10% with pausing and pinning: met (2.0% ± 1.0%)")


def test_kept_pairs_are_listed_by_point_then_jobs_as_a_number(tmp_path):
    root = tmp_path / "kept"
    for jobs in (16, 8):
        arms = [("without pausing/pinning", arm(tmp_path / f"a{jobs}", (0.4, 0.6), jobs)),
                ("with pausing/pinning", arm(tmp_path / f"b{jobs}", (0.5, 0.52), jobs))]
        e1_noise.keep(arms, "rtt80-2W-table4-default", root=root)
    assert [e1_noise.jobs_of(arms[-1][1]) for _point, arms in e1_noise.kept(root)] == [8, 16]
