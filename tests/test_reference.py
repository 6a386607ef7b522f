"""Reference runs: kept whole in results/reference/<experiment>/<scale>-<topology>/, refused
when unfinished or broken, found again by a run's key, and a run's drift from its reference."""
import json
import subprocess

import pytest

from testbed import PROJECT_ROOT, cli
from testbed.model.errors import ConfigError
from testbed.results import compare, reference, runs as results, verdict

CLAIM = """claims:
  - id: loss-grows
    kind: claim
    words: "loss grows with latency"
    where: "seed 000, Figure 2"
    value: {ratio: [{metric: e1.efficiency_lost, params: {rtt_ms: 80}},
                    {metric: e1.efficiency_lost, params: {rtt_ms: 0}}]}
    expect: "> 1"
"""


def make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63), (0.3, 0.57)), suite="e1", scale="quick",
             topology="default", status="complete", profiles=("default",), declared=None):
    """A finished repeated run: per trial (loss at 0 ms, loss at 80 ms) for each profile; its
    experiment declares `declared` trials (default: as many as it ran)."""
    run = results.Run.create(suite, list(profiles), topology={"name": topology}, profile_contents={},
                             accel="tcg", scale=scale, root=tmp_path / "results")
    for trial, (at0, at80) in enumerate(losses, 1):
        rec = results.Run(run.path, trial=trial)
        for k, p in enumerate(profiles):
            rec.record("e1.efficiency_lost", at0 * (k + 1), "ratio", rtt_ms=0, profile=p)
            rec.record("e1.efficiency_lost", at80 * (k + 1), "ratio", rtt_ms=80, profile=p)
    run.update(trials=max(1, len(losses)), trials_declared=declared or max(1, len(losses)))
    if status != "running":
        run.finish(status)
    return run


@pytest.fixture
def paper(tmp_path):
    d = tmp_path / "paper"
    d.mkdir()
    (d / "e1.yaml").write_text(CLAIM)
    return d


def robot_output(run, rows, name="output.xml"):
    """A real robot output in the run's folder: rows are (name, passes, tags)."""
    import io
    import robot
    suite = run.path.parent / f"{run.path.name}-{name}.robot"
    body = "*** Test Cases ***\n" + "".join(
        f"{n}\n    [Tags]    {'    '.join(tags) or 'point'}\n    Should Be True    {passes}\n" for n, passes, tags in rows)
    suite.write_text(body)
    robot.run(str(suite), outputdir=str(run.path), output=name, log="NONE", report="NONE",
              stdout=io.StringIO(), stderr=io.StringIO())
    assert (run.path / name).exists()


def test_a_run_is_kept_whole_under_its_experiment_scale_and_topology(tmp_path, paper):
    run = make_run(tmp_path)
    (run.path / "output.xml").write_text("<robot><suite name=")  # torn: robot was killed writing it
    kept, replaced = reference.save(run, root=tmp_path / "ref", paper_dir=paper, force=True)
    assert kept.path == tmp_path / "ref" / "e1" / "quick-default" and replaced is None
    assert sorted(p.name for p in kept.path.iterdir()) == ["manifest.json", "metrics.jsonl", "verdicts.md"]
    assert not [p for p in kept.path.parent.iterdir() if p.name.startswith(".")]   # no temporary left
    m = kept.manifest()
    assert m["suite"] == "e1" and m["status"] == "complete" and m["reference"]["run"] == run.label
    assert m["reference"]["overridden"] == ["robot output unreadable: output.xml"]
    assert kept.metrics() == run.metrics() and {r["params"]["trial"] for r in kept.metrics()} == {1, 2, 3}
    md = (kept.path / "verdicts.md").read_text()
    assert verdict.render_text(compare.verdicts([run], paper)) in md
    assert "loss-grows  reproduced  3" in md and run.label in md
    assert kept.label == "reference e1/quick-default"


def test_a_variant_is_kept_beside_the_reference_of_its_key_never_in_its_place(tmp_path, paper):
    whole, half = make_run(tmp_path), make_run(tmp_path, losses=((0.3, 0.9), (0.3, 0.95), (0.3, 0.92)))
    reference.save(whole, root=tmp_path / "ref", paper_dir=paper)
    kept, replaced = reference.save(half, root=tmp_path / "ref", paper_dir=paper, variant="array-bound")
    assert kept.key == "quick-default+array-bound" and replaced is None
    assert kept.origin()["variant"] == "array-bound"
    assert [r.key for r in reference.listing(tmp_path / "ref")] == ["quick-default", "quick-default+array-bound"]
    assert reference.find("e1", "quick-default", tmp_path / "ref").origin()["run"] == whole.label
    with pytest.raises(ConfigError, match="cannot name a reference folder"):
        reference.save(half, root=tmp_path / "ref", paper_dir=paper, variant="../up")


