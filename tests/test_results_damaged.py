"""Damaged results folders (copied between machines, kept in git, cut short by a crash):
every reader says file, line or field and what is wrong in one line, never a traceback."""
import json

import pytest

from testbed import cli
from testbed.model.errors import ConfigError
from testbed.results import runs as results


def three_trials(tmp_path, suite="e2"):
    run = results.Run.create(suite, ["default"], topology={}, profile_contents={}, accel="tcg", root=tmp_path)
    for trial, value in enumerate((10.0, 11.0, 12.0), 1):
        results.Run(run.path, trial=trial).record("e2.raid_write_rate", value, "MB/s",
                                                  stripe_cache_size=256, profile="default")
    run.update(trials=3)
    run.finish("complete")
    return run


def put_line(run, line, where="middle"):
    lines = run.metrics_path.read_text().splitlines()
    lines.insert(1 if where == "middle" else len(lines), line)
    run.metrics_path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("line,problem", [
    ('{"name": "e2.raid_write_rate", "val', "2: not a JSON record"),
    ('[1, 2]', "2: a record is a JSON object, not list"),
    ('"e2.raid_write_rate"', "2: a record is a JSON object, not str"),
    ('{"value": 3}', "2: the record has no name"),
    ('{"name": "e2.raid_write_rate", "value": "abc", "params": {}}', "value must be a finite number, got 'abc'"),
    ('{"name": "e2.raid_write_rate", "value": NaN, "params": {"trial": 2}}', "value must be a finite number, got nan"),
    ('{"name": "e2.raid_write_rate", "value": 1, "params": [1]}', "params: must be an object, not list"),
    ('{"name": "e2.raid_write_rate", "value": 1, "params": {"trial": 0}}', "trial: must be a whole number >= 1, not 0"),
    ('{"name": "e2.raid_write_rate", "value": 1, "params": {"trial": "2"}}', "trial: must be a whole number >= 1"),
])
def test_a_damaged_line_in_the_middle_names_file_line_and_problem(tmp_path, line, problem):
    run = three_trials(tmp_path)
    put_line(run, line)
    with pytest.raises(ConfigError) as err:
        run.metrics()
    assert f"{run.metrics_path}:" in str(err.value) and problem in str(err.value)


def test_a_last_line_cut_short_is_skipped_with_a_warning(tmp_path, capsys):
    run = three_trials(tmp_path)
    with open(run.metrics_path, "a") as fh:
        fh.write('{"name": "e2.raid_write_rate", "val')
    assert [r["value"] for r in run.metrics()] == [10.0, 11.0, 12.0]
    assert f"{run.metrics_path}:4: the last line is cut short" in capsys.readouterr().err


def test_a_bad_last_line_that_was_written_whole_is_an_error(tmp_path):
    run = three_trials(tmp_path)
    put_line(run, '{"name": "e2.raid_write_rate", "val', where="end")  # ends with a newline: not a crash
    with pytest.raises(ConfigError, match=":4: not a JSON record"):
        run.metrics()


@pytest.mark.parametrize("field,value,problem", [
    ("profiles", [["default"]], "profiles: must be a list of profile names"),
    ("profiles", "default", "profiles: must be list, not str"),
    ("trials", "3", "trials: must be int, not str"),
    ("trials", 0, "trials: must be >= 1, not 0"),
    ("status", "done", "status: 'done' is not one of running, complete"),
    ("end", 5, "end: must be str or null, not int"),
    ("parameters", [], "parameters: must be dict, not list"),
])
def test_a_manifest_field_of_the_wrong_type_is_named(tmp_path, field, value, problem):
    run = three_trials(tmp_path)
    data = json.loads(run.manifest_path.read_text())
    data[field] = value
    run.manifest_path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="manifest.json: " + problem.split(":")[0]) as err:
        run.manifest()
    assert problem in str(err.value)


def test_a_manifest_of_an_older_version_without_newer_fields_reads(tmp_path):
    run = three_trials(tmp_path)
    data = json.loads(run.manifest_path.read_text())
    for key in ("code", "trials_declared", "placement", "host"):
        data.pop(key, None)
    run.manifest_path.write_text(json.dumps(data))
    assert run.manifest()["suite"] == "e2" and len(run.metrics()) == 3


@pytest.mark.parametrize("damage", ["nan", "abc", "list", "manifest"])
def test_compare_and_reference_of_a_damaged_folder_say_one_line_exit_2(tmp_path, capsys, damage):
    run = three_trials(tmp_path)
    if damage == "manifest":
        run.manifest_path.write_text(json.dumps({"suite": "e2", "profiles": [["x"]]}))
    else:
        put_line(run, {"nan": '{"name": "e2.raid_write_rate", "value": NaN, "params": {"trial": 2}}',
                       "abc": '{"name": "e2.raid_write_rate", "value": "abc"}', "list": "[]"}[damage])
    for argv in (["compare", str(run.path)], ["reference", "save", str(run.path), "--why", "a test"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("testbed: ") and str(run.path) in err


def test_latest_skips_a_folder_whose_manifest_is_damaged(tmp_path, capsys):
    good = three_trials(tmp_path)
    bad = tmp_path / "29990101T000000Z-e2-default"
    bad.mkdir()
    (bad / "manifest.json").write_text("{not json")
    assert results.resolve("latest-e2", root=tmp_path).path == good.path
    assert f"skipped {bad.name}" in capsys.readouterr().err
