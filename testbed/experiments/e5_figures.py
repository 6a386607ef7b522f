"""E5's own text table: the headline figures issue #11 asks for, per run/profile column,
beside the paper's. The line plots (running jobs and startds over time, RSS per step,
negotiation per RTT) come from the generic plots; this is what a person reads first:

    ramp        running sleep jobs reached, the limit that stopped the ramp, jobs per GB
    failover    CM kill (standby negotiator, new match), collector kill, CCB outage,
                jobs restarted by each
    streams     long-lived TCP streams per worker before / after
    negotiation fastest cycle and request-list prefetch at each RTT, round trips

`compare` calls `text(columns)` (the registry entry in e5_scale names it) with
`columns`: {column label: [metric records]}; benchmarks/e5_scale.py prints
`text({run: records})` for a run.
"""
from testbed.model import tables
from testbed.results.figures import number
from testbed.results.runs import last_value as last, matching


def last_param(records, name, key, **params):
    """Parameter `key` of the last record of `name` matching `params`, or None."""
    found = matching(records, name, **params)
    return found[-1].get("params", {}).get(key) if found else None


def _rtts(records):
    return sorted({float(r["params"]["rtt_ms"]) for r in records
                   if r["name"] in ("e5.negotiation_cycle", "e5.negotiation_prefetch") and "rtt_ms" in r.get("params", {})})


def summary(records):
    """[(section, figure, value, unit, paper)] from one column's records; value None when
    the run did not measure it (its row was skipped at that scale)."""
    rows = [
        ("ramp", "running sleep jobs reached", last(records, "e5.max_running"), "jobs",
         "~95k (one schedd, Fig. 6)"),
        ("ramp", "limit that stopped the ramp", last_param(records, "e5.max_running", "limit"), "", "memory"),
        ("ramp", "running jobs per GB of the schedd's RAM", last(records, "e5.jobs_per_gb"), "jobs/GB", "742"),
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
    for rtt in _rtts(records):
        ms = f"{rtt:g}"
        requests = {r["params"].get("requests") for r in _at(records, "e5.negotiation_cycle", rtt)}
        requests = "/".join(sorted(str(n) for n in requests if n is not None)) or "?"
        paper = {0.0: "30 s (1000 requests)", 100.0: "1153 s before batching"}.get(rtt, "-")
        rows.append(("negotiation", f"fastest cycle at {ms} ms, {requests} requests",
                     _at_rtt(records, "e5.negotiation_cycle", rtt), "s", paper))
        rows.append(("negotiation", f"request-list prefetch at {ms} ms",
                     _at_rtt(records, "e5.negotiation_prefetch", rtt), "s", "-"))
    rows.append(("negotiation", "extra round trips to fetch every request",
                 last(records, "e5.negotiation_prefetch_round_trips"), "round trips", "11.2 per request unbatched"))
    return rows


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
