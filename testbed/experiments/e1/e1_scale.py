"""E1's scale model (docs/scaling.md): the factor k from the run's saturation test, the
scaled Table 4 profiles made from it, the demand of a scaled row, and the dimensionless
number the model keeps.

The paper's site moved 555 MB/s of job output (Table 3's expected rate) through 10
concurrent transfers, each stream limited by its TCP window over the RTT. Under TCG
HTCondor moves a few MB/s in all, so Table 4's windows never bind here. The scale model
keeps the RTTs and multiplies every bandwidth-like quantity by

    k = (HTCondor's rate in this run's saturation test) / (the paper's 555 MB/s)

- the socket buffer limits of both Table 4 columns (model/scaled_profiles.py) and the
sweep's demand (the paper's W = 55 MB/s and 2W become k x 55 and k x 110) - so that

    R = concurrency x window / RTT / demand

(concurrency: the transfers HTCondor runs at once, MAX_CONCURRENT_DOWNLOADS and at most the
point's jobs; window: the smaller of the sender's tcp_wmem and the receiver's tcp_rmem
maximum; demand: the point's W) is the paper's at every RTT, up to the ratio of the two
concurrencies. R above 1 means the windows carry the demand; its inverse is about the
share of a job's compute time its output spends in flight when the windows bind.
"""
import statistics

from testbed import PROJECT_ROOT
from testbed.experiments.e1 import jobs as e1_jobs
from testbed.model import profiles, scaled_profiles, tables
from testbed.results import compare

# the paper's two columns of Table 4: the profiles a paper's R is computed for
PAPER_COLUMNS = ("table4-default", "table4-updated")
MB = 1e6   # the paper's MB (90 MB = 30k events x 3 kB); window / RTT in the same unit
RATIO_METRIC = "e1.window_capacity_over_demand"


def paper_figure(metric, params=None, path=None):
    """A number of the paper's figures (E1's paper file), e.g. e1.expected_rate -> 555."""
    path = path or PROJECT_ROOT / e1_jobs.PAPER
    fig = compare.paper_match(compare.load_paper(path), metric, params or {})
    if fig is None or fig["value"] is None:
        raise ValueError(f"{path} gives no number for {metric} {params or ''}".rstrip())
    return fig["value"]


def paper_saturation_rate(path=None):
    """The paper's saturation rate k divides by: Table 3's expected throughput (MB/s)."""
    return paper_figure("e1.expected_rate", path=path)


def paper_demand(factor, path=None):
    """The paper's sweep demand at rate factor x W (MB/s): W is equation 1's 55 MB/s."""
    return float(factor) * paper_figure("e1.sweep_demand", {"rate": "W"}, path)


def scale_factor(achieved_mbs, paper_mbs):
    """k = this site's HTCondor rate over the paper's, to scaled_profiles.SIGNIFICANT digits."""
    if not achieved_mbs or achieved_mbs <= 0 or not paper_mbs or paper_mbs <= 0:
        raise ValueError(f"k needs two positive rates, got {achieved_mbs!r} and {paper_mbs!r}")
    return scaled_profiles.round_k(achieved_mbs / paper_mbs)


def _field_max(value):
    return int(str(value).split()[-1])


def stream_window(profile):
    """Bytes one output transfer (worker -> submit host) may have in flight: the smaller of
    the sender's tcp_wmem and the receiver's tcp_rmem maximum (HTCondor sets no socket
    buffer of its own on transfer sockets, so the kernel's autotuning caps apply)."""
    sender = profile.for_host(["worker"], "sysctl").get("net.ipv4.tcp_wmem")
    receiver = profile.for_host(["submit"], "sysctl").get("net.ipv4.tcp_rmem")
    if sender is None or receiver is None:
        raise ValueError(f"profile {profile.name} sets no tcp_wmem (workers) or tcp_rmem (submit host)")
    return min(_field_max(sender), _field_max(receiver))


def transfer_concurrency(profile):
    """The output transfers the submit host runs at once (MAX_CONCURRENT_DOWNLOADS; None:
    no limit, HTCondor's 0)."""
    value = int(profile.for_host(["submit"], "condor").get("MAX_CONCURRENT_DOWNLOADS", 0))
    return value or None


