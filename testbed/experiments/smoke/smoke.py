"""The smoke suite as a registry entry: end-to-end checks of a running site, no measured points."""
from testbed.harness.capacity import base_site
from testbed.harness.registry import Experiment
from testbed.model.topology import ROLES


def site_for(p, host_mb, host_cpus):
    """`testbed plan`: the default site holds it."""
    return base_site(), ["the default site: one of each role, as topologies/default.yaml"]


EXPERIMENT = Experiment(
    name="smoke", title="End-to-end smoke of a running site", seed=None,
    suite="robot/suites/smoke.robot",
    params={}, scales={"ci": {}, "quick": {}, "full": {}},
    profiles=("default",),
    # what the suite's own tests check is pass/fail; the shared keywords record
    # profile.apply_seconds and wan.rtt_measured (TuningLibrary, NetworkLibrary) in every suite
    metrics=(),
    x_params=("t",),
    paper=None,
    uses=ROLES,                    # a job through CCB, the DTN's RAID and cache, the origin's files
    capacity=site_for,   # testbed plan: the hosts its parameters need
)
