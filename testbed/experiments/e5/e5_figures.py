"""E5's own text table: its headline figures, per run/profile column,
beside the paper's. The line plots (running jobs and startds over time, RSS per step,
negotiation per RTT) come from the generic plots; this is what a person reads first:

    ramp        running sleep jobs reached, the limit that stopped the ramp, the submit
                host's memory per running job
    failover    CM kill (standby negotiator, new match), collector kill, CCB outage,
                jobs restarted by each
    streams     long-lived TCP streams per worker before / after
    negotiation fastest cycle and request-list prefetch per protocol and RTT, the WAN
                cycle over the LAN one and the round trips the WAN added, per protocol

    collectors  startds per collector at each limit (LAN/WAN x one/two tiers) beside the
                paper's 2,000 / 200 / 1,000, memory per startd, the largest N per worker,
                connections on the CMs with CCB on the children or on its own hosts
    matchable   fastest cycle with jobs that match, at each RTT

`compare` calls `text(columns)` and `figures(columns, outdir)` (the registry entry in
e5_scale names them) with `columns`: {column label: [metric records]}; benchmarks/e5_scale.py
prints `text({run: records})` for a run. The figure is the collector ramps: startds every
CM listed against the startds the step ran, and the updates lost, one line per RTT and
collector tiers; DOC_FIGURES is that figure, shown on its docs page (`testbed report docs`).
"""
import statistics
from collections import defaultdict
from pathlib import Path

from testbed.experiments.e5.config import BATCHED, PER_REQUEST
from testbed.harness.registry import DocFigure
from testbed.model import tables
from testbed.results.expressions import Selector, Slope
from testbed.results.figures import number
from testbed.results.runs import last_value as last, matching

LISTED, LOST, LIMIT = "e5.collector_ramp_listed", "e5.collector_ramp_lost", "e5.collector_limit"
# the paper's startds per collector (seed 004, 4.1): LAN and WAN for one collector before the
# 8.3 fixes, and per child collector after them and the tuning
PAPER_LIMITS = {(0.0, 1): "2,000 (LAN)", (100.0, 1): "200 (WAN)", (0.0, 2): "-",
                (100.0, 2): "1,000 per child (after 8.3's fixes)"}


def last_param(records, name, key, **params):
    """Parameter `key` of the last record of `name` matching `params`, or None."""
    found = matching(records, name, **params)
    return found[-1].get("params", {}).get(key) if found else None


def submit_mb_per_job(records):
    """The drop of the submit guest's MemAvailable per running job across the ramp's steps
    (the least-squares slope; the median over the trials), or None without two steps."""
    slope = Slope(Selector("e5.guest_mem_available", {"host": "submit"}),
                  Selector("e5.ramp_running"), "step", -1.0)
    per_trial = list(slope.values(records).values())
    return statistics.median(per_trial) if per_trial else None


NEGOTIATION = ("e5.negotiation_cycle", "e5.negotiation_prefetch")
# the paper's figures per (protocol, RTT ms): its two times are one request per round trip,
# its 70% cut is batching (section 4.5)
PAPER_CYCLES = {(PER_REQUEST, 0.0): "30 s (1000 requests)", (PER_REQUEST, 100.0): "1153 s (1000 requests)",
                (BATCHED, 100.0): "346 s (1000 requests, 70% less)"}
PAPER_PER_PROTOCOL = {"e5.negotiation_wan_over_lan": {PER_REQUEST: "38.4", BATCHED: "11.5"},
                      "e5.negotiation_round_trips_per_request": {PER_REQUEST: "11.2", BATCHED: "3.2"}}


def protocol_of(record):
    """The negotiation protocol a record was measured in; records of runs before the
    protocol axis carry none, and those runs all ran the release's batched protocol."""
    return record.get("params", {}).get("protocol", BATCHED)


def _points(records):
    """[(protocol, rtt_ms)] of the unmatched negotiation points in the records, sorted."""
    return sorted({(protocol_of(r), float(r["params"]["rtt_ms"])) for r in records
                   if r["name"] in NEGOTIATION and "rtt_ms" in r.get("params", {})})


def _of(records, protocol):
    return [r for r in records if protocol_of(r) == protocol]


