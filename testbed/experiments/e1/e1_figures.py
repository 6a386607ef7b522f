"""E1's figures for its docs page: the latency sweep as the paper's Figure 2 draws it, a
line per profile and rate against the RTT, in the paper's colours (red: 2W, yellow: W, both
with Table 4's default values; green: W after the tuning), each point the mean over the
trials with its 95% t interval. Table 4's columns as they are on the left, the scale model
(`*-scaled`, docs/scaling.md) on the right.

The points are what robot/suites/e1_transfer_limits.robot records per latency point:
e1.efficiency_lost and e1.job_transfer_rate with params profile, rate (W, 2W, ...), rtt_ms
and trial. The registry entry in transfer.py names these as its doc_figures.
"""
from testbed.harness.registry import DocFigure
from testbed.results import figures as fig_lib

SCALED = "-scaled"
# the paper's Figure 2 colours: red is 2W, yellow W, green W after Table 4's tuning
COLOURS = {("table4-default", "2W"): "tab:red", ("table4-default", "W"): "goldenrod",
           ("table4-updated", "W"): "tab:green", ("table4-updated", "2W"): "tab:purple"}
OTHERS = ("tab:blue", "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan")


def _base(profile):
    return profile[:-len(SCALED)] if profile.endswith(SCALED) else profile


def sweep(records, metric):
    """{(profile, rate): [(rtt_ms, mean, lo, hi, n)] by RTT} of `metric` at the latency points."""
    def key(p):
        if "rtt_ms" not in p or "rate" not in p:
            return None
        return str(p.get("profile", "default")), str(p["rate"]), float(p["rtt_ms"])
    lines = {}
    for (profile, rate, rtt), point in sorted(fig_lib.trial_means(records, metric, key).items()):
        lines.setdefault((profile, rate), []).append((rtt,) + point)
    return lines


def _rate_order(rate):
    factor = rate[:-1] or "1"
    return (float(factor) if factor.replace(".", "", 1).isdigit() else 0.0, rate)


def sweep_figure(records, metric, ylabel, title):
    """Two panels (Table 4 as it is, the scale model), a line per profile and rate against
    the RTT; None without latency points."""
    lines = sweep(records, metric)
    if not lines:
        return None
    plt = fig_lib.pyplot()
    panels = [(False, "Table 4's columns as the paper's"), (True, "scale model (Table 4 scaled to this site)")]
    panels = [(scaled, name) for scaled, name in panels if any(p.endswith(SCALED) == scaled for p, _ in lines)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 0.6, 4.0), squeeze=False)
    others = iter(OTHERS)
    colours = {}
    for ax, (scaled, name) in zip(axes[0], panels):
        mine = sorted(((p, r) for p, r in lines if p.endswith(SCALED) == scaled),
                      key=lambda pr: (_base(pr[0]), _rate_order(pr[1])))
        # the lines' points at one RTT are set a little apart, or their intervals would hide each other
        span = max((p[0] for pr in mine for p in lines[pr]), default=0.0) or 1.0
        dodge = {pr: (i - (len(mine) - 1) / 2) * span * 0.018 for i, pr in enumerate(mine)}
        for profile, rate in mine:
            base = (_base(profile), rate)
            if base not in colours:
                colours[base] = COLOURS.get(base) or next(others, "black")
            pts = lines[(profile, rate)]
            several = any(n > 1 for *_x, n in pts)
            ax.errorbar([p[0] + dodge[(profile, rate)] for p in pts], [p[1] for p in pts],
                        yerr=fig_lib.error_bars([p[1:] for p in pts]) if several else None,
                        color=colours[base], marker="o", capsize=4, linewidth=1.6,
                        label=f"{profile}, {rate}")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("RTT submit <-> workers (ms)")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc="best")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def efficiency_lost(records):
    return sweep_figure(records, "e1.efficiency_lost",
                        "efficiency lost (ratio: slot time in\ntransfers / compute time)",
                        "E1 efficiency lost vs latency (the paper's Figure 2)")


def transfer_rate(records):
    return sweep_figure(records, "e1.job_transfer_rate", "output transfer rate per job (MB/s)",
                        "E1 per-job output transfer rate vs latency (Figure 2's sweep)")


DOC_FIGURES = (
    DocFigure("efficiency-lost", "E1 efficiency lost against the RTT, a line per profile and rate",
              "CPU efficiency lost (the slot's wall time in transfers over its compute time) against the RTT "
              "between the submit host and the workers, as the paper's Figure 2: red 2W and yellow W with "
              "Table 4's default values, green W after its tuning; the right panel is the scale model "
              "(Table 4's buffers scaled to this site's rate); points at one RTT are set a little apart.",
              draw=efficiency_lost),
    DocFigure("transfer-rate", "E1 output transfer rate per job against the RTT, a line per profile and rate",
              "The rate at which each job's output came back to the submit host at the same points (the "
              "transfer side of Figure 2's loss).", draw=transfer_rate),
)