def test_a_newer_run_replaces_the_reference_of_the_same_key(tmp_path, paper):
    first, second = make_run(tmp_path), make_run(tmp_path, losses=((0.3, 0.9), (0.3, 0.95)))
    reference.save(first, root=tmp_path / "ref", paper_dir=paper)
    kept, replaced = reference.save(second, root=tmp_path / "ref", paper_dir=paper)
    assert replaced == first.label and kept.origin()["run"] == second.label
    assert len(kept.metrics()) == 4
    assert [p.name for p in (tmp_path / "ref" / "e1").iterdir()] == ["quick-default"]
    other = make_run(tmp_path, scale="full")
    reference.save(other, root=tmp_path / "ref", paper_dir=paper)
    assert [(r.experiment, r.key) for r in reference.listing(tmp_path / "ref")] == \
        [("e1", "full-default"), ("e1", "quick-default")]


def test_a_failed_write_leaves_the_older_reference_in_place(tmp_path, paper, monkeypatch):
    first = make_run(tmp_path)
    reference.save(first, root=tmp_path / "ref", paper_dir=paper)

    def broken(*_args):
        raise OSError("disk full")
    monkeypatch.setattr(reference, "_verdicts_md", broken)
    with pytest.raises(OSError):
        reference.save(make_run(tmp_path), root=tmp_path / "ref", paper_dir=paper)
    assert [p.name for p in (tmp_path / "ref" / "e1").iterdir()] == ["quick-default"]
    assert reference.find("e1", "quick-default", tmp_path / "ref").origin()["run"] == first.label


def test_an_unfinished_run_is_refused_in_one_line_unless_forced(tmp_path, paper):
    run = make_run(tmp_path, status="running")
    with pytest.raises(ConfigError) as exc:
        reference.save(run, root=tmp_path / "ref", paper_dir=paper)
    assert "status running" in str(exc.value) and "--force" in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "ref" / "e1" / "quick-default").exists()
    kept, _ = reference.save(run, root=tmp_path / "ref", paper_dir=paper, force=True)
    assert kept.origin()["forced"] is True and "status running" in kept.origin()["overridden"][0]


def test_failed_measurement_rows_refuse_a_run_but_a_contradicted_claim_does_not(tmp_path, paper):
    broken = make_run(tmp_path, status="interrupted")
    robot_output(broken, [("rtt0-W-default", True, ()), ("rtt80-W-default", False, ()),
                          ("loss-grows", False, ("claim",))])
    assert reference.problems(broken) == ["1 failed row: rtt80-W-default"]
    with pytest.raises(ConfigError, match="1 failed row: rtt80-W-default"):
        reference.save(broken, root=tmp_path / "ref", paper_dir=paper)
    contradicted = make_run(tmp_path, losses=((0.6, 0.3), (0.6, 0.33), (0.6, 0.27)), status="failed")
    robot_output(contradicted, [("rtt0-W-default", True, ()), ("loss-grows", False, ("claim",))],
                 name="output-trial1.xml")
    kept, _ = reference.save(contradicted, root=tmp_path / "ref", paper_dir=paper)
    assert "loss-grows  contradicted" in (kept.path / "verdicts.md").read_text()
    # failed with no robot output to tell why: refused
    assert "no robot output" in reference.problems(make_run(tmp_path, status="failed"))[0]


def test_a_run_without_metrics_is_never_kept(tmp_path, paper):
    run = results.Run.create("e2", ["default"], topology={"name": "default"}, profile_contents={},
                             accel="tcg", root=tmp_path / "results")
    run.finish("complete")
    with pytest.raises(ConfigError, match="no metrics to keep"):
        reference.save(run, root=tmp_path / "ref", paper_dir=paper, force=True)


