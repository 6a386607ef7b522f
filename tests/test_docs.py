"""The documentation: generated sections stay true (regenerated in a temporary copy, they
must equal the committed pages), a kept reference appears on its experiment's page and in the
fidelity table while a missing one is said plainly, every experiment has a page in the site's
nav, the README stays short, and `testbed test` builds the site strictly."""
import shutil
import types

import pytest
import yaml

from testbed import PROJECT_ROOT, cli
from testbed.cli import experiment_commands, report_commands
from testbed.harness import registry
from testbed.model.errors import ConfigError
from testbed.report import markdown, pages
from testbed.results import reference, runs as results, verdict

PARSER = cli.with_examples(cli.build_parser())

MKDOCS = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text())
MAX_PAGE_WORDS = 5000     # "about 5,000": a page read in one sitting


def copy_pages(tmp_path):
    """README.md and docs/ of this checkout, copied under tmp_path/pages."""
    root = tmp_path / "pages"
    root.mkdir()
    shutil.copy(PROJECT_ROOT / "README.md", root / "README.md")
    shutil.copytree(PROJECT_ROOT / "docs", root / "docs")
    return root


def test_the_committed_generated_sections_are_what_the_generator_writes(tmp_path):
    root = copy_pages(tmp_path)
    report_commands.generate_docs(PARSER, root)
    stale = [str(p.relative_to(root)) for p in pages.page_files(root)
             if p.read_text() != (PROJECT_ROOT / p.relative_to(root)).read_text()]
    img = root / "docs" / "experiments" / "img"
    committed = PROJECT_ROOT / "docs" / "experiments" / "img"
    stale += [str(p.relative_to(root)) for p in sorted(img.glob("*.png"))
              if not (committed / p.name).exists() or p.read_bytes() != (committed / p.name).read_bytes()]
    stale += [f"docs/experiments/img/{p.name} (no section draws it)" for p in sorted(committed.glob("*.png"))
              if not (img / p.name).exists()]
    assert not stale, f"out of date (run `testbed report docs` and commit): {', '.join(stale)}"


def test_check_writes_nothing_and_names_the_stale_page(tmp_path):
    root = copy_pages(tmp_path)
    page = root / "docs" / "experiments" / "e2-suite.md"
    text = page.read_text()
    start = text.index("<!-- generated: rows:e2")
    stale = text[:start] + text[start:].replace("`raid-write-speedup`", "`raid-write-speed`", 1)
    page.write_text(stale)
    assert report_commands.generate_docs(PARSER, root, check=True) == [page]
    assert page.read_text() == stale
    assert report_commands.generate_docs(PARSER, root) == [page] and page.read_text() == text


def test_report_docs_check_passes_on_this_checkout_whatever_the_code(capsys, monkeypatch):
    """Also with other measurement code than the references': a change to the code ages the
    references, it does not make the committed pages stale (each page names the code its
    reference was measured with, not today's)."""
    from testbed.results import provenance
    monkeypatch.setattr(provenance, "measurement_hash", lambda root=None: "0" * 16)
    assert cli.main(["report", "docs", "--check"]) == 0
    assert "generated pages are up to date" in capsys.readouterr().out


def kept_e1_reference(tmp_path):
    """An E1 run of 3 trials kept as the reference quick-default under tmp_path/ref."""
    run = results.Run.create("e1", ["table4-default", "table4-updated"], topology={"name": "default", "hosts": {"submit": {}, "worker1": {}}},
                             profile_contents={}, accel="tcg", scale="quick", root=tmp_path / "results")
    for trial, (at0, at80, tuned80) in enumerate([(0.30, 0.60, 0.40), (0.32, 0.62, 0.41), (0.28, 0.58, 0.39)], 1):
        rec = results.Run(run.path, trial=trial)
        rec.record("e1.efficiency_lost", at0, "ratio", rtt_ms=0, rate="2W", profile="table4-default")
        rec.record("e1.efficiency_lost", at80, "ratio", rtt_ms=80, rate="2W", profile="table4-default")
        rec.record("e1.efficiency_lost", tuned80, "ratio", rtt_ms=80, rate="2W", profile="table4-updated")
    run.update(trials=3, versions={"condor": "23.9.6", "xrootd": "v5.8.1", "qemu": "7.2.1"},
               host={"cores": 2, "ram_mb": 15000, "kernel": "6.1", "qemu": "7.2.1"},
               disks={"count": 6, "limits": {"mb_per_s": 40, "iops": 150}, "cache": "none"})
    run.finish("complete")
    kept, _ = reference.save(run, root=tmp_path / "ref", force=True,
                             now=lambda: "2026-11-26T10:00:00Z")
    return run, kept


