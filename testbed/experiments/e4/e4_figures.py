"""E4's own figure: the idle tail. For each node, when each of its tasks finished (in
finish order) as a fraction of the node's time - the paper's first task at 15.5 h, 50th
at 17 h, last at 18 h - one line per node, one panel per layout, solid without and
dashed with the event-service back-fill, each panel annotated with the idle-tail
fractions (slots, cores).

The points are what robot/libraries/HpcLibrary.py records per layout run:
e4.task_finish_fraction (rank, node, layout, backfill) and e4.idle_tail_slots /
e4.idle_tail_cores (layout, backfill), the latter averaged over the nodes.

`compare` calls `figures(columns, outdir)` (the registry entry in hpc.py names it) with
`columns`: {column label (run/profile): [metric records]}. DOC_FIGURES is the idle tail its
docs page shows (`testbed report docs`).
"""
from collections import OrderedDict, defaultdict
from pathlib import Path

from testbed.harness.registry import DocFigure

FINISH = "e4.task_finish_fraction"
TAILS = {"e4.idle_tail_slots": "slots", "e4.idle_tail_cores": "cores"}
LAYOUT_ORDER = ("colocated", "dedicated")
STYLES = {0: ("-", "o", "without back-fill"), 1: ("--", "s", "with back-fill")}
PAPER_NOTE = ("paper (STAR on Cori, 60 tasks a node): 1st task ends at 15.5 h, 50th at 17 h, "
              "last at 18 h = 0.86, 0.94, 1.00 of the node's time to its last task (24 h requested)")


def _panel_order(key):
    layout, backfill = key
    return (LAYOUT_ORDER.index(layout) if layout in LAYOUT_ORDER else len(LAYOUT_ORDER), str(layout), backfill)


def _backfill(value):
    return int(str(value).lower() in ("1", "true", "yes", "1.0"))


def finish_series(records):
    """{(layout, backfill 0|1): {node: [(rank, fraction), ...] by rank}}, layouts in the
    paper's order (colocated, dedicated, then others), nodes in order. A (layout, backfill,
    node, rank) recorded twice is averaged."""
    points = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for rec in records:
        p = rec.get("params", {})
        if rec["name"] != FINISH or "rank" not in p:
            continue
        key = (str(p.get("layout", "?")), _backfill(p.get("backfill", 0)))
        points[key][p.get("node", 0)][int(p["rank"])].append(float(rec["value"]))
    out = OrderedDict()
    for key in sorted(points, key=_panel_order):
        nodes = points[key]
        out[key] = OrderedDict((node, [(rank, sum(v) / len(v)) for rank, v in sorted(nodes[node].items())])
                               for node in sorted(nodes, key=lambda n: (str(type(n)), n)))
    return out


def idle_tails(records):
    """{(layout, backfill): {"slots": fraction, "cores": fraction}} (means of repeats)."""
    sums = defaultdict(lambda: defaultdict(list))
    for rec in records:
        if rec["name"] in TAILS:
            p = rec.get("params", {})
            key = (str(p.get("layout", "?")), _backfill(p.get("backfill", 0)))
            sums[key][TAILS[rec["name"]]].append(float(rec["value"]))
    return {key: {kind: sum(v) / len(v) for kind, v in kinds.items()} for key, kinds in sums.items()}


def tail_note(tails, layout):
    """A panel's annotation: the idle-tail fractions without / with back-fill."""
    lines = ["idle tail, share of allocated time:"]
    for backfill, what in ((0, "no back-fill"), (1, "back-fill")):
        t = tails.get((layout, backfill))
        if not t:
            continue
        parts = [f"{kind} {100 * t[kind]:.1f} %" for kind in ("slots", "cores") if kind in t]
        lines.append(f"{what}: " + ", ".join(parts))
    return "\n".join(lines) if len(lines) > 1 else ""


def figures(columns, outdir):
    """One PNG per column: the idle tail, a panel per layout. Returns the paths written."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator
    from testbed.results import figures as fig_lib
    plt = fig_lib.pyplot()
    outdir = Path(outdir)
    written = []
    several = len(columns) > 1
    for label, records in columns.items():
        series = finish_series(records)
        if not series:
            continue
        tails = idle_tails(records)
        layouts = list(OrderedDict.fromkeys(layout for layout, _ in series))
        nodes = list(OrderedDict.fromkeys(n for lines in series.values() for n in lines))
        colours = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(nodes)}
        fig, axes = plt.subplots(1, len(layouts), figsize=(5.2 * len(layouts), 4.6), sharey=True,
                                 squeeze=False)
        lowest = min(f for lines in series.values() for pts in lines.values() for _, f in pts)
        for ax, layout in zip(axes[0], layouts):
            styles = []
            for backfill in (0, 1):
                lines = series.get((layout, backfill), {})
                if lines:
                    styles.append(Line2D([], [], color="black", linestyle=STYLES[backfill][0],
                                         marker=STYLES[backfill][1], label=STYLES[backfill][2]))
                for node, pts in lines.items():
                    ax.plot([r for r, _ in pts], [f for _, f in pts], color=colours[node],
                            linestyle=STYLES[backfill][0], marker=STYLES[backfill][1],
                            markersize=3 if len(pts) > 20 else 6, linewidth=1.4)
            ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
            ax.set_title(f"layout: {layout}", fontsize=10)
            ax.set_xlabel("task rank (finish order on its node)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            # the idle-tail fractions as the legend's title: "best" keeps it off the points
            legend = ax.legend(handles=styles, title=tail_note(tails, layout) or None, loc="best",
                               fontsize=8, title_fontsize=8, alignment="left", framealpha=0.9)
            legend.get_title().set_multialignment("left")
        axes[0][0].set_ylabel("task end, fraction of the node's time\n(start to its last task's end)")
        axes[0][0].set_ylim(max(0.0, lowest - 0.35 * (1.0 - lowest) - 0.02), 1.0 + 0.04 * (1.0 - lowest) + 0.005)
        if len(nodes) > 1:
            fig.legend(handles=[Line2D([], [], color=colours[n], linewidth=3, label=f"node {n}")
                                for n in nodes[:10]] + ([Line2D([], [], color="none", label="...")]
                                                       if len(nodes) > 10 else []),
                       loc="center right", fontsize=8, title="colour", title_fontsize=8)
        fig.suptitle(f"E4 idle tail: when each task finished on its node - {label}\n"
                     "(the paper's section 5.1, the idle CPU problem)", fontsize=11)
        fig.text(0.01, 0.01, PAPER_NOTE, fontsize=7, color="#555555")
        fig.tight_layout(rect=(0, 0.04, 0.9 if len(nodes) > 1 else 1, 1))
        name = "e4-idle-tail" + (f"-{fig_lib.slug(label)}" if several else "") + ".png"
        written.append(fig_lib.save(fig, outdir / name))
    return written


DOC_FIGURES = (
    DocFigure("idle-tail", "E4 idle tail: each task's end as a fraction of its node's time, by finish rank, "
              "one panel per layout",
              "When each task finished on its node, as a fraction of the node's time to its last task, a panel "
              "per database layout, solid without and dashed with the event-service back-fill, as the paper's "
              "idle CPU problem (section 5.1: 1st of 60 tasks at 15.5 h, 50th at 17 h, last at 18 h).",
              pick="e4-idle-tail*.png", points="each point is the mean over the trials (no interval drawn)"),
)