def window_over_demand(concurrency, window_bytes, rtt_ms, demand_mbs):
    """R = concurrency x window / RTT over the demand (both MB/s); None where the RTT or the
    demand is 0 (a window over no RTT limits nothing)."""
    if rtt_ms is None or float(rtt_ms) <= 0 or not demand_mbs or demand_mbs <= 0:
        return None
    return concurrency * window_bytes / (float(rtt_ms) / 1000) / MB / demand_mbs


def point_ratio(profile, rtt_ms, demand_mbs, jobs):
    """This site's R at one point: at most `jobs` transfers at once."""
    limit = transfer_concurrency(profile)
    return window_over_demand(min(limit, jobs) if limit else jobs, stream_window(profile), rtt_ms, demand_mbs)


def paper_ratio(profile_name, factor, rtt_ms, path=None):
    """The paper's R for the Table 4 column a profile is (or scales), at rate factor x W and
    an RTT: its concurrency (the paper ran thousands of jobs, so the limit binds) and windows,
    the paper's demand. None for a profile that is not one of the paper's columns."""
    base = scaled_profiles.base_name(profile_name) or profile_name
    if base not in PAPER_COLUMNS:
        return None
    column = profiles.load(base)
    return window_over_demand(transfer_concurrency(column), stream_window(column), rtt_ms,
                              paper_demand(factor, path))


def sweep_base_rate(profile, sweep_load, htcondor_rate, path=None):
    """A point's W (MB/s) before its rate factor: a scaled profile's is k x the paper's W,
    any other's sweep_load x HTCondor's saturation rate."""
    if profile is not None and profile.derived:
        return profile.derived["k"] * paper_demand(1, path)
    return float(sweep_load) * float(htcondor_rate)


def point_size(profile, factor, sweep_load, htcondor_rate, n_jobs, length_s, cap_mb, path=None):
    """A point's output per job (E1's MB, 2^20 bytes, in tenths): sized for rate factor x
    `sweep_base_rate`; a scaled point's demand is in the paper's MB (10^6 bytes), converted."""
    rate = float(factor) * sweep_base_rate(profile, sweep_load, htcondor_rate, path)
    if profile is not None and profile.derived:
        rate *= MB / e1_jobs.output_bytes(1)
    return e1_jobs.size_for_rate(rate, n_jobs, length_s, cap_mb)


def point_demand(n_jobs, size_mb, length_s):
    """The demand a point's jobs make (MB/s, the paper's MB) as sized: n x output bytes / l."""
    return n_jobs * e1_jobs.output_bytes(size_mb) / MB / length_s


def scaled_columns(names, k):
    """{name: scaled profile} for every `<base>-scaled` among `names`."""
    return {n: scaled_profiles.scaled(profiles.load(scaled_profiles.base_name(n)), k)
            for n in names if scaled_profiles.base_name(n)}


def rate_to_size_from(set_value, first_trial, measured, name):
    """(MB/s, where it came from): the rate a run sizes its points (or takes k) from. A
    value given with `--set name=...` (an earlier run's, so that its trials and this run's
    have the same sizes), else trial 1's measurement (so every trial of a repeated run is
    sized alike), else this trial's."""
    if set_value is not None:
        return float(set_value), f"--set {name}"
    if first_trial is not None:
        return float(first_trial), "trial 1's saturation test"
    return float(measured), "this trial's saturation test"


# the --set values that fix a run's sizes and k, and the trial-1 records they default to
SIZING_METRICS = {"sizing_rate_mb_s": "e1.sustained_rx_rate", "scale_rate_mb_s": "e1.achieved_rate"}


def sizing_sets(parameters, records):
    """{name: "MB/s"}: the `--set` values with which another run sizes its points and takes
    its k as the run of `parameters` (its manifest's experiment_parameters) and `records`
    did: the values it was given, else its trial 1's saturation rates. Only those found."""
    out = {}
    for name, metric in SIZING_METRICS.items():
        value = (parameters or {}).get(name)
        if value is None:
            found = [r for r in records if r.get("name") == metric and r.get("params", {}).get("trial", 1) == 1]
            value = found[-1]["value"] if found else None
        if value is not None:
            out[name] = repr(float(value))
    return out