def test_a_kept_reference_fills_its_page_and_the_fidelity_table(tmp_path):
    run, kept = kept_e1_reference(tmp_path)
    root = copy_pages(tmp_path)
    report_commands.generate_docs(PARSER, root, reference_root=tmp_path / "ref")
    e1 = (root / "docs" / "experiments" / "e1.md").read_text()
    e1_runs = (root / "docs" / "experiments" / "e1-runs.md").read_text()
    assert "## `quick` scale on `default`" in e1_runs
    assert f"Kept from run `{run.label}` on 2026-11-26T10:00:00Z: status complete, 3 trials, TCG" in e1_runs
    assert "| `e1.efficiency_lost` | rtt_ms=80 rate=2W |" not in e1_runs     # parameters as compare prints them
    assert "| e1.efficiency_lost | rate=2W rtt_ms=80 | ratio | 0.6 [0.55, 0.65] n=3 |" in e1_runs
    # the verdicts lead the experiment's page, from the main reference, and are not repeated
    summary = e1.split("<!-- generated: summary:e1", 1)[1].split("<!-- end generated", 1)[0]
    assert f"from run `{run.label}`, 3 trials, " in summary
    assert "| e1-loss-grows-with-rtt | reproduced | 3 |" in summary
    assert "| e1-loss-grows-with-rtt |" not in e1_runs and "Its verdicts are at [the top of e1's page]" in e1_runs
    assert e1.index("## Verdicts") < e1.index("## The paper's question")
    assert "No reference run kept yet for `e1`" not in e1 + e1_runs
    assert "No reference run kept yet for `e2`" in (root / "docs" / "experiments" / "e2.md").read_text()
    glance = (root / "docs" / "results.md").read_text()
    assert "| [e1](experiments/e1.md) | [`e1-loss-grows-with-rtt`](#e1-loss-grows-with-rtt) | **reproduced** |" in glance
    assert "<a id=\"e1-loss-grows-with-rtt\"></a>`e1-loss-grows-with-rtt` (e1): \"Red line" in glance
    fidelity = (root / "docs" / "fidelity.md").read_text()
    assert "| `e1/quick-default` | TCG | 2 cores, 15000 MB | 2 | 23.9.6 | v5.8.1 | 7.2.1 | 6 members, 40 MB/s + 150 IOPS each, cache none |" in fidelity
    assert "No reference run kept yet for `e2`, `e3`, `e4`, `e5`" in fidelity
    start = (root / "docs" / "getting-started.md").read_text()
    assert "`./tb compare results/reference/e1/quick-default --against paper`" in start
    assert "Does reference e1/quick-default reproduce the paper?" in start
    assert "`quick-default`" in (root / "docs" / "experiments" / "index.md").read_text()


def kept_e1(tmp_path, root, profiles, box="debian13", variant=""):
    """An E1 run of 3 trials measuring efficiency lost at 0 and 80 ms for the first profile
    and at 80 ms for the others, kept under `root` (its key from the box and the variant)."""
    run = results.Run.create("e1", profiles, topology={"name": "default", "box": box}, profile_contents={},
                             accel="tcg", scale="quick", root=tmp_path / "results")
    for trial, (at0, at80) in enumerate([(0.30, 0.60), (0.32, 0.62), (0.28, 0.58)], 1):
        rec = results.Run(run.path, trial=trial)
        for rate in ("W", "2W"):
            rec.record("e1.efficiency_lost", at0, "ratio", rtt_ms=0, rate=rate, profile=profiles[0])
            for i, prof in enumerate(profiles):
                rec.record("e1.efficiency_lost", at80 / (1 + i + trial / 10), "ratio", rtt_ms=80, rate=rate,
                           profile=prof)
    run.update(trials=3)
    run.finish("complete")
    return reference.save(run, root=root, force=True, variant=variant)[0]