def negotiation_rows(records):
    """Per protocol and RTT the fastest cycle and request-list prefetch; per protocol the WAN
    cycle over the LAN one, the round trips the WAN added per request and to the fetch."""
    rows = []
    for protocol, rtt in _points(records):
        mine, ms = _of(records, protocol), f"{rtt:g}"
        requests = {r["params"].get("requests") for r in _at(mine, "e5.negotiation_cycle", rtt)}
        requests = "/".join(sorted(str(n) for n in requests if n is not None)) or "?"
        rows.append(("negotiation", f"fastest cycle at {ms} ms, {requests} requests, {protocol}",
                     _at_rtt(mine, "e5.negotiation_cycle", rtt), "s", PAPER_CYCLES.get((protocol, rtt), "-")))
        rows.append(("negotiation", f"request-list prefetch at {ms} ms, {protocol}",
                     _at_rtt(mine, "e5.negotiation_prefetch", rtt), "s", "-"))
    for protocol in sorted({p for p, _rtt in _points(records)}):
        mine = _of(records, protocol)
        for name, figure, unit in (("e5.negotiation_wan_over_lan", "WAN cycle over LAN cycle", "ratio"),
                                   ("e5.negotiation_round_trips_per_request", "round trips the WAN added per request",
                                    "round trips"),
                                   ("e5.negotiation_prefetch_round_trips", "round trips the WAN added to the "
                                                                           "request-list fetch", "round trips")):
            rows.append(("negotiation", f"{figure}, {protocol}", last(mine, name), unit,
                         PAPER_PER_PROTOCOL.get(name, {}).get(protocol, "-")))
    return rows


def summary(records):
    """[(section, figure, value, unit, paper)] from one column's records; value None when
    the run did not measure it (its row was skipped at that scale)."""
    rows = [
        ("ramp", "running sleep jobs reached", last(records, "e5.max_running"), "jobs",
         "~95k (one schedd, Fig. 6)"),
        ("ramp", "limit that stopped the ramp", last_param(records, "e5.max_running", "limit"), "", "memory"),
        ("ramp", "submit host's memory per running job", submit_mb_per_job(records), "MB", "1.38 (742 jobs/GB)"),
        ("failover", "CM killed: standby negotiator active after", last(records, "e5.cm_failover_negotiator"), "s", "-"),
        ("failover", "CM killed: a new job matched after", last(records, "e5.cm_failover_match"), "s", "-"),
        ("failover", "collector killed: a new job matched after", last(records, "e5.collector_failover_match"), "s",
         "-"),
        ("failover", "collector back: every startd listed after", last(records, "e5.collector_failover_return"), "s",
         "-"),
        ("failover", "CCB down: a new job matched after", last(records, "e5.ccb_outage_match"), "s", "-"),
        ("failover", "CCB back: every startd registered after", last(records, "e5.ccb_reregister"), "s", "-"),
    ]
    for event in sorted({r["params"].get("event") for r in records if r["name"] == "e5.jobs_restarted"}):
        rows.append(("failover", f"jobs restarted by {event}", last(records, "e5.jobs_restarted", event=event), "jobs",
                     "0"))
    rows += [
        ("streams", "TCP streams per worker, before", last(records, "e5.tcp_streams", config="before"), "streams",
         "11"),
        ("streams", "TCP streams per worker, after", last(records, "e5.tcp_streams", config="after"), "streams", "5"),
    ]
    rows += negotiation_rows(records)
    for rtt in sorted({float(r["params"]["rtt_ms"]) for r in records
                       if r["name"] == "e5.negotiation_match_cycle" and "rtt_ms" in r.get("params", {})}):
        rows.append(("matchable", f"fastest cycle at {rtt:g} ms, jobs that match",
                     _at_rtt(records, "e5.negotiation_match_cycle", rtt), "s", "-"))
    return rows + collector_rows(records) + synthetic_rows(records)