def test_no_reference_for_the_key_names_the_ones_there_are(tmp_path, paper):
    reference.save(make_run(tmp_path), root=tmp_path / "ref", paper_dir=paper)
    with pytest.raises(ConfigError) as exc:
        reference.for_run(make_run(tmp_path, topology="small"), root=tmp_path / "ref")
    text = str(exc.value)
    assert "no reference for e1 at quick-small" in text and "references: e1/quick-default" in text
    assert "\n" not in text
    with pytest.raises(ConfigError, match="references: none"):
        reference.find("e3", "quick-default", root=tmp_path / "empty")
    with pytest.raises(ConfigError, match="topology.name"):
        reference.key_of({"suite": "e1", "scale": "quick", "topology": {"name": "../x"}})


def test_drift_puts_each_point_beside_its_reference_with_the_ratio(tmp_path, paper):
    ref, _ = reference.save(make_run(tmp_path, profiles=("default", "wan-tuned")), root=tmp_path / "ref",
                            paper_dir=paper)
    run = make_run(tmp_path, losses=((0.3, 1.2), (0.3, 1.26), (0.3, 1.14)), profiles=("default", "wan-tuned"))
    headers, rows = reference.drift_rows(ref, run)
    assert headers[4:] == ["reference", "this run", "drift", "outside ref. interval"]
    by = {(r[1], r[2]): r for r in rows}
    assert len(rows) == 4
    at80 = by[("rtt_ms=80", "default")]
    assert at80[4].startswith("0.6 [") and at80[4].endswith("n=3") and at80[5].startswith("1.2 [")
    assert at80[6:] == ["2.00x", "yes"]
    assert by[("rtt_ms=0", "wan-tuned")][6:] == ["1.00x", "no"]
    assert by[("rtt_ms=80", "wan-tuned")][5].startswith("2.4 [")


def test_both_verdict_tables_side_by_side(tmp_path, paper):
    ref, _ = reference.save(make_run(tmp_path), root=tmp_path / "ref", paper_dir=paper)
    run = make_run(tmp_path, losses=((0.6, 0.3), (0.6, 0.33), (0.6, 0.27)))
    headers, rows = reference.verdict_rows(ref, run, paper)
    assert headers[:4] == ["claim", "reference", "mean [interval] (trials)", "this run"]
    assert rows[0][:2] == ["loss-grows", "reproduced"] and rows[0][3] == "contradicted"
    assert rows[0][2].startswith("2 [") and rows[0][-2:] == ["> 1", "changed"]
    text = reference.render_drift(ref, run, paper)
    assert "1 of 1 changed" in text and "drift = this run's mean / the reference's" in text
    assert "0.50x" in text


