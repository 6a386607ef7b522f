"""Which page sections `testbed report docs` generates, and writing them: README.md and every
page under docs/ are read, each marked section is made again from the project's files, and
a page is rewritten only when its text changed, and each figure under docs/experiments/img/
only when its bytes changed. `check` writes nothing and returns the pages and figures that
are out of date (what the unit test and `--check` use)."""
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.experiments.e1 import noise as e1_noise
from testbed.model.errors import ConfigError
from testbed.report import experiment_sections as ex, figure_sections as figs, release_matrix, site_sections as site
from testbed.report.markdown import fill


def makers(reference_root=None, extra=None, benchmark_root=None, figures=None, bringup_root=None,
           release_root=None):
    """{section name: make(argument, source) -> Markdown}; a section key is `name` or
    `name:argument` (e.g. `rows:e1`). `extra` adds sections made above this layer (the CLI's).
    `benchmark_root`: where the kept E1 noise pairs are (default results/benchmarks/e1-noise);
    `bringup_root`: the kept bring-ups (default results/benchmarks/bringup); `release_root`: the
    kept releases (default results/releases).
    `figures`: where the figure sections' PNGs go (figure_sections.Output; default: compared
    with this checkout's, never written)."""
    figures = figures or figs.Output(PROJECT_ROOT, check=True)

    def per_experiment(section, make):
        return lambda arg, source: make(ex.experiment(arg, source, f"{section}:{arg}"))

    out = {
        "params": per_experiment("params", ex.params_section),
        "paper": per_experiment("paper", ex.paper_section),
        "claims": per_experiment("claims", ex.claims_section),
        "rows": per_experiment("rows", ex.rows_section),
        "reference": per_experiment("reference", lambda exp: ex.reference_section(exp, reference_root)),
        # `summary:EXPERIMENT[:KEY]`: the page's main reference, or the one kept at KEY
        "summary": lambda arg, source: ex.summary_section(
            ex.experiment(arg.partition(":")[0], source, f"summary:{arg}"), reference_root,
            arg.partition(":")[2] or None),
        "experiments": lambda arg, source: ex.overview_section(reference_root),
        "bibtex": lambda arg, source: ex.bibtex_section(),
        "verdicts": lambda arg, source: ex.verdicts_section(arg or ex.MAIN_KEY, reference_root, source),
        "papers": lambda arg, source: ex.papers_section(source),
        "run-costs": lambda arg, source: ex.run_costs_section(reference_root, source),
        "first-comparison": lambda arg, source: ex.first_comparison_section(reference_root),
        "topologies": lambda arg, source: site.topologies_section(),
        "topology-show": lambda arg, source: site.topology_show_section(arg or "small"),
        "guest-cpu": lambda arg, source: site.guest_cpu_section(),
        "package-layers": lambda arg, source: site.package_layers_section(),
        "bringup-costs": lambda arg, source: site.bringup_costs_section(bringup_root),
        "release-knobs": lambda arg, source: site.release_knobs_section(release_root),
        "by-release": lambda arg, source: release_matrix.by_release_section(arg, reference_root),
        "release-matrix": lambda arg, source: release_matrix.section(reference_root, source),
        "profiles": lambda arg, source: site.profiles_section(),
        "fidelity": lambda arg, source: site.fidelity_section(reference_root),
        "e1-noise": lambda arg, source: e1_noise.section(benchmark_root),
        # the figures' links are relative to the page they are on
        "figures": lambda arg, source: figs.section(ex.experiment(arg, source, f"figures:{arg}"), source, figures,
                                                    reference_root),
    }
    out.update(extra or {})
    return out


def page_files(root):
    """README.md and every Markdown page under docs/, in a stable order."""
    root = Path(root)
    return [p for p in [root / "README.md"] if p.exists()] + sorted((root / "docs").rglob("*.md"))


def render(text, source, sections):
    def make(key):
        name, _, arg = key.partition(":")
        if name not in sections:
            raise ConfigError(source, key, f"unknown generated section {name!r} (known: {', '.join(sorted(sections))})")
        return sections[name](arg, source)
    return fill(text, source, make)


def generate(root, reference_root=None, extra=None, check=False):
    """Regenerate every marked section of the pages under `root`; returns the pages whose
    text changed and the figures whose bytes changed (written unless `check`)."""
    figures = figs.Output(root, check=check)
    sections = makers(reference_root, extra, figures=figures)
    changed = []
    for path in page_files(root):
        text = path.read_text()
        new = render(text, path.relative_to(root), sections)
        if new != text:
            changed.append(path)
            if not check:
                path.write_text(new)
    return changed + figures.finish()
