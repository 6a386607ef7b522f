"""Compare runs: a terminal table (metric, parameters, each run/profile, ratio)
and an HTML report with plots; optionally the papers' published figures beside.

Columns are (run, profile) series: a run that sweeps two profiles gives two
columns. Rows are (metric, parameters other than the profile). Time series
(records with a `t` parameter) go to plots only. The ratio is the last column
over the first.

Which record parameters are plot x axes is the experiments' knowledge
(Experiment.x_params in testbed/experiments): callers pass it as `axes`,
{suite name: (parameter, ...)}; without it only time series (`t`) are plotted.

Figures and tables that are not metric-vs-x lines (E3's storage x compute heatmaps,
E4's idle tail) are drawn by the experiments themselves (Experiment.figures / .tables):
`plots`, `render_html` and `render_text` call them for the suites of the runs, with each
suite's records split into the table's columns (`suite_columns`). Like the axes, callers
pass them from the registry (`figure_makers`, `table_makers`: {suite: callable});
without them there are only the table and the line plots.

The functions given `runs` take Runs (or References) or their snapshots (RunSnapshot): a report
reads each run's manifest and metrics once and hands that reading to every part of it.
"""
import html
import json
import math
import statistics
import sys
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model import tables
from testbed.model.errors import ConfigError
from testbed.model.schema import Reader, load_yaml
from testbed.results import intervals, release_record, runs as run_folders, verdict

PAPER_DIR = PROJECT_ROOT / "results" / "paper"
SERIES_PARAM = "t"
TRIAL_PARAM = "trial"  # a repeated run's records carry the trial they belong to
DEFAULT_AXES = (SERIES_PARAM,)


def load_paper(path=PAPER_DIR):
    """The papers' figures: every results/paper/*.yaml (one file per experiment), or one file."""
    path = Path(path)
    if path.is_dir():
        return [fig for f in sorted(path.glob("*.yaml")) for fig in load_paper(f)]
    r = Reader(load_yaml(path), path)
    r.only({"citation", "figures", "claims"})
    figures = []
    for i, item in enumerate(r.list("figures")):
        f = Reader(item, path, f"figures[{i}]")
        f.only({"metric", "value", "expect", "unit", "params", "source", "note"})
        value, expect = f.data.get("value"), f.data.get("expect")
        if (value is None) == (expect is None):
            raise f.error("value", "give either a number (value) or a qualitative finding (expect)")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise f.error("value", f"must be a number, got {value!r}")
        if expect is not None and not isinstance(expect, str):
            raise f.error("expect", f"must be a string like '> 1', got {expect!r}")
        params = f.data.get("params") or {}
        if not isinstance(params, dict):
            raise f.error("params", "must be a mapping")
        figures.append({"metric": f.str("metric"), "value": None if value is None else float(value),
                        "expect": expect, "unit": f.str("unit", ""),
                        "params": params, "source": f.str("source"), "note": f.data.get("note", "")})
    return figures


def load_citation(path):
    """The paper of one paper file as its seed names it: {title, authors, published, url}
    (url "" where the seed gives none)."""
    path = Path(path)
    r = Reader(load_yaml(path), path)
    c = Reader(r.data.get("citation") or {}, path, "citation")
    c.only({"title", "authors", "published", "url"})
    return {**{key: c.str(key) for key in ("title", "authors", "published")}, "url": c.str("url", "")}


def citation_text(cite):
    """One line: authors, "title", where it was published."""
    return (f"{cite['authors']}, \"{cite['title']}\", {cite['published']}"
            + (f", <{cite['url']}>" if cite["url"] else ""))


def bibtex(key, cite):
    """One BibTeX entry of a citation: @article where the seed names a journal, @misc else
    (with what the seed says in `note`)."""
    import re
    authors = " and ".join(a.strip() for a in re.sub(r"\s*\(.*\)", "", cite["authors"]).split(","))
    year = re.search(r"\b(19|20)\d\d\b", cite["published"])
    journal = re.match(r"(.*?) (\d+) (\d+) \((\d{4})\)$", cite["published"])
    fields = [("author", authors), ("title", "{" + cite["title"] + "}")]
    if journal:
        fields += [("journal", journal.group(1)), ("volume", journal.group(2)), ("pages", journal.group(3))]
    else:
        fields += [("note", cite["published"])]
    fields += [("year", year.group(0))] if year else []
    fields += [("url", cite["url"])] if cite["url"] else []
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{'article' if journal else 'misc'}{{{key},\n{body}\n}}"