def test_a_claim_the_main_reference_does_not_measure_is_judged_where_it_is_and_says_where(tmp_path):
    from testbed.report import experiment_sections
    both = ["table4-default", "table4-updated"]
    main = kept_e1(tmp_path, tmp_path / "ref", ["table4-default"])
    kept_e1(tmp_path, tmp_path / "ref", both, box="debian13+release:sid")   # another release: never used
    glance = experiment_sections.verdicts_section("quick-default", tmp_path / "ref", "docs/results.md")
    assert "[`e1-loss-grows-with-rtt`](#e1-loss-grows-with-rtt) | **reproduced** |" in glance
    assert "[`e1-tuning-lowers-loss-at-80ms`](#e1-tuning-lowers-loss-at-80ms) | **no data** |" in glance
    assert "+release-sid" not in glance and main.key == "quick-default"
    tuned = kept_e1(tmp_path, tmp_path / "ref", both, variant="tuned")
    glance = experiment_sections.verdicts_section("quick-default", tmp_path / "ref", "docs/results.md")
    assert ("[`e1-tuning-lowers-loss-at-80ms`](#e1-tuning-lowers-loss-at-80ms) | **inconclusive** on "
            "`quick-default+tuned` | > 1 | 1.84 [1.66, 2.01] (1.91, 1.83, 1.77) |") in glance
    assert "[`e1-loss-grows-with-rtt`](#e1-loss-grows-with-rtt) | **reproduced** |" in glance   # still the main's
    protocol = glance.split("Where each row's trials come from", 1)[1]
    assert f"| `quick-default` | `{main.origin()['run']}` |" in protocol
    assert f"| `{tuned.key}` | `{tuned.origin()['run']}` |" in protocol and "release" not in protocol


def test_without_references_every_page_says_so_and_invents_nothing(tmp_path):
    root = copy_pages(tmp_path)
    report_commands.generate_docs(PARSER, root, reference_root=tmp_path / "none")
    for name, exp in registry.experiments().items():
        text = experiment_pages_text(name)(root)
        for key in ("reference", "summary") if exp.paper else ("reference",):
            section = text.split(f"<!-- generated: {key}:{name}", 1)[1].split("<!-- end generated", 1)[0]
            assert f"No reference run kept yet for `{name}`" in section and "|" not in section
    assert "No reference run kept yet for `e1` at `quick` scale" in (root / "docs" / "getting-started.md").read_text()
    assert "No reference run kept yet for `e1`, `e2`, `e3`, `e4`, `e5`" in (root / "docs" / "fidelity.md").read_text()


def _nav_pages(items):
    for item in items:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from _nav_pages(value if isinstance(value, list) else [value])


def experiment_pages_text(name):
    """text(root): the experiment's page and its sub-pages (the suite, the kept runs), joined."""
    def text(root):
        pages_of = sorted((root / "docs" / "experiments").glob(f"{name}*.md"))
        return "\n".join(p.read_text() for p in pages_of
                         if p.stem in (name, f"{name}-suite", f"{name}-runs", f"{name}-claims"))
    return text


def test_every_experiment_has_a_page_in_the_nav_with_its_generated_sections():
    nav = set(_nav_pages(MKDOCS["nav"]))
    for name, exp in registry.experiments().items():
        page = f"experiments/{name}.md"
        assert page in nav, f"mkdocs.yml: nav has no {page}"
        keys = markdown.keys(experiment_pages_text(name)(PROJECT_ROOT))
        want = [f"params:{name}", f"rows:{name}", f"reference:{name}"] + \
            ([f"paper:{name}", f"summary:{name}", f"claims:{name}"] if exp.paper else [])
        assert set(want) <= set(keys), f"docs/{page} and its sub-pages: missing {sorted(set(want) - set(keys))}"
        if exp.paper:
            assert markdown.keys((PROJECT_ROOT / "docs" / page).read_text())[0] == f"summary:{name}", \
                f"docs/{page}: the verdicts come first"


def test_each_claim_on_an_experiments_page_links_to_itself_in_full_on_its_claims_page():
    for name, exp in registry.experiments().items():
        if not exp.paper:
            continue
        page = (PROJECT_ROOT / "docs" / "experiments" / f"{name}.md").read_text()
        full = (PROJECT_ROOT / "docs" / "experiments" / f"{name}-claims.md").read_text()
        for claim in verdict.load_file(exp.paper_path):
            assert f"**`{claim.id}`**" in page, f"docs/experiments/{name}.md: no {claim.id}"
            assert f'<a id="{claim.id}"></a>' in full, f"docs/experiments/{name}-claims.md: no anchor {claim.id}"
            if claim.note:
                assert f"({name}-claims.md#{claim.id})" in page and " ".join(claim.note.split()) in full
                assert " ".join(claim.note.split()) not in page, f"{claim.id}: its note twice"
            elif claim.reach or claim.derived:
                assert f"({name}-claims.md#{claim.id})" in page


