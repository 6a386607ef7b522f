"""E3's own figures and tables: the storage-site x computing-site matrix of the analysis
jobs (the paper's per-cell tables; the diagonal is local reading), one heatmap per metric
per read-ahead cache size per run/profile, each cell with its value and its RTT, and the
same matrices as text tables.

The matrix cells are what robot/suites/e3_fax_wan_reads.robot records per cell:
e3.events_per_s, e3.cpu_eff, e3.mb_per_s with params storage, compute, rtt_ms, cache_mb,
reader (root or uproot; records without one are uproot's) and, for ROOT, learn_entries
(the matrix is read with ROOT's default; the learning rows are not matrix cells);
e3.rtt_measured (storage, compute, rtt_ms) gives the measured RTT of a cell when present.
One matrix per reader and cache size.

`compare` calls `figures(columns, outdir)` and `text(columns)` (the registry entry in
fax.py names them) with `columns`: {column label (run/profile): [metric records]}.
DOC_FIGURES are the heatmaps its docs page shows (`testbed report docs`).
"""
from collections import OrderedDict, defaultdict
from pathlib import Path

from testbed.harness.registry import DocFigure

# (metric, what it is, unit shown, colour bar label)
MATRIX_METRICS = (
    ("e3.events_per_s", "events/s per job", "events/s", "events/s per job"),
    ("e3.cpu_eff", "CPU efficiency", "CPU time / wall time", "CPU efficiency (CPU time / wall time)"),
    ("e3.mb_per_s", "read rate per job", "MB/s", "read rate per job (MB/s)"),
)
MEASURED = "e3.rtt_measured"
CELL_PARAMS = ("storage", "compute", "cache_mb")


def _cache_key(value):
    value = float(value)
    return int(value) if value.is_integer() else value


DEFAULT_LEARN_ENTRIES = 100   # ROOT's TTreeCache default: the matrix's learning phase


def reader_of(rec):
    return rec.get("params", {}).get("reader", "uproot")


def readers(records):
    """The readers whose matrix cells are in `records`, in name order."""
    names = {m[0] for m in MATRIX_METRICS}
    return sorted({reader_of(r) for r in records if r["name"] in names
                   and all(k in r.get("params", {}) for k in CELL_PARAMS)})


def matrices(records, reader=None):
    """{cache_mb: matrix} from one column's records (of one reader, when given), caches in
    increasing order; learning rows (learn_entries other than ROOT's default) left out. A matrix
    is {"sites": [site, ...] (rows = storage, columns = compute, the same order so the
    diagonal is local), "values": {metric: {(storage, compute): mean}}, "rtt":
    {(storage, compute): set RTT ms}, "measured": {(storage, compute): mean measured RTT ms}}.
    Records without storage, compute and cache_mb are not matrix cells."""
    names = {m[0] for m in MATRIX_METRICS}
    sums = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    rtts = defaultdict(dict)
    measured = defaultdict(list)
    for rec in records:
        p = rec.get("params", {})
        if rec["name"] == MEASURED and "storage" in p and "compute" in p:
            measured[(str(p["storage"]), str(p["compute"]))].append(float(rec["value"]))
        if rec["name"] not in names or any(k not in p for k in CELL_PARAMS):
            continue
        if (reader is not None and reader_of(rec) != reader) or \
                float(p.get("learn_entries", DEFAULT_LEARN_ENTRIES)) != DEFAULT_LEARN_ENTRIES:
            continue
        cache, cell = _cache_key(p["cache_mb"]), (str(p["storage"]), str(p["compute"]))
        sums[cache][rec["name"]][cell].append(float(rec["value"]))
        if "rtt_ms" in p:
            rtts[cache][cell] = float(p["rtt_ms"])
    out = OrderedDict()
    for cache in sorted(sums):
        cells = {cell for values in sums[cache].values() for cell in values}
        sites = sorted({s for cell in cells for s in cell})
        out[cache] = {
            "sites": sites,
            "values": {metric: {cell: sum(v) / len(v) for cell, v in by_cell.items()}
                       for metric, by_cell in sums[cache].items()},
            "rtt": dict(rtts[cache]),
            "measured": {cell: sum(v) / len(v) for cell, v in measured.items()
                         if cell[0] in sites and cell[1] in sites},
        }
    return out


def by_reader_and_cache(records):
    """[(reader, cache_mb, matrix)] of one column's records."""
    return [(reader, cache, m) for reader in readers(records) for cache, m in matrices(records, reader).items()]


def _ms(v):
    return f"{v:.0f}" if float(v).is_integer() or abs(v) >= 10 else f"{v:.1f}"


def rtt_label(matrix, storage, compute):
    """A cell's second line: `local` on the diagonal, else `20 ms`; `(meas. 22.7)` added
    when the RTT was measured."""
    cell = (storage, compute)
    rtt = matrix["rtt"].get(cell)
    label = "local" if storage == compute else (f"{_ms(rtt)} ms" if rtt is not None else "? ms")
    if cell in matrix["measured"]:
        label += f"\n(meas. {_ms(matrix['measured'][cell])} ms)"
    return label


def grid(matrix, metric):
    """(rows of values (None where missing), rows of cell texts (value, RTT line)),
    storage x compute."""
    from testbed.results.figures import number
    sites, values = matrix["sites"], matrix["values"].get(metric, {})
    data = [[values.get((s, c)) for c in sites] for s in sites]
    texts = [[(number(values.get((s, c))), rtt_label(matrix, s, c)) for c in sites] for s in sites]
    return data, texts