def format_params(params):
    return " ".join(f"{k}={_fmt(v)}" for k, v in sorted(params.items()))


def _fmt(v):
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
        return f"{v:.3g}"
    return str(v)


@dataclass(frozen=True)
class RunSnapshot:
    """One run's manifest and metric records as read once for a report; its parts only read
    them. A snapshot lives for one report rather than Run caching what it read: a Run is a
    handle on a folder a suite still appends to (from the robot process too) and updates
    (`finish`), so a cache on it would serve a later reader the records and status from
    before the writer's."""
    run: object        # the Run (or Reference) read: verdicts name it
    label: str
    manifest: dict
    metrics: list

    @classmethod
    def read(cls, run):
        return cls(run, run.label, run.manifest(), run.metrics())


def snapshots(runs):
    """Each run read once (a RunSnapshot is taken as it is): the entry points read the runs
    and hand the snapshots to the parts they call, so no part reads a run again."""
    return [r if isinstance(r, RunSnapshot) else RunSnapshot.read(r) for r in runs]


def series_key(run_label, default_profile, record):
    profile = record["params"].get("profile")
    return (run_label, str(profile if profile is not None else default_profile))


def _axes_for(axes, run):
    if axes is None:
        return DEFAULT_AXES
    if isinstance(axes, dict):
        return tuple(axes.get(run.manifest.get("suite"), DEFAULT_AXES))
    return tuple(axes)


def collect(runs, axes=None, trials=None):
    """(columns, rows, series): rows {(metric, params-tuple, unit): {column: value}},
    series {metric: {(column, other-params): [(x, y)]}} for plotting. `axes`: the x
    parameters, {suite: (name, ...)} or one tuple for all runs. A repeated run's records
    carry `trial`: a row's value is the mean over the trials of each trial's mean (the centre
    of its 95% t interval), and
    `trials` (a dict, when given) receives {row key: {column: [each trial's mean]}}."""
    columns = []
    sums = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    series = defaultdict(lambda: defaultdict(list))
    for run in snapshots(runs):
        default_profile = (run.manifest.get("profiles") or ["default"])[0]
        x_params = _axes_for(axes, run)
        for rec in run.metrics:
            col = series_key(run.label, default_profile, rec)
            if col not in columns:
                columns.append(col)
            params = {k: v for k, v in rec.get("params", {}).items() if k not in ("profile", TRIAL_PARAM)}
            trial = rec.get("params", {}).get(TRIAL_PARAM, 1)
            x_name = next((p for p in x_params if isinstance(params.get(p), (int, float))), None)
            if x_name:
                others = tuple(sorted((k, v) for k, v in params.items() if k != x_name))
                series[(rec["name"], x_name, rec.get("unit", ""))][(col, others)].append(
                    (params[x_name], rec["value"]))
            if SERIES_PARAM in params:
                continue
            key = (rec["name"], tuple(sorted(params.items())), rec.get("unit", ""))
            sums[key][col][trial].append(rec["value"])
    rows = OrderedDict()
    for key in sorted(sums, key=lambda k: (k[0], [str(v) for v in k[1]])):
        per_trial = {col: [sum(v) / len(v) for _t, v in sorted(by_trial.items())]
                     for col, by_trial in sums[key].items()}
        rows[key] = {col: statistics.fmean(v) for col, v in per_trial.items()}
        if trials is not None:
            trials[key] = per_trial
    return columns, rows, series


def cell_text(value, per_trial):
    """A table cell: the value (with several trials their mean) and the 95% interval on it."""
    if len(per_trial) < 2:
        return _fmt(float(value))
    _mean, _median, lo, hi = intervals.interval(per_trial)
    return f"{_fmt(float(value))} [{_fmt(lo)}, {_fmt(hi)}] n={len(per_trial)}"


# The column beside the profiles: a row's last value over its first, between this table's
# own columns. Named so that, beside `paper`, it does not read as a comparison with the paper.
RATIO_HEADER = "last/first"
RATIO_LEGEND = (f"{RATIO_HEADER}: a row's last value over its first, across this table's columns "
                "(the paper's own figure is under `paper`)")


def ratio(values, columns):
    present = [values.get(c) for c in columns if values.get(c) is not None]
    if len(present) < 2 or not present[0]:
        return None
    return present[-1] / present[0]