def test_no_page_is_longer_than_a_reader_reads():
    """Long tables live on sub-pages or in `compare`'s full output, not in a page."""
    long = {str(p.relative_to(PROJECT_ROOT)): n for p in (PROJECT_ROOT / "docs").rglob("*.md")
            if (n := len(p.read_text().split())) > MAX_PAGE_WORDS}
    assert not long, f"pages over {MAX_PAGE_WORDS} words: {long}"


def test_the_results_page_is_linked_from_the_readme_and_cites_every_paper():
    assert "(docs/results.md)" in (PROJECT_ROOT / "README.md").read_text()
    glance = (PROJECT_ROOT / "docs" / "results.md").read_text()
    for name, exp in registry.experiments().items():
        if exp.paper:
            assert f"| [{name}](experiments/{name}.md) |" in glance and exp.seed in glance


def test_every_page_but_the_upstream_reports_is_in_the_nav():
    nav = set(_nav_pages(MKDOCS["nav"]))
    docs = PROJECT_ROOT / "docs"
    pages_there = {str(p.relative_to(docs)) for p in docs.rglob("*.md")}
    missing = {p for p in pages_there - nav if not p.startswith("upstream/") or p == "upstream/index.md"}
    assert not missing, f"mkdocs.yml: nav lacks {sorted(missing)}"
    assert nav <= pages_there, f"mkdocs.yml: nav names pages that do not exist: {sorted(nav - pages_there)}"


def test_an_unknown_or_unclosed_section_is_a_one_line_error_naming_the_page():
    sections = pages.makers()
    with pytest.raises(ConfigError, match=r"^docs/x.md: nope:e1: unknown generated section 'nope'"):
        pages.render("<!-- generated: nope:e1 -->\n<!-- end generated: nope:e1 -->\n", "docs/x.md", sections)
    with pytest.raises(ConfigError, match=r"^docs/x.md: rows:e9: no experiment 'e9' in the registry"):
        pages.render("<!-- generated: rows:e9 -->\n<!-- end generated: rows:e9 -->\n", "docs/x.md", sections)
    with pytest.raises(ConfigError, match=r"^docs/x.md: rows:e1: generated section has no"):
        pages.render("<!-- generated: rows:e1 -->\ntext\n", "docs/x.md", sections)


def test_a_section_key_may_name_a_variant_reference():
    text = "<!-- generated: summary:e2:quick-default+array-bound -->\nold\n<!-- end generated: summary:e2:quick-default+array-bound -->\n"
    assert markdown.keys(text) == ["summary:e2:quick-default+array-bound"]
    out = markdown.fill(text, "page.md", lambda key: f"made from {key}")
    assert "made from summary:e2:quick-default+array-bound" in out and "old" not in out


def test_text_outside_the_sections_is_kept_and_a_table_cell_stays_one_cell():
    text = "intro\n<!-- generated: topologies -->\nold\n<!-- end generated: topologies -->\noutro\n"
    out = pages.render(text, "README.md", pages.makers())
    assert out.startswith("intro\n<!-- generated: topologies (by `testbed report docs`") and out.endswith("outro\n")
    assert "old" not in out and "| `small` | 5 |" in out
    assert markdown.table(["a", "b"], [["x | y", "two\nlines"]]).splitlines()[-1] == "| x \\| y | two lines |"


