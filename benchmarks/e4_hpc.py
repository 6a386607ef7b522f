"""Benchmark figures of E4, printed from a run's metrics: total efficiency
co-located vs dedicated DB and their ratio, the idle-tail fraction with and without
back-fill, and the throughput estimator's error. The suite records them; this prints them.

    .venv/bin/python benchmarks/e4_hpc.py [RUN ...]     (default: latest-e4)
    ./tb -t small run e4 --scale ci && .venv/bin/python benchmarks/e4_hpc.py
"""
import sys

from testbed.results import runs

ROWS = [("total efficiency, DB on every node", "e4.total_efficiency", {"layout": "colocated", "backfill": 0}),
        ("total efficiency, dedicated DB node", "e4.total_efficiency", {"layout": "dedicated", "backfill": 0}),
        ("ratio dedicated / co-located (paper 0.90)", "e4.total_dedicated_over_colocated", {}),
        ("E1 co-located", "e4.job_start_efficiency", {"layout": "colocated", "backfill": 0}),
        ("E2 co-located", "e4.event_efficiency", {"layout": "colocated", "backfill": 0}),
        ("start-up T co-located (s)", "e4.startup_seconds", {"layout": "colocated", "part": "total", "backfill": 0}),
        ("start-up T dedicated (s)", "e4.startup_seconds", {"layout": "dedicated", "part": "total", "backfill": 0}),
        ("idle tail (slots) without back-fill", "e4.idle_tail_slots", {"layout": "colocated", "backfill": 0}),
        ("idle tail (slots) with back-fill", "e4.idle_tail_slots", {"layout": "colocated", "backfill": 1}),
        ("recovered by back-fill", "e4.backfill_recovered", {}),
        ("estimator error (predicted - measured) / measured", "e4.estimator_error", {})]


def main():
    records = runs.load_for_benchmark("e4", "E4")
    if records is None:
        return 2
    missing = 0
    for label, name, params in ROWS:
        v = runs.last_value(records, name, **params)
        missing += v is None
        print(f"  {label:<52} {'-' if v is None else f'{v:.4f}'}")
    return 1 if missing == len(ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
