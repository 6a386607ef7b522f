"""E1's point (seed 000, Figure 2), measured into the records and checks `Measure Point`
keeps and judges: one latency point's batch (TransferLibrary.point_latency runs it)."""
from testbed.harness.points import Measured


def latency(r):
    """A Measured of one latency point (TransferLibrary.run_latency_point's figures): the
    efficiency lost and what sized it, then the checks that every job completed and returned
    its whole output, and that XferStatsLog timed the batch."""
    m, at = Measured(), r["params"]
    lost = r["efficiency_lost"]
    m.record_known("e1.efficiency_lost", lost, "ratio", **at)
    m.record("e1.job_output_mb", r["size_mb"], "MB", **at)
    m.record_known("e1.slot_setup_teardown_over_execution", r["slot_setup_teardown_over_execution"], "ratio", **at)
    m.record("e1.sweep_demand", r["demand"], "MB/s", **at)
    m.record_known("e1.window_capacity_over_demand", r["window_over_demand"], "ratio", **at)
    m.record_known("e1.job_transfer_rate", r["job_transfer_rate"], "MB/s", **at)
    m.check(lost is not None and lost >= 0, f"no transfer times for the batch in XferStatsLog (efficiency lost {lost})")
    m.check(r["completed"] == r["jobs"], f"{r['completed']} of {r['jobs']} jobs completed")
    m.check(not r["bad_outputs"], f"jobs {r['bad_outputs']} did not return {r['size_mb']} MB of output")
    return m
