"""The smoke suite as a registry entry: end-to-end checks of a running site, no measured points."""
from testbed.experiments.registry import Experiment
from testbed.model.topology import ROLES

EXPERIMENT = Experiment(
    name="smoke", title="End-to-end smoke of a running site", seed=None,
    suite="robot/suites/smoke.robot",
    params={}, scales={"ci": {}, "quick": {}, "full": {}},
    profiles=("default",),
    # what the suite's own tests check is pass/fail; the shared keywords record
    # profile.apply_seconds and wan.rtt_measured (TestbedLibrary) in every suite
    metrics=(),
    x_params=("t",),
    paper=None,
    uses=ROLES,                    # a job through CCB, the DTN's RAID and cache, the origin's files
)