def synthetic_rows(records):
    """The synthetic startds' ramp per RTT: ads per collector at the limit, and what one join
    (a condor_advertise process and its handshake) took at the ramp's first step."""
    rows = []
    for r in records:
        p = r.get("params", {})
        if r["name"] != "e5.synthetic_limit" or "rtt_ms" not in p:
            continue
        rtt = float(p["rtt_ms"])
        bound = "" if limit_found(p) else ", ramp_max reached: a lower bound"
        rows.append(("synthetic", f"ads per collector at the limit, {rtt:g} ms ({p.get('limit', '?')}{bound})",
                     r["value"], "startds", PAPER_LIMITS.get((rtt, 1), "-")))
        joins = [j for j in records if j["name"] == "e5.synthetic_join_seconds"
                 and j["params"].get("stat") == "median" and float(j["params"].get("rtt_ms", -1)) == rtt]
        if joins:
            first = min(int(j["params"]["step"]) for j in joins)
            rows.append(("synthetic", f"seconds one join took (median, first step), {rtt:g} ms",
                         max(j["value"] for j in joins if int(j["params"]["step"]) == first), "s",
                         "500+ ms a GSI authentication across continents"))
    return rows


def collector_rows(records):
    """The collector ramps' limits, memory per startd, and the CCB layouts' connections."""
    rows = []
    for (rtt, tiers), rec in sorted(limits(records).items()):
        bound = "" if rec["found"] else ", ramp_max reached: a lower bound"
        rows.append(("collectors", f"startds per collector at the limit, {rtt:g} ms, {tiers} tier"
                     f"{'s' * (tiers > 1)} ({rec['limit']}{bound})", rec["value"], "startds",
                     PAPER_LIMITS.get((rtt, tiers), "-")))
        rows.append(("collectors", f"startds per worker at that limit, {rtt:g} ms, {tiers} tier"
                     f"{'s' * (tiers > 1)}", rec["per_worker"], "startds", "64 per core (Uber glidein)"))
    rss = [r["value"] for r in records if r["name"] == "e5.startd_rss"]
    if rss:
        rows.append(("collectors", "memory per startd daemon (largest mean RSS)", max(rss), "MB", "-"))
    for config in sorted({r["params"].get("config") for r in records if r["name"] == "e5.ccb_split_connections_ratio"}):
        rows.append(("collectors", f"CM connections, CCB on own hosts / on the children ({config})",
                     last(records, "e5.ccb_split_connections_ratio", config=config), "ratio", "0.5 (halved)"))
    return rows


def limits(records):
    """{(rtt_ms, tiers): {value, per_worker, found, limit}} from the last e5.collector_limit of each."""
    out = {}
    for r in records:
        p = r.get("params", {})
        if r["name"] == LIMIT and "rtt_ms" in p and "tiers" in p:
            out[(float(p["rtt_ms"]), int(p["tiers"]))] = {
                "value": r["value"], "per_worker": p.get("per_worker"), "limit": p.get("limit", "?"),
                "found": limit_found(p)}
    return out


def limit_found(params):
    """Whether a ramp's limit record names a limit it met (found = 1) rather than the last
    step tried (0: a lower bound); records before the flag have no `found` and met one."""
    return str(params.get("found", 1)) in ("1", "True", "true", "1.0")


def _at(records, name, rtt):
    return [r for r in records if r["name"] == name and "rtt_ms" in r.get("params", {})
            and float(r["params"]["rtt_ms"]) == rtt]


def _at_rtt(records, name, rtt):
    """The fastest of the run's values of `name` at `rtt` ms (a point is the fastest cycle)."""
    found = [r["value"] for r in _at(records, name, rtt)]
    return min(found) if found else None


def _cell(value):
    if value is None:
        return "-"
    return value if isinstance(value, str) else number(value)


def text(columns):
    """One table: a row per figure, a column per run/profile, then the paper's figure."""
    labels = list(columns)
    if not labels:
        return ""
    # {(section, figure): (unit, paper, {label: value})}, in the order the columns name them
    figures = {}
    for label, records in columns.items():
        for section, figure, value, unit, paper in summary(records):
            figures.setdefault((section, figure), (unit, paper, {}))[2][label] = value
    rows = []
    for (section, figure), (unit, paper, values) in figures.items():
        cells = [_cell(values.get(label)) for label in labels]
        if any(c != "-" for c in cells):
            rows.append([section, figure] + cells + [unit, paper])
    if not rows:
        return "E5 figures: no E5 metrics in these runs"
    headers = ["part", "figure"] + labels + ["unit", "paper"]
    align = ["<", "<"] + [">"] * len(labels) + ["<", "<"]
    return "E5 figures (- = not measured at this scale)\n" + tables.render(headers, rows, align)