def intervals_apart(per_trial, columns):
    """'yes' when the 95% intervals of the first and the last column (with a value) do not
    overlap, 'no' when they do, '-' without two trials on each side."""
    present = [per_trial[c] for c in columns if c in per_trial]
    if len(present) < 2 or len(present[0]) < 2 or len(present[-1]) < 2:
        return "-"
    (_m1, _d1, lo1, hi1), (_m2, _d2, lo2, hi2) = intervals.interval(present[0]), intervals.interval(present[-1])
    return "yes" if hi1 < lo2 or hi2 < lo1 else "no"


def paper_match(figures, metric, params):
    p = dict(params)
    for fig in figures:
        if fig["metric"] == metric and all(str(p.get(k)) == str(v) for k, v in fig["params"].items()):
            return fig
    return None


def column_labels(columns, notes=None):
    """(column labels, legend lines): with several runs each column is `letter:profile` and
    the legend names each letter's run, with `notes` {run label: text} after it."""
    runs = list(OrderedDict.fromkeys(c[0] for c in columns))
    notes = notes or {}
    letters = {run: chr(ord("A") + i) if len(runs) > 1 else "" for i, run in enumerate(runs)}
    labels = [f"{letters[r]}:{p}" if letters[r] else p for r, p in columns]
    legend = ([f"{letters[r]} = {r}" + (f" ({notes[r]})" if notes.get(r) else "") for r in runs]
              if len(runs) > 1 else [f"run {runs[0]}"] if runs else [])
    return labels, legend


def release_of(run):
    """'HTCondor 25.14.1, XRootD 6.2.0, box debian13+release:sid': what a run (its snapshot)
    ran on."""
    m = run.manifest
    topo = m.get("topology") if isinstance(m.get("topology"), dict) else {}
    return release_record.release_name(m.get("versions")) + (f", box {topo['box']}" if topo.get("box") else "")


def release_notes(runs):
    """{run label: its release} when the runs (snapshots) ran on more than one release, else {}."""
    notes = {r.label: release_of(r) for r in runs}
    return notes if len(set(notes.values())) > 1 else {}


def suite_columns(runs):
    """{suite: {column label: [records]}}: each suite's records by (run, profile) column,
    labelled as in the comparison table (`A:default` when several runs)."""
    by_col, suite_of = OrderedDict(), {}
    for run in snapshots(runs):
        manifest = run.manifest
        default_profile = (manifest.get("profiles") or ["default"])[0]
        for rec in run.metrics:
            col = series_key(run.label, default_profile, rec)
            by_col.setdefault(col, []).append(rec)
            suite_of[col] = manifest.get("suite")
    labels = dict(zip(by_col, column_labels(list(by_col))[0]))
    out = OrderedDict()
    for col, records in by_col.items():
        out.setdefault(suite_of[col], OrderedDict())[labels[col]] = records
    return out


