"""Benchmark figures of the fault suite, printed from a run's metrics: failover
times (CM, CCB, schedd), reconnect times, RAID resync rate, and faults injected vs jobs lost
and files corrupted (target: 0 and 0). The suite records them; this prints them.

    .venv/bin/python benchmarks/faults.py [RUN ...]     (default: latest-faults)
    ./tb run faults --scale quick && .venv/bin/python benchmarks/faults.py
"""
import sys

from testbed.experiments.faults import faults
from testbed.results import runs


def main():
    records = runs.load_for_benchmark("faults", "fault suite")
    if records is None:
        return 2
    rows, totals = faults.summarise(records)
    print(faults.render_summary(rows, totals))
    return 0 if totals["jobs_lost"] == 0 and totals["files_corrupted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
