"""Benchmark figures of E3 (FAX, issue #12), printed from a run's metrics: events/s per
cell (storage x compute) and CPU efficiency, off-diagonal / diagonal per RTT, the
concurrency scan's spread (max/min events/s per job), the baselines. The suite records
them; this prints them.

    .venv/bin/python benchmarks/e3_fax.py [RUN ...]     (default: latest-e3)
    ./tb -t small run e3 --scale ci && .venv/bin/python benchmarks/e3_fax.py
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.experiments import e3_fax as fax  # noqa: E402
from testbed.model.errors import TestbedError  # noqa: E402
from testbed.results import runs  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="*", default=["latest-e3"], help="results folders (default latest-e3)")
    args = p.parse_args()
    try:
        chosen = [runs.resolve(r) for r in args.runs]
    except TestbedError as exc:
        print(f"e3 benchmark: {exc}", file=sys.stderr)
        return 2
    records = [rec for run in chosen for rec in run.metrics()]
    m = chosen[-1].manifest()
    print(f"E3 figures from {', '.join(r.label for r in chosen)} ({m.get('scale')} scale, status {m.get('status')})")
    print(fax.render_summary(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