def test_the_readme_is_short_and_shows_the_two_commands():
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "./tb demo" in readme and "./tb test" in readme
    assert (PROJECT_ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == "./tb test"


def test_mkdocs_and_its_theme_are_pinned_requirements():
    reqs = dict(line.split("==") for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line)
    assert {"mkdocs", "mkdocs-material"} <= set(reqs)
    assert MKDOCS["theme"]["name"] == "material" and MKDOCS["docs_dir"] == "docs" and MKDOCS["strict"] is True


def test_tb_test_builds_the_site_strictly_after_the_unit_tests(monkeypatch, capsys):
    monkeypatch.setattr(experiment_commands, "make_room_for", lambda topo: None)  # whatever site this checkout has up
    calls = []

    def run(argv):
        calls.append(argv)
        return codes.pop(0)
    monkeypatch.setattr(experiment_commands, "_run", run)
    browsed = []
    monkeypatch.setattr(experiment_commands, "browse_docs", lambda site_dir: browsed.append(site_dir) or [])
    codes = [0, 0]
    assert experiment_commands.cmd_test(types.SimpleNamespace(unit_only=True, keep=False)) == 0
    pytest_argv, mkdocs_argv = calls
    assert pytest_argv[1:3] == ["-m", "pytest"]
    assert mkdocs_argv[1:5] == ["-m", "mkdocs", "build", "--strict"]
    site = mkdocs_argv[mkdocs_argv.index("--site-dir") + 1]
    assert not site.startswith(str(PROJECT_ROOT)), "the built site is not kept in the checkout"
    assert browsed == [site], "the built site is opened in the browser, before it is removed"

    calls.clear()
    codes = [0, 1]
    assert experiment_commands.cmd_test(types.SimpleNamespace(unit_only=False, keep=False)) == 1
    assert len(calls) == 2   # nothing brought up after a failed build
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the documentation does not build (`mkdocs build --strict`" in err

    calls.clear()
    codes = [1]
    assert experiment_commands.cmd_test(types.SimpleNamespace(unit_only=True, keep=False)) == 1
    assert len(calls) == 1   # failed unit tests: no build


def test_a_page_shows_the_rows_the_paper_or_a_claim_reads_and_points_to_the_rest():
    from testbed.report import experiment_sections as ex
    from testbed.results.expressions import Selector
    figures = [{"metric": "e9.rate", "params": {"rtt_ms": 0}}]
    keep = ex.headline_rows(figures, [Selector("e9.loss", {"rtt_ms": 80, "profile": "tuned"})])
    assert keep("e9.rate", {"rtt_ms": 0}) and not keep("e9.rate", {"rtt_ms": 80})
    assert keep("e9.loss", {"rtt_ms": 80, "rate": "2W"})      # the profile is the table's column
    assert not keep("e9.loss", {"rtt_ms": 0}) and not keep("e9.other", {})


def test_links_to_the_experiment_pages_are_relative_to_the_page_they_sit_on():
    from testbed.report import experiment_sections as ex
    assert ex.pages_link("docs/experiments/index.md") == ""
    assert ex.pages_link("docs/results.md") == "experiments/"
    assert ex.pages_link("docs/operations/runs.md") == "../experiments/"
    assert ex.pages_link("README.md") == "docs/experiments/"


def test_what_a_run_costs_comes_from_the_kept_manifests(tmp_path):
    from testbed.report import experiment_sections as ex
    run, _kept = kept_e1_reference(tmp_path)
    text = ex.run_costs_section(tmp_path / "ref")
    row = next(line for line in text.splitlines() if line.startswith("| [e1]"))
    assert "| `quick` | `default` | 3 trials |" in row and "| 2 | " in row and "TCG, 2 cores" in row
    assert ex.guest_ram_mb({"defaults": {"memory_mb": 512}, "hosts": {
        "a": {}, "b": {"memory_mb": 2048}, "c": {"existing": {"address": "x"}}}}) == (2, 2560)
    assert ex.run_costs_section(tmp_path / "none") == "No reference run kept yet: nothing to time."


def test_a_page_chromium_finds_broken_fails_the_docs_build(monkeypatch, capsys):
    monkeypatch.setattr(experiment_commands, "_run", lambda argv: 0)
    assert experiment_commands.build_docs(browse=lambda site_dir: ["results/index.html: image img/x.png did not load"]) == 1
    assert "in Chromium, results/index.html: image img/x.png did not load" in capsys.readouterr().err
    assert experiment_commands.build_docs(browse=lambda site_dir: []) == 0


def test_a_summary_at_another_key_shows_only_the_claims_its_run_measured(tmp_path):
    from testbed.report import experiment_sections as ex
    run, kept = kept_e1_reference(tmp_path)
    exp = registry.experiments()["e1"]
    main = ex.summary_section(exp, tmp_path / "ref")
    assert "| e1-loss-grows-with-rtt | reproduced |" in main and "| no data |" in main
    keyed = ex.summary_section(exp, tmp_path / "ref", "quick-default")
    assert "| e1-loss-grows-with-rtt | reproduced |" in keyed and "| no data |" not in keyed
    assert ex.summary_section(exp, tmp_path / "ref", "quick-e3-cores") == (
        "No reference of `e1` kept at `quick-e3-cores` yet.")


def test_a_merged_references_cost_is_the_sum_of_its_runs_when_each_is_known():
    from testbed.report import experiment_sections as ex
    assert ex._wall_time(660, {"run": "c"}) == ("11 min", 660)
    both = {"run": "c", "merged": [{"run": "a", "seconds": 3000}, {"run": "b", "seconds": 4800}]}
    assert ex._wall_time(660, both) == ("141 min over 3 runs (the last 11 min)", 8460)
    unknown = {"run": "c", "merged": [{"run": "a", "seconds": 3000}, {"run": "b"}]}
    assert ex._wall_time(660, unknown) == ("11 min (the kept run; other runs' points were added)", 660)
