"""Drawing helpers shared by the experiments' own figures (testbed/experiments/*_figures.py):
matplotlib on the Agg backend, imported only when a figure is drawn; an annotated
heatmap; file names from labels; saving.

What to draw is each experiment's knowledge; an experiment declares its figure maker in
its registry entry (Experiment.figures) and `compare` calls it with the runs' records.
"""
import math
import re
from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display), imported on first use."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def slug(text):
    """A file-name part from a label: `A:default` -> `A-default`."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", str(text)).strip("-") or "run"


def number(v):
    """A cell's number, short: 537, 43.9, 0.866, 0.0859."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _text_colour(rgba):
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def annotated_heatmap(ax, values, rows, cols, texts=None, cmap="viridis", colorbar=None,
                      outline=(), vmin=None, vmax=None):
    """Draw `values` (a list of rows, None for a missing cell) on `ax`, one row per `rows`
    label (top to bottom) and one column per `cols` label, with each cell's text (`texts`,
    the same shape; default: the number) in a colour readable on the cell. `outline`:
    (row, col) indexes framed in black (e.g. the diagonal). `colorbar`: its label, or None
    for no colour bar. Returns the image."""
    import numpy as np
    plt = pyplot()
    data = np.array([[math.nan if v is None else float(v) for v in row] for row in values], dtype=float)
    finite = data[np.isfinite(data)]
    if vmin is None:
        vmin = float(finite.min()) if finite.size else 0.0
    if vmax is None:
        vmax = float(finite.max()) if finite.size else 1.0
    if vmax <= vmin:
        vmax = vmin + (abs(vmin) or 1.0)
    colours = plt.get_cmap(cmap).with_extremes(bad="#dddddd")  # a missing cell: grey
    image = ax.imshow(np.ma.masked_invalid(data), cmap=colours, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), labels=[str(c) for c in cols])
    ax.set_yticks(range(len(rows)), labels=[str(r) for r in rows])
    ax.set_xticks([x - 0.5 for x in range(1, len(cols))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(rows))], minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    n = max(len(rows), len(cols))
    size = 13 if n <= 3 else 11 if n <= 5 else 8
    for i in range(len(rows)):
        for j in range(len(cols)):
            v = data[i, j]
            text = texts[i][j] if texts is not None else number(v)
            colour = "black" if not math.isfinite(v) else _text_colour(image.cmap(image.norm(v)))
            main, sub = (text, "") if isinstance(text, str) else text
            ax.text(j, i - (0.1 if sub else 0), main, ha="center", va="center", color=colour,
                    fontsize=size, fontweight="bold")
            if sub:
                ax.text(j, i + 0.1, sub, ha="center", va="top", color=colour, fontsize=size - 3,
                        linespacing=1.3)
    for i, j in outline:
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black",
                                   linewidth=2.5, zorder=5, clip_on=False))
    if colorbar is not None:
        ax.figure.colorbar(image, ax=ax, label=colorbar)
    return image


def save(fig, path, dpi=110):
    """Write `fig` to `path` (folders made), close it, return the path. No Software entry
    in the PNG: the same figure gives the same bytes whatever matplotlib wrote it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    pyplot().close(fig)
    return path


def trial_means(records, name, key):
    """{key(params): (mean, lo, hi, n)} of metric `name`: each trial's mean first (a trial may
    record a point twice), then the mean over the trials with its 95% t interval (lo = hi =
    mean for one trial). `key` maps a record's params to its point, None to leave it out."""
    from collections import defaultdict
    from testbed.results import intervals
    per_trial = defaultdict(lambda: defaultdict(list))
    for rec in records:
        if rec["name"] != name:
            continue
        params = rec.get("params", {})
        point = key(params)
        if point is not None:
            per_trial[point][params.get("trial", 1)].append(float(rec["value"]))
    out = {}
    for point, trials in per_trial.items():
        means = [sum(v) / len(v) for _t, v in sorted(trials.items())]
        mean, _median, lo, hi = intervals.interval(means)
        out[point] = (mean, lo, hi, len(means))
    return out


def error_bars(points):
    """[below, above] for matplotlib's yerr from [(mean, lo, hi, n)]."""
    return [[max(0.0, m - lo) for m, lo, _hi, _n in points], [max(0.0, hi - m) for m, _lo, hi, _n in points]]
