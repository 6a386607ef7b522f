"""The docs' figure sections (`figures:<experiment>`): the PNGs are written under
docs/experiments/img/ and embedded with a caption naming the reference and its trials, the
same reference gives the same bytes, `--check` names a stale or stray figure and writes
nothing, and an experiment without a reference gets a plain line and no image."""
import types

import pytest

from testbed import PROJECT_ROOT
from testbed.experiments.e4 import e4_figures
from testbed.harness import registry
from testbed.harness.registry import DocFigure
from testbed.report import figure_sections as figs, pages
from testbed.results import reference, runs as results

PAGE = "docs/experiments/e1.md"
MARKED = "# E1\n\nintro\n\n<!-- generated: figures:e1 -->\n<!-- end generated: figures:e1 -->\n"


def kept(tmp_path, experiment, profiles, points, trials=3):
    """A run of `experiment` whose trial t records `points(t)` ([(name, value, unit, params)]),
    kept as its reference quick-default under tmp_path/ref."""
    run = results.Run.create(experiment, profiles, topology={"name": "default", "hosts": {"submit": {}}},
                             profile_contents={}, accel="tcg", scale="quick", root=tmp_path / "results")
    for trial in range(1, trials + 1):
        rec = results.Run(run.path, trial=trial)
        for name, value, unit, params in points(trial):
            rec.record(name, value, unit, **params)
    run.update(trials=trials)
    run.finish("complete")
    reference.save(run, root=tmp_path / "ref", force=True, now=lambda: "2026-11-26T10:00:00Z")
    return run


def e1_points(trial):
    out = []
    for profile, rate, rtt, lost in (("table4-default", "2W", 0, 0.30), ("table4-default", "2W", 80, 0.60),
                                     ("table4-default", "W", 80, 0.45), ("table4-updated", "W", 80, 0.35)):
        at = dict(profile=profile, rate=rate, rtt_ms=rtt)
        out += [("e1.efficiency_lost", lost + 0.01 * trial, "ratio", at),
                ("e1.job_transfer_rate", 2.0 - lost + 0.05 * trial, "MB/s", at)]
    return out


@pytest.fixture
def e1_ref(tmp_path):
    return kept(tmp_path, "e1", ["table4-default", "table4-updated"], e1_points)


def site(tmp_path, name="site"):
    """A project root with one page holding the figures:e1 section."""
    root = tmp_path / name
    (root / "docs" / "experiments").mkdir(parents=True)
    (root / PAGE).write_text(MARKED)
    return root


def test_figures_are_written_and_embedded_with_their_reference_and_trials(tmp_path, e1_ref):
    root = site(tmp_path)
    out = figs.Output(root)
    text = figs.section(registry.get("e1"), PAGE, out, tmp_path / "ref")
    img = root / "docs" / "experiments" / "img"
    assert sorted(p.name for p in img.iterdir()) == ["e1-efficiency-lost.png", "e1-transfer-rate.png"]
    assert out.changed == [img / "e1-efficiency-lost.png", img / "e1-transfer-rate.png"]
    assert "](img/e1-efficiency-lost.png)" in text and "](img/e1-transfer-rate.png)" in text
    assert text.count("![E1 ") == 2
    assert f"Drawn from the reference `e1/quick-default` (run `{e1_ref.label}`, 3 trials)" in text
    assert "points are the means over the trials with their 95% t intervals" in text
    for png in img.iterdir():
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) < 80_000
        assert b"tEXt" not in data and b"iTXt" not in data and b"tIME" not in data   # no software, no date
    # a page elsewhere links to the same folder from where it is
    assert "](experiments/img/e1-efficiency-lost.png)" in figs.section(registry.get("e1"), "docs/index.md",
                                                                      figs.Output(root), tmp_path / "ref")


def test_two_renders_of_one_reference_give_the_same_bytes(tmp_path, e1_ref):
    first, second = site(tmp_path, "a"), site(tmp_path, "b")
    assert pages.generate(first, tmp_path / "ref") and pages.generate(second, tmp_path / "ref")
    names = sorted(p.name for p in (first / "docs/experiments/img").iterdir())
    assert names == ["e1-efficiency-lost.png", "e1-transfer-rate.png"]
    for name in names:
        assert (first / "docs/experiments/img" / name).read_bytes() == \
            (second / "docs/experiments/img" / name).read_bytes()
    assert pages.generate(first, tmp_path / "ref") == []          # nothing to rewrite the second time