# --- the collector ramps' figure -----------------------------------------------------------------------
def ramp_series(records):
    """{(rtt_ms, tiers): {"listed": [(startds run, listed by every CM)], "lost": [(startds run, lost
    updates summed over the collectors)]}}, by startds run. Of several collectors, a step's
    listed figure is the fewest any CM listed (what the pool holds for sure)."""
    listed, lost = defaultdict(lambda: defaultdict(list)), defaultdict(lambda: defaultdict(float))
    for r in records:
        p = r.get("params", {})
        if "rtt_ms" not in p or "tiers" not in p or "expected" not in p:
            continue
        key, x = (float(p["rtt_ms"]), int(p["tiers"])), int(p["expected"])
        if r["name"] == LISTED and p.get("top", 1) in (1, "1", True):
            listed[key][x].append(float(r["value"]))
        elif r["name"] == LOST:
            lost[key][x] += float(r["value"])
    out = {}
    for key in sorted(set(listed) | set(lost)):
        out[key] = {"listed": sorted((x, min(v)) for x, v in listed[key].items()),
                    "lost": sorted(lost[key].items())}
    return out


def ramp_label(rtt, tiers):
    return f"{'LAN' if rtt == 0 else 'WAN'} {rtt:g} ms, {tiers} tier{'s' * (tiers > 1)}"


def figures(columns, outdir):
    """One PNG per column with collector ramps: startds listed vs startds run (the diagonal is
    every startd joined), and updates lost per step. Returns the paths written."""
    from testbed.results import figures as fig_lib
    plt = fig_lib.pyplot()
    written, several = [], len(columns) > 1
    for label, records in columns.items():
        series = ramp_series(records)
        if not series:
            continue
        found = limits(records)
        fig, (joined, lost) = plt.subplots(1, 2, figsize=(11, 4.4))
        top = max(x for lines in series.values() for x, _ in lines["listed"] + lines["lost"])
        joined.plot([0, top], [0, top], color="grey", linestyle=":", linewidth=1, label="every startd listed")
        for key, lines in series.items():
            lim = found.get(key)
            note = f" (limit {number(lim['value'])}{'' if lim['found'] else '+'})" if lim else ""
            style = "-" if key[1] == 1 else "--"
            if lines["listed"]:
                joined.plot(*zip(*lines["listed"]), marker="o", linestyle=style, label=ramp_label(*key) + note)
            if lines["lost"]:
                lost.plot(*zip(*lines["lost"]), marker="o", linestyle=style, label=ramp_label(*key))
        joined.set_xlabel("startds run at the step (all workers)")
        joined.set_ylabel("startds every CM's collector lists")
        lost.set_xlabel("startds run at the step (all workers)")
        lost.set_ylabel("updates lost in the hold window")
        for ax in (joined, lost):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"E5 collector ramps - {label} (the paper's section 4.1: 2,000 startds per collector "
                     "on the LAN, 200 over the WAN)", fontsize=10)
        fig.tight_layout()
        name = "e5-collector-ramps" + (f"-{fig_lib.slug(label)}" if several else "") + ".png"
        written.append(fig_lib.save(fig, Path(outdir) / name))
    return written


DOC_FIGURES = (
    DocFigure("collector-ramps", "E5 collector ramps: startds every collector lists and updates lost against "
              "the startds run, per RTT and collector tiers",
              "Startds every central manager's collector lists against the startds each ramp step ran (left; "
              "the dotted diagonal is every startd listed) and the updates lost in the hold window (right), "
              "one line per RTT and collector tiers, against the paper's 2,000 startds per collector on the "
              "LAN and 200 over the WAN (section 4.1).",
              pick="e5-collector-ramps*.png",
              points="a step's listed startds are the fewest any collector listed, its lost updates the sum "
                     "over the collectors (no interval drawn)"),
)