def test_the_cli_keeps_a_run_and_compares_against_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference, "REFERENCE_ROOT", tmp_path / "ref")
    run = make_run(tmp_path)
    assert cli.main(["reference", "save", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert f"kept {run.label} as reference e1/quick-default" in out
    assert cli.main(["reference", "list"]) == 0
    listed = capsys.readouterr().out
    assert "quick-default" in listed and run.label in listed
    again = make_run(tmp_path, losses=((0.3, 0.66), (0.3, 0.69), (0.3, 0.63)))
    assert cli.main(["compare", str(again.path), "--against", "reference"]) == 0
    out = capsys.readouterr().out
    assert "against reference e1/quick-default" in out and "1.10x" in out
    assert (again.path / "compare-reference.html").exists()
    small = make_run(tmp_path, topology="small")
    assert cli.main(["compare", str(small.path), "--against", "reference"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no reference for e1 at quick-small" in err and "\n" not in err
    running = make_run(tmp_path, status="running")
    assert cli.main(["reference", "save", str(running.path)]) == 2
    assert "status running" in capsys.readouterr().err


def test_references_are_committed_and_run_folders_are_not():
    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip("not a git checkout")

    def ignored(path):
        return subprocess.run(["git", "-C", str(PROJECT_ROOT), "check-ignore", "-q", path]).returncode == 0
    assert not ignored("results/reference/e1/quick-default/manifest.json")
    assert not ignored("results/reference/e1/quick-default/verdicts.md")
    assert ignored("results/20250101T000000Z-e1-default/manifest.json")
    assert ignored("results/reference/e1/.quick-default.tmp1234/manifest.json")
    assert not ignored("results/paper/e1.yaml")


def test_a_run_on_a_patched_box_has_a_reference_of_its_own():
    stock = {"suite": "faults", "scale": "quick", "topology": {"name": "small"},
             "versions": {"condor": "23.9.6"}}
    patched = dict(stock, versions={"condor": "23.9.6",
                                    "condor_patches": "htcondor-reconnect-transkey:f448,other-fix:0a1b"})
    assert reference.key_of(stock) == ("faults", "quick-small")
    assert reference.key_of(patched) == ("faults", "quick-small+patched-htcondor-reconnect-transkey-other-fix")
    bad = dict(stock, versions={"condor_patches": "../x:1"})
    with pytest.raises(ConfigError, match="versions.condor_patches"):
        reference.key_of(bad)


def test_a_run_on_another_release_has_a_reference_of_its_own():
    stock = {"suite": "e2", "scale": "quick", "topology": {"name": "small", "box": "debian13"}}
    sid = dict(stock, topology={"name": "small", "box": "debian13+release:sid"})
    assert reference.key_of(stock) == ("e2", "quick-small")
    assert reference.key_of(sid) == ("e2", "quick-small+release-sid")
    both = dict(sid, versions={"condor_patches": "fix:0a1b"})
    assert reference.key_of(both) == ("e2", "quick-small+release-sid+patched-fix")
    with pytest.raises(ConfigError, match="topology.box"):
        reference.key_of(dict(stock, topology={"name": "small", "box": "debian13+release:../x"}))


def test_merge_keeps_the_points_the_new_run_did_not_measure(tmp_path, paper):
    first = make_run(tmp_path)                      # 0 and 80 ms, three trials
    results.Run(first.path, trial=1).record("e1.other", 5.0, "s", rtt_ms=40)
    reference.save(first, root=tmp_path / "ref", paper_dir=paper)
    second = make_run(tmp_path, losses=((0.2, 0.5), (0.2, 0.52)))   # the same points again, two trials
    kept, replaced = reference.save(second, root=tmp_path / "ref", paper_dir=paper, merge=True)
    assert replaced == first.label
    records = kept.metrics()
    # the 0 and 80 ms points are the second run's only (its two trials), the 40 ms one the first's
    assert sorted((r["params"]["rtt_ms"], r["value"]) for r in records if r["name"] == "e1.efficiency_lost") == \
        [(0, 0.2), (0, 0.2), (80, 0.5), (80, 0.52)]
    assert [(r["name"], r["value"]) for r in records if r["name"] == "e1.other"] == [("e1.other", 5.0)]
    origin = kept.origin()
    assert origin["run"] == second.label and [m["run"] for m in origin["merged"]] == [first.label]
    assert origin["merged"][0]["records"] == 1
    # the merged run's wall time stays with it: what the reference cost is the sum
    assert origin["merged"][0]["seconds"] == reference.run_seconds(first.manifest())
    assert reference.run_seconds({"start": "2026-11-30T04:00:00Z", "end": "2026-11-30T04:11:30Z"}) == 690
    assert reference.run_seconds({"start": "2026-11-30T04:00:00Z"}) is None
    md = (kept.path / "verdicts.md").read_text()
    assert f"kept from run `{first.label}` (1 record when merged;" in md and f"{second.label} + {first.label}" in md
    # without --merge the whole reference is replaced
    plain, _ = reference.save(second, root=tmp_path / "ref", paper_dir=paper)
    assert not [r for r in plain.metrics() if r["name"] == "e1.other"] and "merged" not in plain.origin()


def test_point_of_ignores_the_trial_and_the_type_of_a_parameter():
    a = {"name": "m", "params": {"rtt_ms": 80, "trial": 1}}
    b = {"name": "m", "params": {"rtt_ms": "80", "trial": 3}}
    assert reference.point_of(a) == reference.point_of(b) != reference.point_of({"name": "m", "params": {}})


def test_a_merge_replaces_a_ramps_limit_wherever_the_new_ramp_stopped():
    old = [{"name": "e5.collector_limit", "value": 32.0,
            "params": {"rtt_ms": 100, "tiers": 1, "found": 1, "limit": "lost", "per_worker": 16, "trial": 1}}]
    new = [{"name": "e5.collector_limit", "value": 74.0,
            "params": {"rtt_ms": 100, "tiers": 1, "found": 0, "limit": "ramp_max", "per_worker": 37, "trial": 1}}]
    assert reference.merged(old, new) == new                    # not both: the old limit is the same point's
    other = [dict(new[0], params=dict(new[0]["params"], tiers=2))]
    assert reference.merged(old, other) == old + other


def test_add_trials_numbers_a_later_runs_trials_after_the_references(tmp_path, paper):
    first = make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63)), declared=3)   # trials 1 and 2 of 3
    results.Run(first.path, trial=1).record("e1.other", 5.0, "s", rtt_ms=40)
    with pytest.raises(ConfigError, match="ran 2 trials where e1 declares 3 at quick"):
        reference.save(first, root=tmp_path / "ref", paper_dir=paper)
    reference.save(first, root=tmp_path / "ref", paper_dir=paper, force=True)
    later = make_run(tmp_path, losses=((0.3, 0.57),), declared=3)          # one more trial
    kept, replaced = reference.save(later, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    assert replaced is None
    at80 = sorted((r["params"]["trial"], r["value"]) for r in kept.metrics()
                  if r["name"] == "e1.efficiency_lost" and r["params"]["rtt_ms"] == 80)
    assert at80 == [(1, 0.6), (2, 0.63), (3, 0.57)]
    assert [r["value"] for r in kept.metrics() if r["name"] == "e1.other"] == [5.0]
    origin = kept.origin()
    assert origin["run"] == first.label and origin["added"][0]["run"] == later.label
    assert origin["added"][0]["trials"] == [3] and origin["added"][0]["records"] == 2
    assert kept.manifest()["trials"] == 2                          # the reference's own manifest stays
    ((_run, (v,)),) = compare.verdicts([kept], paper)
    assert v.verdict == "reproduced" and len(v.values) == 3
    md = (kept.path / "verdicts.md").read_text()
    assert f"Kept from run `{first.label}`" in md and f"Trial 3 of every row is added from run `{later.label}`" in md
    from testbed.report import experiment_sections
    assert f"Trial 3 of the points run `{later.label}` measured is added from it" in \
        experiment_sections._kept_line(kept)                     # the experiment's page says so
    with pytest.raises(ConfigError, match="already in the reference"):
        reference.save(later, root=tmp_path / "ref", paper_dir=paper, add_trials=True)


def test_add_trials_refuses_another_profile_and_a_key_without_a_reference(tmp_path, paper):
    first = make_run(tmp_path)
    with pytest.raises(ConfigError, match="no reference to add"):
        reference.save(first, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    assert not (tmp_path / "ref" / "e1").exists()                  # a refusal leaves no folder behind
    reference.save(first, root=tmp_path / "ref", paper_dir=paper)
    other = make_run(tmp_path, profiles=("wan-tuned",))
    with pytest.raises(ConfigError, match=r"profiles: \['wan-tuned'\] where the reference has \['default'\]"):
        reference.save(other, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    assert len(reference.Reference(tmp_path / "ref" / "e1" / "quick-default").metrics()) == 6   # untouched


def test_a_merge_after_an_add_names_the_added_trials_and_what_replaced_them(tmp_path, paper):
    first = make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63)), declared=3)
    results.Run(first.path, trial=1).record("e1.other", 5.0, "s", rtt_ms=40)
    reference.save(first, root=tmp_path / "ref", paper_dir=paper, force=True)
    later = make_run(tmp_path, losses=((0.3, 0.57),), declared=3)
    reference.save(later, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    other = make_run(tmp_path, losses=())                          # measures e1.other only
    results.Run(other.path, trial=1).record("e1.other", 6.0, "s", rtt_ms=40)
    kept, _ = reference.save(other, root=tmp_path / "ref", paper_dir=paper, merge=True)
    assert kept.origin()["added"][0]["run"] == later.label and "replaced_by" not in kept.origin()["added"][0]
    md = (kept.path / "verdicts.md").read_text()
    assert f"Trial 3 of every row is added from run `{later.label}`" in md
    assert f"{other.label} + {first.label} + {later.label}" in md          # one way of joining the runs
    again = make_run(tmp_path, losses=((0.3, 0.5),))               # measures the added trial's points again
    kept, _ = reference.save(again, root=tmp_path / "ref", paper_dir=paper, merge=True)
    assert kept.origin()["added"][0]["replaced_by"] == again.label
    assert f"Run `{again.label}` measured some of those points again" in (kept.path / "verdicts.md").read_text()


def test_the_cli_adds_a_runs_trials_and_refuses_merge_with_add_trials(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference, "REFERENCE_ROOT", tmp_path / "ref")
    first = make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63)), declared=3)
    assert cli.main(["reference", "save", str(first.path), "--force"]) == 0
    later = make_run(tmp_path, losses=((0.3, 0.57),), declared=3)
    capsys.readouterr()
    assert cli.main(["reference", "save", str(later.path), "--merge", "--add-trials"]) == 2
    assert "do not go together" in capsys.readouterr().err
    assert cli.main(["reference", "save", str(later.path), "--add-trials"]) == 0
    out = capsys.readouterr().out
    assert f"added {later.label} to " in out and "as trial 3 of the points it measured" in out
    assert "Does reference e1/quick-default reproduce the paper?" in out


