"""Benchmark figures of E3 (FAX), printed from a run's metrics: events/s per
cell (storage x compute) and CPU efficiency, off-diagonal / diagonal per RTT, the
concurrency scan's spread (max/min events/s per job), the baselines. The suite records
them; this prints them.

    .venv/bin/python benchmarks/e3_fax.py [RUN ...]     (default: latest-e3)
    ./tb -t small run e3 --scale ci && .venv/bin/python benchmarks/e3_fax.py
"""
import sys

from testbed.experiments.e3 import fax
from testbed.results import runs


def main():
    return runs.print_benchmark("e3", "E3", fax.render_summary)


if __name__ == "__main__":
    sys.exit(main())
