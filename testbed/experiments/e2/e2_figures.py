"""E2's figures for its docs page, what the paper's claims are about: the RAID 6 write rate
of 10 writers at the default stripe cache (256 pages) and at 32768 (the paper's Figures 4
and 5), and the reads through the XRootD cache against the direct reads (Figures 1-3 and
6(a)), each point or bar the mean over the trials with its 95% t interval.

The points are what robot/suites/e2_site_in_a_box.robot records: e2.raid_write_rate
(stripe_cache_size, spindles, writers), e2.uncached_rate (clients), e2.first_read_rate and
e2.repeat_read_rate (clients, stripe_cache_size, spindles). The registry entry in e2_site
names these as its doc_figures.
"""
from testbed.harness.registry import DocFigure
from testbed.results import figures as fig_lib

SPINDLES = (("emulated", "spindles emulated\n(members throttled)"), ("off", "spindles off\n(limits lifted)"))
CACHE_COLOURS = {256: "tab:orange", 32768: "tab:blue"}
PAPER_WRITES = "paper (12 disks, 10 writers): ~60 MB/s at 256 pages, ~700 MB/s at 32768"


def _int(value):
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


def _bar(ax, x, point, colour, label=None, hatch=None):
    mean, lo, hi, n = point
    ax.bar(x, mean, width=0.36, color=colour, label=label, hatch=hatch, edgecolor="black", linewidth=0.6,
           yerr=fig_lib.error_bars([point]) if n > 1 else None, capsize=5)
    ax.annotate(fig_lib.number(mean), (x, hi if n > 1 else mean), xytext=(0, 3), textcoords="offset points",
                ha="center", va="bottom", fontsize=8)


def raid_writes(records):
    """Bars: the write rate of the writers per stripe cache size, spindles emulated and off;
    None without e2.raid_write_rate."""
    def key(p):
        cache = _int(p.get("stripe_cache_size"))
        return (str(p.get("spindles", "emulated")), cache) if cache is not None else None
    found = fig_lib.trial_means(records, "e2.raid_write_rate", key)
    if not found:
        return None
    writers = sorted({_int(r["params"].get("writers")) for r in records
                      if r["name"] == "e2.raid_write_rate" and _int(r["params"].get("writers")) is not None})
    plt = fig_lib.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    groups = [(s, label) for s, label in SPINDLES if any(k[0] == s for k in found)]
    caches = sorted({c for _s, c in found})
    for i, (spindles, _label) in enumerate(groups):
        for j, cache in enumerate(caches):
            if (spindles, cache) in found:
                _bar(ax, i + (j - (len(caches) - 1) / 2) * 0.38, found[(spindles, cache)],
                     CACHE_COLOURS.get(cache, f"C{j}"), label=f"stripe_cache_size {cache}" if i == 0 else None)
    ax.set_xticks(range(len(groups)), labels=[label for _s, label in groups])
    ax.set_ylabel("RAID 6 write rate, all writers (MB/s)")
    ax.set_ylim(0, max(hi for _m, _lo, hi, _n in found.values()) * 1.25)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    who = f"{'/'.join(map(str, writers))} writers" if writers else "the writers"
    ax.set_title(f"E2 RAID 6 writes, {who}: stripe cache 256 vs 32768\n(the paper's Figures 4 and 5)",
                 fontsize=10)
    fig.text(0.01, 0.01, PAPER_WRITES, fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def cache_reads(records):
    """Left: the direct reads (no cache) against the clients; right: at the largest client
    count the cache's first (miss) and repeat (hit) reads per stripe cache size beside the
    direct rate. None without e2.uncached_rate or the cache's reads."""
    direct = fig_lib.trial_means(records, "e2.uncached_rate", lambda p: _int(p.get("clients")))
    direct.pop(None, None)

    def cached_key(p):
        if str(p.get("spindles", "emulated")) != "emulated":
            return None
        return _int(p.get("clients")), _int(p.get("stripe_cache_size"))
    first = fig_lib.trial_means(records, "e2.first_read_rate", cached_key)
    repeat = fig_lib.trial_means(records, "e2.repeat_read_rate", cached_key)
    if not direct and not first:
        return None
    plt = fig_lib.pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.4, 4.2), gridspec_kw={"width_ratios": [1, 1.2]})
    if direct:
        xs = sorted(direct)
        pts = [direct[x] for x in xs]
        left.errorbar(xs, [p[0] for p in pts], yerr=fig_lib.error_bars(pts), color="black", marker="o",
                      capsize=4, label="direct (no cache)")
        left.set_xticks(xs)
    left.set_xlabel("parallel clients")
    left.set_ylabel("read rate, all clients (MB/s)")
    left.set_ylim(bottom=0)
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    left.set_title("direct reads (the paper's Figures 1 and 2)", fontsize=10)
    clients = max((c for c, _s in first), default=None)
    caches = sorted({s for c, s in first if c == clients})
    for j, cache in enumerate(caches):
        for i, (rounds, hatch) in enumerate(((first, None), (repeat, "//"))):
            if (clients, cache) in rounds:
                _bar(right, j + (i - 0.5) * 0.38, rounds[(clients, cache)], CACHE_COLOURS.get(cache, f"C{j}"),
                     hatch=hatch)
    if clients in direct:
        mean, lo, hi, n = direct[clients]
        right.axhline(mean, color="black", linestyle="--", linewidth=1.2)
        if n > 1:
            right.axhspan(lo, hi, color="black", alpha=0.08, linewidth=0)
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    right.legend(handles=[Patch(facecolor="white", edgecolor="black", label="first read (cache miss)"),
                          Patch(facecolor="white", edgecolor="black", hatch="//", label="repeat read (cache hit)"),
                          Line2D([], [], color="black", linestyle="--",
                                 label=f"direct at {clients} clients (band: its 95% interval)")],
                 fontsize=8, loc="upper left")
    right.set_xticks(range(len(caches)), labels=[f"stripe_cache_size {c}" for c in caches])
    right.set_ylabel("read rate, all clients (MB/s)")
    tops = [p[2] for p in list(first.values()) + list(repeat.values())] + \
        ([direct[clients][2]] if clients in direct else [])
    right.set_ylim(0, max(tops, default=1.0) * 1.35)
    right.grid(True, axis="y", alpha=0.3)
    right.set_title(f"through the XRootD cache, {clients} clients, spindles emulated\n"
                    "(the paper's Figures 3 and 6(a))", fontsize=10)
    fig.suptitle("E2 reads: the XRootD cache vs direct", fontsize=11)
    fig.tight_layout()
    return fig


DOC_FIGURES = (
    DocFigure("raid-writes", "E2 RAID 6 write rate of 10 writers at stripe cache 256 and 32768, spindles "
              "emulated and off",
              "The RAID 6 array's write rate with 10 writers at the default stripe cache (256 pages) and at "
              "32768, as the paper's Figures 4 and 5 (60 against 700 MB/s); spindles emulated is the "
              "condition the claim reads, spindles off lifts the members' limits.", draw=raid_writes),
    DocFigure("cache-reads", "E2 read rates: direct against the clients, and through the XRootD cache, first "
              "and repeat reads per stripe cache",
              "Reads of the origin's files: directly, against the parallel clients (the paper's Figures 1 and 2), "
              "and through the DTN's XRootD cache at the largest client count, the first read (every block a "
              "miss) and the repeat read (hits) per stripe cache size, beside the direct rate (Figures 3 and "
              "6(a)).", draw=cache_reads),
)
