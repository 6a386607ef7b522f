import json

import pytest

from testbed.results import runs as results
from testbed.model.errors import ConfigError


def make_run(tmp_path, suite="e1", profiles=("default", "wan-tuned")):
    return results.Run.create(suite, list(profiles), topology={"name": "small"},
                              profile_contents={p: {"name": p} for p in profiles}, accel="tcg",
                              root=tmp_path)


def test_run_folder_name_and_manifest(tmp_path):
    run = make_run(tmp_path)
    assert run.path.name.endswith("-e1-default+wan-tuned")
    m = run.manifest()
    assert m["status"] == "running" and m["end"] is None
    assert m["accel"] == "tcg" and m["topology"] == {"name": "small"}
    assert set(m["profile_contents"]) == {"default", "wan-tuned"}
    assert m["host"]["cores"] >= 1 and "git_revision" in m


def test_two_runs_in_the_same_second_get_their_own_folders(tmp_path):
    a, b = make_run(tmp_path), make_run(tmp_path)
    assert a.path != b.path and a.path.exists() and b.path.exists()


def test_metrics_are_appended_one_json_line_each(tmp_path):
    run = make_run(tmp_path)
    run.record("e1.rate", 12.5, "MB/s", rtt_ms=40, profile="default")
    run.record("e1.rate", 11, "MB/s", rtt_ms=80, profile="default")
    lines = run.metrics_path.read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["params"] == {"rtt_ms": 40, "profile": "default"}
    assert [r["value"] for r in run.metrics()] == [12.5, 11]


def test_a_torn_last_line_is_skipped_and_earlier_points_kept(tmp_path):
    run = make_run(tmp_path)
    run.record("e1.rate", 1.0, "MB/s")
    with open(run.metrics_path, "a") as fh:
        fh.write('{"name": "e1.rate", "val')
    assert len(run.metrics()) == 1


@pytest.mark.parametrize("name,value,problem", [
    ("E1 Rate", 1.0, "not a metric name"),
    ("e1.rate", float("nan"), "finite number"),
    ("e1.rate", "fast", "finite number"),
    ("e1.rate", True, "finite number"),
])
def test_bad_metrics_are_refused(tmp_path, name, value, problem):
    run = make_run(tmp_path)
    with pytest.raises(ConfigError, match=problem):
        run.record(name, value, "MB/s")
    assert run.metrics() == []


def test_finish_marks_status_and_end_atomically(tmp_path):
    run = make_run(tmp_path)
    run.finish("interrupted")
    m = run.manifest()
    assert m["status"] == "interrupted" and m["end"]
    assert not list(run.path.glob(".*tmp*"))
    with pytest.raises(ValueError):
        run.finish("great")


def test_resolve_by_name_path_and_latest(tmp_path):
    a = make_run(tmp_path, suite="e1")
    b = make_run(tmp_path, suite="e2")
    assert results.resolve(a.path.name, root=tmp_path).path == a.path
    assert results.resolve(str(b.path), root=tmp_path).path == b.path
    assert results.resolve("latest-e1", root=tmp_path).path == a.path
    with pytest.raises(ConfigError, match="no manifest.json"):
        results.resolve(str(tmp_path / "nothing"), root=tmp_path)
    with pytest.raises(ConfigError, match="no runs found"):
        results.resolve("latest-e5", root=tmp_path)


def test_a_benchmark_reads_every_run_it_is_given_and_names_them(tmp_path, capsys):
    a, b = make_run(tmp_path, suite="e4"), make_run(tmp_path, suite="e4")
    a.record("e4.x", 1.0)
    b.record("e4.x", 2.0)
    b.update(scale="ci", status="complete")
    records = results.load_for_benchmark("e4", "E4", [str(a.path), str(b.path)])
    assert [r["value"] for r in records] == [1.0, 2.0]
    assert capsys.readouterr().out == f"E4 figures from {a.label}, {b.label} (ci scale, status complete)\n"


def test_a_benchmark_given_no_run_reads_the_suites_latest(tmp_path, monkeypatch, capsys):
    run = make_run(tmp_path, suite="faults")
    monkeypatch.setattr(results, "RESULTS_ROOT", tmp_path)
    assert results.load_for_benchmark("faults", "fault suite", []) == []
    assert capsys.readouterr().out.startswith(f"fault suite figures from {run.label} (quick scale, status running)")


def test_a_benchmark_given_a_folder_that_is_no_run_says_so(tmp_path, capsys):
    assert results.load_for_benchmark("e3", "E3", [str(tmp_path / "nothing")]) is None
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("e3 benchmark: ") and "manifest.json" in out.err


def test_trials_text_says_how_many_trials_an_interrupted_run_reached():
    from testbed.results.runs import trials_text
    assert trials_text({"trials": 3, "trial": 3, "status": "complete"}) == "3 trials"
    assert trials_text({"trials": 3, "trial": 2, "status": "interrupted"}) == "trial 2 of 3 reached"
    assert trials_text({"trials": 3, "trial": 3, "status": "interrupted"}) == "trial 3 of 3 reached"
    assert trials_text({"status": "complete"}) == "1 trial"


def test_kept_documents_go_beside_the_metrics_per_trial(tmp_path):
    run = make_run(tmp_path)
    single = run.keep("e4/colocated/tasks.0.json", {"T": 12.5})
    assert single == run.path / "kept" / "e4" / "colocated" / "tasks.0.json"
    assert json.loads(single.read_text()) == {"T": 12.5}
    second = results.Run(run.path, trial=2).keep("e4/colocated/tasks.0.json", {"T": 14.0})
    assert second == run.path / "kept" / "trial2" / "e4" / "colocated" / "tasks.0.json"
    assert json.loads(single.read_text()) == {"T": 12.5}  # a later trial does not overwrite an earlier one
    assert not list(run.path.glob("kept/**/*.tmp*"))
