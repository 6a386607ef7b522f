"""Benchmark figures of the RAID members' disk model, printed from E2 runs:
each member's fio figures (sequential MB/s, random 4 KiB IOPS) beside its configured
limits, and md's stripe-cache speed-up (256 -> 32768, 10 writers) with and without the
emulated spindles beside the paper's 11.7x. One E2 run measures both (its
`*-unlimited` rows lift the limits); runs with `--set member_mb_per_s=0 --set
member_iops=0` count as spindles off too. Then the member limits of E2's scale model
(testbed/experiments/e2/e2_scale.py, docs/scaling.md), computed from the runs' own rates.

    .venv/bin/python benchmarks/disk_model.py [RUN ...]     (default: latest-e2)
    ./tb -t small run e2 --scale ci && .venv/bin/python benchmarks/disk_model.py
"""
import argparse
import sys

from testbed.experiments.e2 import e2_scale, e2_site
from testbed.model.errors import TestbedError
from testbed.results import compare, runs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="*", default=["latest-e2"], help="results folders (default latest-e2)")
    args = p.parse_args()
    try:
        chosen = [runs.resolve(r) for r in args.runs]
    except TestbedError as exc:
        print(f"disk model benchmark: {exc}", file=sys.stderr)
        return 2
    records = [rec for run in chosen for rec in run.metrics()]
    manifests = [dict(run.manifest(), label=run.label) for run in chosen]
    fig = compare.paper_match(compare.load_paper(), "e2.raid_write_speedup", {})
    print(f"RAID members as spindles, from {', '.join(r.label for r in chosen)}")
    print(e2_site.disk_model_summary(records, manifests, fig["value"] if fig else None))
    members = next(((m.get("disks") or {}).get("count") for m in reversed(manifests) if m.get("disks")), None)
    if members:
        print("\n" + "\n".join(e2_scale.text(records, members)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
