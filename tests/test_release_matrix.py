"""The release matrix: kept references whose keys differ only by their release read side by
side, a row per claim and per release finding, and the references kept on one release named."""
import pytest

from testbed.harness import registry
from testbed.report import release_matrix
from testbed.results import runs as results


def keep(root, experiment, key, condor, xrootd, records, host="6.18.44-fc-v857", code=None):
    """A kept reference at root/experiment/key on a release, with {trial: [(metric, value, params)]}."""
    run = results.Run.create(experiment, ["default"], topology={}, profile_contents={}, accel="tcg",
                             path=root / experiment / key)
    run.update(versions={"condor": condor, "xrootd": xrootd}, reference={"run": f"run-{key}"},
               host={"kernel": host}, **({"code": {"measurement": code}} if code else {}))
    for trial, recs in records.items():
        for metric, value, params in recs:
            results.Run(run.path, trial=trial).record(metric, value, "x", **params)
    run.finish("complete")


def jobs_lost(values, kind="worker-cut"):
    return {t: [("faults.jobs_lost", v, {"kind": kind})] for t, v in enumerate(values, 1)}


def test_two_releases_of_one_key_side_by_side_with_whether_they_are_apart(tmp_path):
    keep(tmp_path, "faults", "quick-default", "23.9.6", "v5.8.1", jobs_lost([4, 4, 4]))
    keep(tmp_path, "faults", "quick-default+release-sid", "25.14.1", "v6.2.0", jobs_lost([0, 1, 0]))
    text = release_matrix.section(tmp_path)
    assert "### faults at `quick-default`" in text
    header = next(line for line in text.splitlines() if line.startswith("| result"))
    assert header.index("HTCondor 23.9.6, XRootD 5.8.1") < header.index("HTCondor 25.14.1, XRootD 6.2.0")
    row = next(line for line in text.splitlines() if line.startswith("| `faults.jobs_lost` (kind=worker-cut)"))
    assert "| 4 (4, 4, 4) |" in row and "0.333 [" in row and row.endswith("| yes |")
    assert "run `run-quick-default+release-sid`" in text
    assert "Kept on one release only" not in text


def test_a_row_measured_on_one_release_only_says_so(tmp_path):
    keep(tmp_path, "faults", "quick-default", "23.9.6", "v5.8.1",
         jobs_lost([0, 0]) | {3: [("faults.jobs_lost", 0, {"kind": "worker-cut-no-transfer"})]})
    keep(tmp_path, "faults", "quick-default+release-sid", "25.14.1", "v6.2.0", jobs_lost([0, 0]))
    rows = [line for line in release_matrix.section(tmp_path).splitlines() if line.startswith("| `faults.jobs_lost`")]
    assert len(rows) == 2
    assert "not measured" in rows[1] and rows[1].endswith("| - |")
    assert rows[0].endswith("| no |")   # the same counts on both: not apart


def test_claims_are_judged_on_each_release(tmp_path):
    keep(tmp_path, "e2", "quick-default", "23.9.6", "v5.8.1", {1: []})
    keep(tmp_path, "e2", "quick-default+release-sid", "25.14.1", "v6.2.0", {1: []})
    text = release_matrix.section(tmp_path)
    claims = [line for line in text.splitlines() if line.startswith("| `e2-")]
    paper = registry.experiments()["e2"].paper_path
    from testbed.results import verdict
    assert len(claims) == len(verdict.load_file(paper))
    assert all(line.count("**no data**") == 2 for line in claims)


def test_other_topologies_and_one_release_do_not_pair(tmp_path):
    keep(tmp_path, "e2", "quick-default", "23.9.6", "v5.8.1", {1: []})
    keep(tmp_path, "e2", "quick-small+release-sid", "25.14.1", "v6.2.0", {1: []})
    text = release_matrix.section(tmp_path)
    assert "###" not in text
    assert "- e2 on HTCondor 23.9.6, XRootD 5.8.1: `quick-default`" in text
    assert "- e2 on HTCondor 25.14.1, XRootD 6.2.0: `quick-small+release-sid`" in text
    assert release_matrix.section(tmp_path / "none") == "No reference kept yet."


def test_a_release_finding_must_be_a_metric_the_experiment_records():
    faults = registry.experiments()["faults"]
    from dataclasses import replace
    with pytest.raises(ValueError, match="release_findings name"):
        replace(faults, release_findings=(registry.ReleaseFinding("faults.nothing", "x"),))


def test_columns_that_differ_in_more_than_the_release_are_said_not_like_for_like(tmp_path):
    keep(tmp_path, "faults", "quick-default", "23.9.6", "v5.8.1", jobs_lost([4, 4, 4]))
    keep(tmp_path, "faults", "quick-default+release-sid", "25.14.1", "v6.2.0", jobs_lost([0, 1, 0]))
    code = results.Run(tmp_path / "faults" / "quick-default").manifest()["code"]["measurement"]
    text = release_matrix.section(tmp_path)
    assert "Not like for like" not in text and "host `6.18.44-fc-v857`" in text   # one code, one host
    keep(tmp_path, "faults", "quick-default+release-sid", "25.14.1", "v6.2.0", jobs_lost([0, 1, 0]),
         host="6.18.44-fc-v782", code=code)
    line = next(l for l in release_matrix.section(tmp_path).splitlines() if l.startswith("Not like for like"))
    assert "differ in host as well as in the release" in line and "--box A --box B" in line
    keep(tmp_path, "faults", "quick-default+release-sid", "25.14.1", "v6.2.0", jobs_lost([0, 1, 0]),
         host="6.18.44-fc-v782", code="0" * 16)
    assert "differ in measurement code and host as well" in release_matrix.section(tmp_path)