def test_check_names_a_stale_missing_or_stray_figure_and_writes_nothing(tmp_path, e1_ref):
    root = site(tmp_path)
    pages.generate(root, tmp_path / "ref")
    img = root / "docs" / "experiments" / "img"
    assert pages.generate(root, tmp_path / "ref", check=True) == []
    stale = img / "e1-efficiency-lost.png"
    stale.write_bytes(stale.read_bytes()[:-20] + b"\0" * 20)
    before = stale.read_bytes()
    (img / "e1-transfer-rate.png").unlink()
    (img / "e9-gone.png").write_bytes(b"old")
    assert pages.generate(root, tmp_path / "ref", check=True) == [stale, img / "e1-transfer-rate.png",
                                                                   img / "e9-gone.png"]
    assert stale.read_bytes() == before and (img / "e9-gone.png").exists()
    assert not (img / "e1-transfer-rate.png").exists()
    # writing puts them right: the stale one redrawn, the missing one drawn, the stray one removed
    pages.generate(root, tmp_path / "ref")
    assert sorted(p.name for p in img.iterdir()) == ["e1-efficiency-lost.png", "e1-transfer-rate.png"]
    assert pages.generate(root, tmp_path / "ref", check=True) == []


def test_the_cli_check_reports_a_stale_figure(tmp_path, e1_ref, capsys, monkeypatch):
    from testbed.cli import report_commands
    root = site(tmp_path)
    pages.generate(root, tmp_path / "ref")
    (root / "docs/experiments/img/e1-transfer-rate.png").write_bytes(b"stale")
    monkeypatch.setattr(report_commands, "PROJECT_ROOT", root)
    monkeypatch.setattr(report_commands, "generate_docs",
                        lambda parser, root, check=False: pages.generate(root, tmp_path / "ref", check=check))
    assert report_commands.cmd_report_docs(types.SimpleNamespace(check=True, parser=None)) == 1
    assert "out of date: docs/experiments/img/e1-transfer-rate.png" in capsys.readouterr().out


def test_without_a_reference_a_plain_line_and_no_image(tmp_path):
    root = site(tmp_path)
    out = figs.Output(root)
    text = figs.section(registry.get("e1"), PAGE, out, tmp_path / "none")
    assert text.startswith("No reference run kept yet for `e1`, so there are no figures")
    assert "![" not in text and out.changed == [] and not (root / "docs/experiments/img").exists()
    assert "declares no figures" in figs.section(registry.get("smoke"), PAGE, out, tmp_path / "none")


def test_the_first_kept_reference_when_there_is_none_at_quick_default(tmp_path, e1_ref):
    (tmp_path / "ref" / "e1" / "quick-default").rename(tmp_path / "ref" / "e1" / "ci-small")
    text = figs.section(registry.get("e1"), PAGE, figs.Output(site(tmp_path)), tmp_path / "ref")
    assert "Drawn from the reference `e1/ci-small`" in text


def test_a_picked_figure_comes_from_the_experiments_own_maker(tmp_path):
    def points(trial):
        return [("e4.task_finish_fraction", 0.8 + 0.05 * rank, "fraction",
                 dict(layout="colocated", backfill=0, node=0, rank=rank)) for rank in range(1, 5)]
    run = kept(tmp_path, "e4", ["default"], points, trials=1)
    exp = types.SimpleNamespace(name="e4", figures=e4_figures.figures, doc_figures=(
        e4_figures.DOC_FIGURES[0],
        DocFigure("nothing", "a figure the maker does not draw", "Nothing.", pick="e4-no-such-*.png")))
    root = site(tmp_path)
    text = figs.section(exp, "docs/experiments/e4.md", figs.Output(root), tmp_path / "ref")
    assert sorted(p.name for p in (root / "docs/experiments/img").iterdir()) == ["e4-idle-tail.png"]
    assert "![E4 idle tail" in text and f"(run `{run.label}`, 1 trial); one trial: the points are its values" in text
    assert "The reference `e4/quick-default` holds no points for this figure (a figure the maker does not draw)." \
        in text


def test_a_doc_figure_is_drawn_or_picked_not_both():
    with pytest.raises(ValueError, match="either draw or pick"):
        DocFigure("x", "alt", "Caption.")
    with pytest.raises(ValueError, match="either draw or pick"):
        DocFigure("x", "alt", "Caption.", draw=lambda records: None, pick="x.png")
    with pytest.raises(ValueError, match="file-name part"):
        DocFigure("X Y", "alt", "Caption.", pick="x.png")


def test_the_committed_figures_are_small_and_each_experiment_declares_few():
    img = PROJECT_ROOT / figs.IMG_DIR
    for png in img.glob("*.png"):
        assert png.stat().st_size < 80_000, f"{png.name}: {png.stat().st_size} bytes"
    for name, exp in registry.experiments().items():
        assert len(exp.doc_figures) <= 3, name