def test_trials_of_other_code_or_another_site_are_never_judged_together(tmp_path, paper):
    first = make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63)), declared=3)
    reference.save(first, root=tmp_path / "ref", paper_dir=paper, force=True)
    for field, value in (("git_revision", "0123abc"), ("code", {"measurement": "ffff"}),
                         ("versions", {"condor": "25.14.1"}), ("experiment_parameters", {"sweep_jobs": 16})):
        later = make_run(tmp_path, losses=((0.3, 0.57),), declared=3)
        later.update(**{field: value})
        for how in ({"add_trials": True}, {"merge": True}):
            with pytest.raises(ConfigError, match=f"{field.split('_')[0]}"):
                reference.save(later, root=tmp_path / "ref", paper_dir=paper, **how)
    assert len(reference.Reference(tmp_path / "ref" / "e1" / "quick-default").metrics()) == 4   # untouched


def test_added_trials_never_pass_the_declared_count_and_are_numbered_without_gaps(tmp_path, paper):
    first = make_run(tmp_path, losses=((0.3, 0.6),), declared=2)
    results.Run(first.path, trial=1).record("e1.setup_only", 1.0, "s")
    reference.save(first, root=tmp_path / "ref", paper_dir=paper, force=True)
    later = make_run(tmp_path, losses=((0.3, 0.57),), declared=2)
    kept, _ = reference.save(later, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    assert sorted({r["params"]["trial"] for r in kept.metrics()}) == [1, 2]
    third = make_run(tmp_path, losses=((0.3, 0.5),), declared=2)
    with pytest.raises(ConfigError, match="would have 3 trials where e1 declares 2 at quick"):
        reference.save(third, root=tmp_path / "ref", paper_dir=paper, add_trials=True)


def test_a_replaced_reference_is_kept_in_history_with_why(tmp_path, paper):
    first, second = make_run(tmp_path), make_run(tmp_path, losses=((0.3, 0.9), (0.3, 0.95)))
    reference.save(first, root=tmp_path / "ref", paper_dir=paper)
    reference.save(second, root=tmp_path / "ref", paper_dir=paper, why="claims re-declared; a fresh run",
                   now=lambda: "2026-11-28T12:00:00Z")
    ((old, replaced),) = reference.history("e1", "quick-default", root=tmp_path / "ref")
    assert old.metrics() == first.metrics() and old.manifest()["reference"]["run"] == first.label
    assert replaced == {"replaced_by": second.label, "when": "2026-11-28T12:00:00Z",
                        "why": "claims re-declared; a fresh run"}
    assert [r.key for r in reference.listing(tmp_path / "ref")] == ["quick-default"]   # history is not a reference
    from testbed.report import experiment_sections
    lines = "\n".join(experiment_sections.history_lines(reference.find("e1", "quick-default", tmp_path / "ref"),
                                                          tmp_path / "ref"))
    assert f"`{first.label}`" in lines and "claims re-declared; a fresh run" in lines


def test_a_run_records_the_hash_of_the_code_that_measured_it(tmp_path):
    from testbed.results import provenance
    run = make_run(tmp_path)
    assert run.manifest()["code"]["measurement"] == provenance.measurement_hash()
    files = provenance.measured_files()
    assert "testbed/experiments/e1/transfer.py" in files and "robot/suites/e1_transfer_limits.robot" in files
    assert "testbed/results/verdict.py" not in files and not any(f.startswith("testbed/report/") for f in files)


def test_a_reference_says_whether_it_is_judged_under_the_declared_protocol(tmp_path, paper):
    first = make_run(tmp_path, losses=((0.3, 0.6), (0.3, 0.63)), declared=3)
    kept, _ = reference.save(first, root=tmp_path / "ref", paper_dir=paper, force=True)
    assert reference.protocol_problems(kept) == ["ran 2 trials where e1 declares 3 at quick"]
    later = make_run(tmp_path, losses=((0.3, 0.57),), declared=3)
    kept, _ = reference.save(later, root=tmp_path / "ref", paper_dir=paper, add_trials=True)
    assert reference.protocol_problems(kept) == []              # three trials, one provenance
    legacy = make_run(tmp_path)
    m = legacy.manifest()
    del m["code"], m["trials_declared"]
    results.write_json_atomic(legacy.manifest_path, m)
    old, _ = reference.save(legacy, root=tmp_path / "old", paper_dir=paper, force=True)
    assert reference.protocol_problems(old) == ["its manifest declares no trial count (ran 3)",
                                                 "its manifest has no hash of the code that measured it"]


def test_a_reference_says_whether_its_measurement_code_is_the_projects(tmp_path, paper, monkeypatch):
    from testbed.results import provenance
    kept, _ = reference.save(make_run(tmp_path), root=tmp_path / "ref", paper_dir=paper)
    code = kept.manifest()["code"]["measurement"]
    assert reference.code_line(kept) == f"measurement code `{code}`"   # the docs: not stale at every change
    assert reference.code_line(kept, provenance.measurement_hash()) == f"measurement code `{code}`, the project's current"
    assert reference.code_line(kept, "0" * 16).endswith(f"has changed since (`{'0' * 16}`): a fresh run measures it")
    assert reference.protocol_problems(kept) == []     # a later change ages a reference, it does not void it
    monkeypatch.setattr(reference, "REFERENCE_ROOT", tmp_path / "ref")
    assert "current" in reference.list_table().splitlines()[-1]
    monkeypatch.setattr(provenance, "measurement_hash", lambda root=None: "0" * 16)
    assert f"{code} (changed since)" in reference.list_table().splitlines()[-1]


def test_comparing_a_kept_reference_writes_its_report_outside_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference, "REFERENCE_ROOT", tmp_path / "ref")
    monkeypatch.setattr(results, "RESULTS_ROOT", tmp_path / "results")
    kept, _ = reference.save(make_run(tmp_path), root=tmp_path / "ref")
    before = sorted(p.name for p in kept.path.iterdir())
    for argv in (["compare", str(kept.path), "--against", "paper"], ["compare", str(kept.path), "--against",
                                                                       "reference"]):
        assert cli.main(argv) == 0
    assert sorted(p.name for p in kept.path.iterdir()) == before      # reading a reference leaves it as it is
    reports = tmp_path / "results" / "reports" / "e1-quick-default"
    assert (reports / "compare.html").exists() and (reports / "compare-reference.html").exists()
    assert "outside" in capsys.readouterr().out