def text(columns):
    """The matrices as text tables: per column, reader and cache size, one table per metric
    (rows storage site, columns computing site, `*` marks local reading) and one of RTTs."""
    from testbed.model import tables
    from testbed.results.figures import number
    out = []
    for label, records in columns.items():
        for reader, cache, m in by_reader_and_cache(records):
            sites = m["sites"]
            out.append(f"\nE3 matrix {label}, reader {reader}, read-ahead cache {cache} MB "
                       f"(rows: storage site, columns: computing site, * = local)")
            headers = ["storage \\ compute"] + sites
            align = ["<"] + [">"] * len(sites)
            for metric, what, unit, _ in MATRIX_METRICS:
                if metric not in m["values"]:
                    continue
                vals = m["values"][metric]
                rows = [[s] + [("*" if s == c else "") + number(vals.get((s, c))) for c in sites] for s in sites]
                out += [f"{what} ({unit}), {metric}:", tables.render(headers, rows, align), ""]
            has_measured = bool(m["measured"])
            rows = [[s] + [("*" if s == c else "") + (_ms(m["rtt"][(s, c)]) if (s, c) in m["rtt"] else "-")
                           + (f" ({_ms(m['measured'][(s, c)])})" if (s, c) in m["measured"] else "")
                           for c in sites] for s in sites]
            out += ["RTT (ms)" + (", measured in brackets" if has_measured else "") + ":",
                    tables.render(headers, rows, align), ""]
    return "\n".join(out).strip()


def colour_scales(all_matrices):
    """{metric: {"vmin", "vmax"}}: one colour scale per metric over every column and cache
    size, so the same colour is the same value in every heatmap of a report; CPU efficiency
    from 0 to 1 (or its largest value)."""
    scales = {}
    for metric, *_ in MATRIX_METRICS:
        vals = [v for m in all_matrices for v in m["values"].get(metric, {}).values()]
        if not vals:
            continue
        scales[metric] = {"vmin": 0.0, "vmax": max([1.0] + vals)} if metric == "e3.cpu_eff" else \
            {"vmin": min(vals), "vmax": max(vals)}
    return scales


def figures(columns, outdir):
    """One heatmap PNG per (column, reader, cache size, metric) in `outdir`; returns their paths."""
    from testbed.results import figures as fig_lib
    plt = fig_lib.pyplot()
    outdir = Path(outdir)
    written = []
    several = len(columns) > 1
    shaped = [(label, by_reader_and_cache(records)) for label, records in columns.items()]
    scales = colour_scales([m for _, found in shaped for _, _, m in found])
    for label, found in shaped:
        for reader, cache, m in found:
            sites = m["sites"]
            for metric, what, unit, bar in MATRIX_METRICS:
                if metric not in m["values"]:
                    continue
                data, texts = grid(m, metric)
                side = 1.6 + 1.45 * len(sites)
                fig, ax = plt.subplots(figsize=(side + 1.8, side + 0.6))
                fig_lib.annotated_heatmap(ax, data, sites, sites, texts, colorbar=bar,
                                          outline=[(i, i) for i in range(len(sites))],
                                          **scales[metric])
                ax.set_xlabel("computing site (where the job runs)")
                ax.set_ylabel("storage site (where the file is)")
                ax.set_title(f"E3 {what}, {reader}, read-ahead cache {cache} MB - run/profile {label}\n"
                             f"(the slides' storage x compute site tables); framed: local reading; "
                             f"under each value: the cell's RTT", fontsize=9)
                fig.tight_layout()
                name = f"e3-matrix-{metric.split('.', 1)[1]}-{reader}-cache{cache}MB" + \
                       (f"-{fig_lib.slug(label)}" if several else "") + ".png"
                written.append(fig_lib.save(fig, outdir / name))
    return written


# The docs page's heatmaps: ROOT's reader with the slides' 10 MB TTreeCache (where the matrix
# claims read), its events/s and CPU efficiency, and events/s with the 30 MB cache beside it
# (the cache claim compares the two). A trailing `*`: with several columns the maker adds the label.
_CELLS = "each cell is the mean over the trials' jobs (no interval drawn)"
DOC_FIGURES = (
    DocFigure("events-per-s-root-10mb", "E3 heatmap: events per second per job, storage site x computing site, "
              "ROOT reader, 10 MB cache",
              "Events per second per job in each storage site x computing site cell, ROOT's reader with the "
              "slides' 10 MB TTreeCache, as the slides' per-cell Events/s tables; the framed diagonal is "
              "local reading, under each value the cell's set (and measured) RTT.",
              pick="e3-matrix-events_per_s-root-cache10MB*.png", points=_CELLS),
    DocFigure("cpu-eff-root-10mb", "E3 heatmap: CPU efficiency per job, storage site x computing site, ROOT reader, "
              "10 MB cache",
              "CPU efficiency (CPU time over wall time) of the same cells, against the slides' 58% from a "
              "local disk.", pick="e3-matrix-cpu_eff-root-cache10MB*.png", points=_CELLS),
    DocFigure("events-per-s-root-30mb", "E3 heatmap: events per second per job, storage site x computing site, "
              "ROOT reader, 30 MB cache",
              "Events per second per job with a 30 MB TTreeCache, beside the 10 MB matrix: the slides name a "
              "suboptimal TTreeCache size as a cause of the off-diagonal loss.",
              pick="e3-matrix-events_per_s-root-cache30MB*.png", points=_CELLS),
)
