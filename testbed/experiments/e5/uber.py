"""E5's Uber-glidein workers (seed 004, section 3: n startds per core): how many startd
daemons a worker VM holds, refused before anything starts when they cannot fit, and the
memory each one takes, measured on the workers.

Memory per startd comes from the latest E5 run that measured one (`e5.startd_rss`, the mean
RSS of a worker's condor_startd processes at a step; the largest such value, the least
favourable) or, before any run has, from the constant E5_STARTD_MB; every refusal says which.
The startds themselves are a config fragment (config.use_startds, rendered from
provision/templates/e5/startds.conf.j2) installed on every worker at once and removed after."""
from pathlib import Path

from testbed.experiments.e5.config import dedicated_ccb_hosts
from testbed.model.constants import MEM_AVAILABLE_CMD
from testbed.model.errors import TestbedError
from testbed.model.startd_memory import StartdMemory
from testbed.results.intervals import mean
from testbed.results.runs import RESULTS_ROOT, Run
from testbed.services.gateway import Daemons
from testbed.experiments.e5.parsers import STARTD_RSS_SCRIPT, process_rss_mb

RSS_METRIC = "e5.startd_rss"   # MB per startd daemon (mean RSS on one worker at one step)


def measured_startd_memory(root=None, suite="e5", exclude=None):
    """StartdMemory from the latest run of `suite` under `root` (default results/) that
    recorded RSS_METRIC, with the largest value it recorded; the constant without one.
    `exclude`: a results folder not to read (the run in progress: what it measures goes to
    the next run, so that its own points stay those it was checked for)."""
    root = Path(root or RESULTS_ROOT)
    for manifest in sorted(root.glob("*/manifest.json"), reverse=True):
        if exclude is not None and manifest.parent.resolve() == Path(exclude).resolve():
            continue
        try:  # a damaged folder of another run is not this run's concern
            run = Run(manifest.parent)
            if run.manifest().get("suite") != suite:
                continue
            values = [float(r["value"]) for r in run.metrics() if r["name"] == RSS_METRIC and r["value"] > 0]
        except (OSError, TestbedError):
            continue
        if values:
            return StartdMemory(round(max(values), 1), f"measured in run {manifest.parent.name}, its largest "
                                                       f"mean RSS of a worker's condor_startd processes")
    return StartdMemory()


def requested_counts(params, topo):
    """[(parameter, startds per worker)] a run of `params` asks every worker to hold at once:
    the run's startds, the collector ramp's last step (its first when the last is 0, "what
    memory holds") and the CCB layouts' (only where those rows run: CCB hosts of their own)."""
    out = [("startds_per_worker", int(params.get("startds_per_worker") or 0))]
    if params.get("collector_ramp_rtts", [0]):
        top = int(params.get("collector_ramp_max") or 0)
        out.append(("collector_ramp_max", top) if top > 0 else
                   ("collector_ramp_start", int(params.get("collector_ramp_start") or 0)))
    if dedicated_ccb_hosts(topo):
        out.append(("ccb_startds", int(params.get("ccb_startds") or 0)))
    return [(k, n) for k, n in out if n > 0]


def startds_refused(params, topo, memory=None):
    """None when every count of requested_counts fits every worker of `topo` with
    min_free_mb kept free, else one line with the arithmetic and the `--set` that would
    fit. `memory`: a StartdMemory (default measured_startd_memory())."""
    memory = memory or measured_startd_memory()
    budget = StartdMemory(memory.per_startd_mb, memory.source, memory.base_mb, int(params.get("min_free_mb", 0)))
    for key, count in requested_counts(params, topo):
        for w in topo.with_role("worker"):
            problem = budget.refusal(w.name, w.memory_mb, max(count, w.startds))
            if problem:
                return f"{key} = {count}: {problem} (--set {key}={budget.largest(w.memory_mb)}, or more memory_mb)"
    return None


def ramp_start_refused(params, topo):
    """None, or one line when the collector ramp's first step is below the startds a worker
    runs already (a run adds startds to the topology's, it does not take them away)."""
    start = int(params.get("collector_ramp_start") or 0)
    busiest = max((w for w in topo.with_role("worker")), key=lambda w: w.startds)
    if params.get("collector_ramp_rtts") and 0 < start < busiest.startds:
        return (f"collector_ramp_start = {start} is below the {busiest.startds} startds {busiest.name} runs "
                f"already (--set collector_ramp_start={busiest.startds})")
    return None


def fits(params, topo):
    """Experiment.fits for E5: the startds a run asks for fit the workers' memory, and the
    collector ramp starts at or above the topology's startds."""
    return startds_refused(params, topo) or ramp_start_refused(params, topo)


class StartdSampler:
    """What the workers' startds take: processes running, RSS per startd, memory left."""

    def __init__(self, ssh, workers):
        self.ssh, self.workers = ssh, [w.name for w in workers]

    def running(self):
        """{worker: condor_startd processes running}."""
        res = self.ssh.run_many({w: Daemons.count_command("startd") for w in self.workers}, timeout=60)
        return {w: int(r.stdout.split()[0]) if r.stdout.split() and r.stdout.split()[0].isdigit() else 0
                for w, r in res.items()}

    def memory(self):
        """{worker: {rss_mb: mean RSS per condor_startd (None without one), startds, available_mb}}."""
        res = self.ssh.run_many({w: f"{STARTD_RSS_SCRIPT}; echo '#M'; {MEM_AVAILABLE_CMD}" for w in self.workers},
                                timeout=60)
        out = {}
        for w, r in res.items():
            rss_text, _, mem_text = r.stdout.partition("#M")
            rss = process_rss_mb(rss_text)
            mem = mem_text.split()
            out[w] = {"rss_mb": mean(rss), "startds": len(rss),
                      "available_mb": int(mem[-1]) if mem and mem[-1].isdigit() else None}
        return out