def test_a_value_on_the_edge_of_a_zero_width_interval_is_inside():
    assert reference.within(6.4, 6.4 + 1e-15, 6.4 + 1e-15) and not reference.within(6.5, 6.4, 6.4)


def test_a_runs_page_lists_each_paper_source_once_and_numbers_its_rows():
    from testbed.report.experiment_sections import cites, number_sources, sources_lines
    headers = ["metric", "parameters", "paper", "source"]
    rows = [["a", "x=1", "60", "Figure 4: 'couldn't exceed'"], ["a", "x=2", "60", "Figure 4: 'couldn't exceed'"],
            ["b", "", "700", "Figure 5"], ["c", "", "-", "-"]]
    numbered = {}
    assert [r[3] for r in number_sources(headers, rows, numbered)] == ["(1)", "(1)", "(2)", "-"]
    # a second reference's table on the same page reuses the numbers and adds its own
    later = number_sources(headers, [["b", "", "700", "Figure 5"], ["d", "", "1", "Figure 6"]], numbered)
    assert [r[3] for r in later] == ["(2)", "(3)"]
    lines = sources_lines(numbered)
    assert lines[0] == "## Sources of the paper's figures"
    assert lines[-4:] == ["1. Figure 4: 'couldn't exceed'", "2. Figure 5", "3. Figure 6", ""]
    assert number_sources(["metric", "value"], [["a", "1"]], numbered) == [["a", "1"]]
    assert sources_lines({}) == []
    # a table links to the page's list only when a row names a source: "-" and "" name none
    assert cites(headers, rows) and not cites(headers, [["c", "", "-", "-"], ["e", "", "1", ""]])
    assert not cites(["metric", "value"], [["a", "1"]])
