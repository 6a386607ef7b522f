"""Figures of E1's scale model (docs/scaling.md), printed without VMs or from a run: k, the
scaled Table 4 columns, and R = concurrency x window / RTT / demand for the paper and this
site at each RTT, unscaled and scaled (testbed/experiments/e1/e1_scale.py computes them all).

    .venv/bin/python benchmarks/e1_scale.py --achieved 4.8 [--scale quick] [--rtts 10,20,40,80]
        what E1 would run on a site whose saturation test moved 4.8 MB/s
    .venv/bin/python benchmarks/e1_scale.py --from latest-e1
        a run's k and scaled values (its manifest) and the R its points recorded
"""
import argparse
import sys

from testbed.experiments.e1 import e1_scale, transfer
from testbed.harness import registry
from testbed.model import profiles, tables
from testbed.model.errors import TestbedError
from testbed.results import compare, runs


def planned(achieved, scale, rtts):
    """The scale model a run at `scale` would make from a saturation rate of `achieved` MB/s."""
    p = registry.get("e1").parameters(scale)
    paper = e1_scale.paper_saturation_rate()
    k = e1_scale.scale_factor(achieved, paper)
    made = e1_scale.scaled_columns(transfer.PAPER_PROFILES, k)
    entry = e1_scale.manifest_entry(k, achieved, paper, made, p["rate_factors"])
    named = {n: made.get(n) or profiles.load(n) for n in transfer.PAPER_PROFILES}
    rows = e1_scale.plan_rows(named, rtts or p["rtts"], p["rate_factors"], p["sweep_jobs"], p["sweep_compute_s"],
                              p["max_output_mb"], p["sweep_load"], achieved)
    return "\n".join(e1_scale.describe(entry) + [
        f"R at {scale} scale ({p['sweep_jobs']} jobs a point, unscaled W = {p['sweep_load']:g} x {achieved:g} MB/s):",
        tables.render(e1_scale.RATIO_HEADERS, rows, ["<", "<", ">", ">", ">"])])


def recorded(ref):
    run = runs.resolve(ref)
    entry = run.manifest().get("scale_model")
    lines = [f"E1 scale model of {run.label}"]
    lines += e1_scale.describe(entry) if entry else ["  (no scale_model in its manifest)"]
    text = e1_scale.tables_text(compare.suite_columns([run]).get("e1", {}))
    return "\n".join(lines + [text or "  (no e1.window_capacity_over_demand recorded)"])


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--achieved", type=float, help="HTCondor's MB/s in a saturation test")
    p.add_argument("--scale", default="quick", choices=registry.SCALES)
    p.add_argument("--rtts", type=lambda t: [float(x) for x in t.split(",")], default=None,
                   help="RTTs in ms (default: the scale's)")
    p.add_argument("--from", dest="run", help="a results folder (or latest-e1)")
    args = p.parse_args(argv)
    if (args.achieved is None) == (args.run is None):
        p.error("give --achieved MB/s or --from RUN")
    try:
        print(recorded(args.run) if args.run else planned(args.achieved, args.scale, args.rtts))
    except (TestbedError, ValueError) as exc:
        print(f"e1 scale: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
