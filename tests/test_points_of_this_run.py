"""The rows a run leaves out before robot starts (robot/modifiers/PointsOfThisRun.py): the
suite's real rows, the run's manifest, robot's own model."""
import importlib.util
import json

import pytest
from robot.api import TestSuite as RobotSuite

from testbed import PROJECT_ROOT
from testbed.harness import points, registry, runner
from testbed.model.errors import ConfigError


def _modifier():
    spec = importlib.util.spec_from_file_location("PointsOfThisRun", runner.POINTS_MODIFIER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PointsOfThisRun


def _run_dir(tmp_path, suite, scale, profiles, parameters=None):
    params = registry.get(suite).parameters(scale, parameters or {})
    (tmp_path / "manifest.json").write_text(json.dumps({
        "suite": suite, "scale": scale, "profiles": profiles, "parameters": parameters or {},
        "experiment_parameters": params, "topology": "small"}))
    return tmp_path


def test_e1_at_ci_keeps_only_its_points_and_every_other_test(tmp_path):
    suite = RobotSuite.from_file_system(str(registry.get("e1").suite_path))
    before = {t.name for t in suite.all_tests}
    suite.visit(_modifier()(str(_run_dir(tmp_path, "e1", "ci", ["table4-default", "table4-updated"]))))
    kept = {t.name for t in suite.all_tests}
    assert {"rtt0-2W-table4-default", "rtt80-2W-table4-updated", "raw-tcp", "saturation"} <= kept
    left = before - kept
    assert "rtt10-2W-table4-default" in left and "rtt0-W-table4-default" in left       # rtts, rate_factors
    assert not any("scaled" in name for name in kept if name.startswith("rtt"))      # profiles not compared
    claims = {t.name for t in RobotSuite.from_file_system(str(registry.get("e1").suite_path)).all_tests if "claim" in t.tags}
    assert claims <= kept                                                             # claims are not points


def test_a_run_set_wider_keeps_the_rows_it_adds(tmp_path):
    suite = RobotSuite.from_file_system(str(registry.get("e1").suite_path))
    run = _run_dir(tmp_path, "e1", "ci", ["table4-default"], {"rtts": [0, 10, 80]})
    suite.visit(_modifier()(str(run)))
    assert "rtt10-2W-table4-default" in {t.name for t in suite.all_tests}


def test_the_robot_command_of_a_run_leaves_the_other_rows_out(tmp_path):
    argv = runner.robot_argv(registry.get("e1"), "ci", tmp_path)
    assert argv[argv.index("--prerunmodifier") + 1] == f"{runner.POINTS_MODIFIER};{tmp_path}"


def test_a_selection_of_rows_outside_the_run_is_refused_in_one_line():
    params = registry.get("e1").parameters("ci", {})
    with pytest.raises(ConfigError, match=r"--test rtt10-2W-table4-default: selects only rows that are not points "
                                          r"of this run \(rtt10-2W-table4-default: rtts 10 is not a point"):
        runner.check_selection(registry.get("e1"), ["rtt10-2W-table4-default"], (), "ci", params, ["table4-default"])
    runner.check_selection(registry.get("e1"), ["rtt80-2W-table4-default"], (), "ci", params, ["table4-default"])


def test_the_library_skips_by_the_same_rule():
    params = {"rtts": [0, 80]}
    assert points.outside_run({"rtts": "80"}, params, ["a"], "ci") == ""
    assert points.outside_run({"rtts": "10"}, params, ["a"], "ci") == \
        "rtts 10 is not a point of this run (ci scale: rtts = 0, 80)"
    assert points.outside_run({"profile": "b"}, params, ["a"], "ci") == \
        "profile b is not compared in this run (profiles: a)"
