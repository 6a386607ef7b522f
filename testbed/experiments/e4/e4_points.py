"""E4's point (seed 003, Table 2): one layout's whole-node jobs, measured into the records
and checks `Measure Point` keeps and judges. HpcLibrary.point_production runs the layout;
`production` turns its node reports into the paper's table (start-up parts and T, E1, E2,
total), the idle tail, the back-fill and the look-ups, and the checks that say the run
measured what it meant to."""
from testbed.experiments.e4 import hpc as e4
from testbed.harness.points import Measured


def production(reports, db_reports, params, layout, backfill):
    """A Measured of one layout's run: `reports` from the task nodes, `db_reports` from a
    dedicated DB node (none co-located)."""
    m = Measured()
    f = e4.layout_figures(reports, db_reports)
    tag = dict(layout=layout, backfill=int(bool(backfill)))
    for part, seconds in f["parts"].items():
        m.record("e4.startup_seconds", seconds, "s", part=part, **tag)
    m.record("e4.startup_seconds", f["T"], "s", part="total", **tag)
    if f["startup_cpu_busy"] is not None:  # the node's cores busy over (T): its own DB work competes
        m.record("e4.startup_cpu_busy", f["startup_cpu_busy"], "fraction", **tag)
    m.record("e4.job_start_efficiency", f["E1"], "fraction", **tag)
    m.record("e4.event_efficiency", f["E2"], "fraction", **tag)
    m.record("e4.total_efficiency", f["total"], "fraction", **tag)
    m.record("e4.nodes_allocated", f["nodes_allocated"], "nodes", **tag)
    m.record("e4.nodes_running_tasks", f["nodes_running"], "nodes", **tag)
    slots, cores = [], []
    for rep, n in zip(reports, f["nodes"]):
        m.record("e4.node_seconds", n["total"], "s", node=rep["node"], **tag)
        for rank, frac in enumerate(e4.finish_fractions(rep), 1):
            m.record("e4.task_finish_fraction", frac, "fraction", rank=rank, node=rep["node"], **tag)
        slots.append(e4.idle_tail_slots(rep))
        cores.append(e4.idle_tail_cores(rep, n["available"] / max(1e-9, n["total"] - n["T"])))
    m.record("e4.idle_tail_slots", sum(slots) / len(slots) if slots else 0, "fraction", **tag)
    m.record("e4.idle_tail_cores", sum(cores) / len(cores) if cores else 0, "fraction", **tag)
    tasks = [t for r in reports for t in r.get("tasks", [])]
    events = e4.event_cpu_times(reports)
    if events:  # beside the calibration's: what the estimator's per-event time met in production
        m.record("e4.event_cpu_mean", sum(events) / len(events), "s", run="production", **tag)
    bf = sum(1 for t in tasks if t["kind"] == "backfill")
    m.record("e4.backfill_tasks", bf, "tasks", **tag)
    if backfill:
        m.record("e4.backfill_overrun_seconds", max((e4.backfill_overrun_seconds(r) for r in reports), default=0.0),
                 "s", **tag)
    lookups, answered = sum(n["lookups"] for n in f["nodes"]), sum(n["answered"] for n in f["nodes"])
    m.record("e4.lookups", lookups, "queries", **tag)
    m.record("e4.lookups_answered", answered, "queries", **tag)
    m.say(f"  {layout}{' + back-fill' if backfill else ''}: T {f['T']:.0f} s, E1 {f['E1']:.4f}, "
          f"E2 {f['E2']:.4f}, total {f['total']:.4f} ({f['nodes_running']}/{f['nodes_allocated']} "
          f"nodes), idle tail {' / '.join(f'{x:.3f}' for x in slots)} of the slots (per node), "
          f"{bf} back-fill tasks")
    errors = [e for r in list(reports) + list(db_reports) for e in r["errors"]]
    original = sum(1 for t in tasks if t["kind"] == "task")
    expected = len(reports) * params["tasks_per_node"]
    m.check(not errors, f"node errors: {errors}")
    m.check(len(reports) == params["nodes"], f"reports from {len(reports)} of {params['nodes']} nodes")
    m.check(original == expected, f"only {original} of {expected} tasks reported")
    m.check(lookups > 0, "no calibration look-up was made")
    m.check(answered == lookups, f"the DB answered {answered} of {lookups} look-ups")
    m.check(0 < f["E1"] <= 1 and 0 < f["E2"] <= 1, f"E1 {f['E1']}, E2 {f['E2']} outside (0, 1]")
    if layout == "dedicated":
        m.check(f["nodes_allocated"] > f["nodes_running"], "the DB node was not counted as allocated")
    return m