def manifest_entry(k, achieved_mbs, paper_mbs, made, factors, source="trial 1's saturation test", path=None):
    """The manifest's `scale_model`: k and what it came from, the scaled demand, and every
    value each scaled profile changed or kept."""
    return {"k": k, "achieved_mb_s": achieved_mbs, "paper_mb_s": paper_mbs, "k_from": source,
            "rule": "k = HTCondor's achieved rate in the saturation test / the paper's expected rate (Table 3)",
            "sweep_demand_mb_s": {e1_jobs.rate_label(f): k * paper_demand(f, path) for f in factors},
            "profiles": {name: {"spec": prof.spec, "base": prof.derived["base"],
                                "sysctl": scaled_profiles.changes(profiles.load(prof.derived["base"]), k)}
                         for name, prof in made.items()}}


def describe(entry):
    """Lines for the console: k and each scaled profile's changed values."""
    lines = [f"  scale model: k = {entry['achieved_mb_s']:.2f} MB/s / {entry['paper_mb_s']:g} MB/s = "
             f"{entry['k']:g} ({entry['k_from']}); demand "
             + ", ".join(f"{r} = {v:.3g} MB/s" for r, v in entry["sweep_demand_mb_s"].items())]
    for name, made in entry["profiles"].items():
        changed = [f"{c['key']} ({c['role']}) {c['value']} -> {c['scaled']}" for c in made["sysctl"]
                   if c["rule"] != "kept"]
        lines.append(f"  {name} = {made['spec']}: " + "; ".join(changed))
    return lines


def plan_rows(named, rtts, factors, jobs, length_s, cap_mb, sweep_load, htcondor_rate, path=None):
    """[[profile, rate, RTT, paper R, this site's R]] at the configured RTTs, for every
    profile in `named` ({name: Profile}) as the run will size its points."""
    rows = []
    for name, prof in named.items():
        for f in factors:
            size = point_size(prof, f, sweep_load, htcondor_rate, jobs, length_s, cap_mb, path)
            demand = point_demand(jobs, size, length_s)
            for rtt in (r for r in rtts if float(r) > 0):
                paper = paper_ratio(name, f, rtt, path)
                rows.append([name, e1_jobs.rate_label(f), f"{float(rtt):g}", ratio_text(paper),
                             ratio_text(point_ratio(prof, rtt, demand, jobs))])
    return rows


RATIO_HEADERS = ["profile", "rate", "RTT ms", "paper R", "this site R"]


def ratio_text(value):
    return "-" if value is None else f"{value:.3g}"


def tables_text(columns):
    """compare's E1 table: per column, rate and RTT, the paper's R beside this site's (the
    median over the trials of the recorded e1.window_capacity_over_demand), and k."""
    rows, ks = [], []
    for label, records in columns.items():
        found = {}
        for r in records:
            p = r.get("params", {})
            if r["name"] == RATIO_METRIC:
                found.setdefault((p.get("profile"), p.get("rate"), float(p.get("rtt_ms", 0))), []).append(r["value"])
            elif r["name"] == "e1.scale_k":
                ks.append(r["value"])
        for (prof, rate, rtt), values in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            factor = float(str(rate).rstrip("W") or 1)   # 'W' -> 1, '2W' -> 2
            trials = f" ({len(values)} trials)" if len(values) > 1 else ""
            rows.append([label, rate, f"{rtt:g}", ratio_text(paper_ratio(prof or label, factor, rtt)),
                         ratio_text(statistics.median(values)) + trials])
    if not rows:
        return ""
    k = f"k = {statistics.median(ks):g}; " if ks else ""
    return (f"E1 scale model: R = concurrency x window / RTT / demand ({k}measured RTT here, "
            f"configured in the paper; docs/scaling.md)\n"
            + tables.render(RATIO_HEADERS, rows, ["<", "<", ">", ">", ">"]))
