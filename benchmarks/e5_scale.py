"""Benchmark figures of E5, printed from a run's metrics: running sleep jobs
reached, the limit that stopped the ramp and jobs per GB of the schedd's RAM; CM,
collector and CCB failover times and the jobs each restarted; TCP streams per worker
before/after; the negotiation cycle and its request-list prefetch at each RTT. The suite
records them; this prints them beside the paper's, one column per run given.

    .venv/bin/python benchmarks/e5_scale.py [RUN ...]     (default: latest-e5)
    ./tb -t small run e5 --scale ci && .venv/bin/python benchmarks/e5_scale.py
"""
import sys

from testbed.experiments.e5 import e5_figures
from testbed.results import runs


def main():
    return runs.print_benchmark("e5", "E5", lambda records: e5_figures.text({"testbed": records}))


if __name__ == "__main__":
    sys.exit(main())