def _call_makers(runs, makers, kind, *args):
    """Each suite's maker on its columns; a maker that fails is reported, not fatal (the
    rest of the report is still written)."""
    out = []
    if not makers:
        return out
    for suite, columns in suite_columns(runs).items():
        maker = makers.get(suite)
        if maker is None:
            continue
        try:
            out.append(maker(columns, *args))
        except Exception as exc:  # noqa: BLE001 - one experiment's figure must not cost the report
            print(f"compare: {suite} {kind} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return out


def experiment_tables(runs, table_makers=None):
    """The experiments' own text tables (E3's matrix), joined."""
    return "\n\n".join(t for t in _call_makers(runs, table_makers, "tables") if t)


def experiment_figures(runs, outdir, figure_makers=None):
    """The experiments' own figures (E3's heatmaps, E4's idle tail) in `outdir`."""
    return [Path(p) for paths in _call_makers(runs, figure_makers, "figures", Path(outdir)) for p in paths]


def table(runs, figures=None, keep=None):
    """(headers, rows, legend) for the terminal and the report; `keep(metric, params)`, when
    given, picks the rows shown (the paper's figures this suite has no measurement for are
    always shown)."""
    runs = snapshots(runs)
    spreads = {}
    columns, rows, _ = collect(runs, axes=DEFAULT_AXES, trials=spreads)
    if keep is not None:
        rows = OrderedDict((key, values) for key, values in rows.items() if keep(key[0], dict(key[1])))
    notes = release_notes(runs)
    labels, legend = column_labels(columns, notes)
    headers = ["metric", "parameters", "unit"] + labels + [RATIO_HEADER]
    if notes:   # runs on several releases: is the change more than the trials' spread?
        headers.append("apart")
        legend.append("apart: the 95% intervals of the first and the last column do not overlap "
                      "(- without two trials on each side)")
    if figures is not None:
        headers += ["paper", "source"]
    out, matched = [], set()
    for (metric, params, unit), values in rows.items():
        r = ratio(values, columns)
        row = [metric, format_params(dict(params)), unit] + \
              [cell_text(values[c], spreads[(metric, params, unit)][c]) if c in values else "-" for c in columns] + \
              [f"{r:.2f}x" if r is not None and math.isfinite(r) else "-"]
        if notes:
            row.append(intervals_apart(spreads[(metric, params, unit)], columns))
        if figures is not None:
            fig = paper_match(figures, metric, params)
            if fig:
                matched.add(id(fig))
            row += [_fmt(fig["value"]) if fig["value"] is not None else fig["expect"], fig["source"]] \
                if fig else ["-", ""]
        out.append(row)
    if figures is not None:  # the paper's figures this suite has no measurement for
        prefixes = {key[0].split(".")[0] for key in rows}
        for fig in figures:
            if id(fig) not in matched and fig["metric"].split(".")[0] in prefixes:
                shown = _fmt(fig["value"]) if fig["value"] is not None else fig["expect"]
                out.append([fig["metric"], format_params(fig["params"]), fig["unit"]] + ["-"] * len(columns)
                           + ["-"] + (["-"] if notes else []) + [shown, fig["source"]])
    return headers, out, legend


def verdicts(runs, paper_dir=PAPER_DIR):
    """[(run, [Verdict])]: each run's paper claims and their verdicts (results/verdict.py). The pairs
    name the Run, also when given its snapshot."""
    read = [(r.run, r.manifest.get("suite"), r.metrics) for r in snapshots(runs)]
    return verdict.for_runs(read, sorted(Path(paper_dir).glob("*.yaml")))


def render_text(runs, figures=None, table_makers=None):
    """The comparison table, the experiments' own tables and, against the paper, the verdict
    of each of the paper's claims."""
    runs = snapshots(runs)
    headers, rows, legend = table(runs, figures)
    if not rows:
        return "no metrics recorded in " + ", ".join(r.label for r in runs)
    status = [f"{r.label}: {r.manifest.get('status')}" for r in runs]
    extra = experiment_tables(runs, table_makers)
    judged = verdict.render_text(verdicts(runs)) if figures is not None else ""
    return "\n".join(legend + [RATIO_LEGEND, tables.render(headers, rows)] + (["", extra, ""] if extra else [])
                     + (["", judged, ""] if judged else []) + ["status: " + "; ".join(status)])


def plots(runs, outdir, axes=None, figure_makers=None):
    """One PNG per (metric, x parameter): a line per (run/profile, other params); then the
    experiments' own figures (`figure_makers`, {suite: maker}, from the registry)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = snapshots(runs)
    columns, _, series = collect(runs, axes)
    labels = dict(zip(columns, column_labels(columns)[0]))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for (metric, x_name, unit), lines in sorted(series.items()):
        if max(len({x for x, _ in pts}) for pts in lines.values()) < 2:
            continue  # a single point per line is a table row, not a plot
        fig, ax = plt.subplots(figsize=(7, 4))
        for (col, others), points in sorted(lines.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
            points.sort()
            label = labels[col] + ("" if not others else " " + format_params(dict(others)))
            by_x = OrderedDict()
            for x, y in points:
                by_x.setdefault(x, []).append(y)
            if x_name != SERIES_PARAM and any(len(ys) > 1 for ys in by_x.values()):
                # repeated trials: the mean and the 95% interval at each x
                xs = list(by_x)
                mids = [statistics.fmean(ys) for ys in by_x.values()]
                bands = [intervals.interval(ys)[2:] if len(ys) > 1 else (m, m) for ys, m in zip(by_x.values(), mids)]
                ax.errorbar(xs, mids, yerr=[[max(0.0, m - lo) for m, (lo, _) in zip(mids, bands)],
                                            [max(0.0, hi - m) for m, (_, hi) in zip(mids, bands)]],
                            marker="o", capsize=3, label=label + " (mean, 95% interval)")
                continue
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    marker="" if x_name == SERIES_PARAM else "o", label=label)
        ax.set_xlabel({"t": "time (s)", "rtt_ms": "RTT (ms)"}.get(x_name, x_name))
        ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
        ax.set_title(metric)
        ax.grid(True, alpha=0.3)
        if len(lines) <= 12:
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / f"{metric.replace('.', '_')}-vs-{x_name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written + experiment_figures(runs, outdir, figure_makers)


def report_path(path):
    """Where an HTML report asked for at `path` goes: there, unless that is inside a kept
    reference (a folder in git whose manifest names the run it was kept from), which reading
    must leave as it is: then results/reports/<experiment>-<key>/ under the same name."""
    path = Path(path)
    try:
        manifest = json.loads((path.parent / "manifest.json").read_text())
    except (OSError, ValueError):
        return path
    if not isinstance(manifest, dict) or not manifest.get("reference"):
        return path
    return run_folders.RESULTS_ROOT / "reports" / f"{manifest.get('suite')}-{path.parent.name}" / path.name


def render_html(runs, path, figures=None, title="testbed comparison", axes=None, figure_makers=None,
                table_makers=None):
    """The HTML report of `runs` (tables, plots, verdicts) written at `report_path(path)`;
    returns (the path written, [PNGs])."""
    runs = snapshots(runs)
    path = report_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pngs = plots(runs, path.parent / (path.stem + "-plots"), axes, figure_makers)
    extra = experiment_tables(runs, table_makers)
    headers, rows, legend = table(runs, figures)
    esc = html.escape
    parts = [f"<!doctype html><meta charset=utf-8><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}th{background:#eee}"
             "td.n{text-align:right}img{max-width:48%;margin:4px}</style>",
             f"<h1>{esc(title)}</h1>"]
    parts.append("<h2>Runs</h2><ul>")
    for r in runs:
        m = r.manifest
        parts.append(f"<li><b>{esc(r.label)}</b>: suite {esc(str(m.get('suite')))}, profiles "
                     f"{esc(', '.join(m.get('profiles', [])))}, scale {esc(str(m.get('scale')))}, "
                     f"{esc(str(m.get('accel')))}, status <b>{esc(str(m.get('status')))}</b>, "
                     f"git {esc(str(m.get('git_revision')))[:12]}</li>")
    parts.append("</ul>" + "".join(f"<p>{esc(line)}</p>" for line in legend if len(runs) > 1)
                 + f"<p>{esc(RATIO_LEGEND)}</p>")
    parts.append("<h2>Metrics</h2><table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>")
    parts.append("</table>")
    if figures is not None:
        for run, judged in verdicts(runs):
            vh, vrows = verdict.table(judged)
            parts.append(f"<h2>Does {esc(run.label)} reproduce the paper?</h2>"
                         f"<p>paper claims: {esc(verdict.tally(judged))}; {esc(verdict.INTERVAL_METHOD)}; "
                         f"{esc(verdict.HOLM_METHOD)}</p><table><tr>"
                         + "".join(f"<th>{esc(h)}</th>" for h in vh) + "</tr>")
            colour = {verdict.REPRODUCED: "#dfd", verdict.HOLDS: "#dfd", verdict.DIRECTION_ONLY: "#ffd",
                      verdict.CONTRADICTED: "#fdd", verdict.FAILS: "#fdd", verdict.OUT_OF_REACH: "#eee"}
            for row in vrows:
                bg = colour.get(row[1].replace(" (model)", ""), "#fff")
                parts.append(f"<tr style='background:{bg}'>" + "".join(f"<td>{esc(str(c))}</td>" for c in row)
                             + "</tr>")
            parts.append("</table><ul>" + "".join(f"<li>{esc(x.line())}</li>" for x in judged) + "</ul>")
    if extra:
        parts.append(f"<h2>Tables</h2><pre>{esc(extra)}</pre>")
    parts.append("<h2>Plots</h2>")
    for png in pngs:
        parts.append(f"<img src='{esc(png.parent.name)}/{esc(png.name)}' alt='{esc(png.stem)}'>")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("\n".join(parts) + "\n")
    tmp.replace(path)
    return path, pngs


def check_runs(refs, resolve):
    if not refs:
        raise ConfigError("compare", "RUN", "name at least one results folder (or `latest`)")
    return [resolve(ref) for ref in refs]
