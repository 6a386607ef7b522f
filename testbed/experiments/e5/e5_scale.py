"""E5: how much higher can HTCondor fly (seed 004) - a sleeper ramp to the first
limit, long-lived TCP streams per execute node, negotiation over the WAN, and
central-manager, collector and CCB failover with jobs running.

Scaling to the testbed: the paper's Uber glideins (n startds per core, sleeper
slots) are the workers' startds x sleeper slots of the topology, or more
startds per worker for one run (`--set startds_per_worker=N startd_slots=1`),
refused before anything starts when they do not fit the workers' memory
(uber.py). Running sleep jobs are ramped in doubling steps up to the slots the
collector sees, and the ramp stops at the first limit: guest memory, jobs not
reaching the step in time, the schedd or the collector failing to answer, or no
sleeper slots left. The collector ramp (startd daemons per worker in doubling
steps, LAN and WAN, one and two collector tiers) is collector.py.

This module holds the registry entry, the ramp's decisions (steps, limits), the
stream model and `ScaleExperiment`, which runs the commands on the site through the
HTCondor gateway (services/gateway.py) and reads them with parsers.py.
The failovers and negotiation are in failover.py (mixed into ScaleExperiment),
the run's extra startds, the collector tree and the negotiator's resource-request
protocol (batched, per-request) in config.py. The Robot libraries
ScaleLibrary and CollectorLibrary are thin over them.
"""
import time

from testbed.experiments.e5 import e5_capacity, e5_figures, e5_rows, uber
from testbed.experiments.e5.config import SLEEP_SECONDS, role_constraint
from testbed.experiments.e5.failover import START_ATTRS, PoolEvents
from testbed.harness.registry import DAY_S, MAX_JOBS, MAX_RTT_MS, Experiment, Param
from testbed.model.constants import E5_ROLE_ATTR, MAX_STARTDS_PER_WORKER, MEM_AVAILABLE_CMD, SUBMIT_HOME
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.condor import submit_description
from testbed.services import health
from testbed.services.gateway import Schedd
from testbed.experiments.e5.parsers import (PS_SCRIPT, SS_SCRIPT, collector_name, cpu_percent, parse_long_ads,
                                      parse_observation, parse_ps, parse_ss, sum_ad_updates, update_stats)

EXPERIMENT = Experiment(
    name="e5", title="How much higher can HTCondor fly", seed="004_b6b9f9503ced1c60",
    suite="robot/suites/e5_htcondor_scale.robot",
    params={
        # ramp_steps needs a first step of at least one job
        "ramp_start": Param("int", "running sleep jobs at the first ramp step", minimum=1, maximum=MAX_JOBS),
        "ramp_max": Param("int", "the largest step tried (steps double from ramp_start)", minimum=1, maximum=MAX_JOBS),
        # a worker's startds and a startd's slots within the topology's own bounds (model/topology.py)
        "startds_per_worker": Param("int", "startds per worker VM for this run (0: the topology's)",
                                    minimum=0, maximum=MAX_STARTDS_PER_WORKER),
        "startd_slots": Param("int", "sleeper slots of each startd for this run (0: the topology's; 1 makes "
                                     "the workers Uber glideins of one-slot startds)", minimum=0, maximum=2000),
        "step_timeout_s": Param("int", "seconds a step may take before 'jobs' is the limit", minimum=1, maximum=DAY_S),
        # a guest's memory is at most 65536 MB (model/topology.py); 0 never calls memory the limit
        "min_free_mb": Param("int", "a pool guest's MemAvailable below this (MB) is the memory limit",
                             minimum=0, maximum=65536),
        "streams_jobs": Param("int", "sleep jobs running on the worker whose TCP streams are counted (0 skips)",
                              minimum=0, maximum=MAX_JOBS),
        "negotiation_requests": Param("int", "idle jobs that cannot match, each its own resource request",
                                      minimum=1, maximum=MAX_JOBS),
        "negotiation_rtts": Param("numbers", "schedd <-> central manager RTTs, ms", rows=True,
                                  minimum=0, maximum=MAX_RTT_MS),
        "negotiation_protocols": Param("names", "how the negotiator fetches the schedd's resource requests: "
                                                "batched (the release's lists) and/or per-request (one per round "
                                                "trip, the paper's schedds before batching)", rows=True),
        "negotiation_timeout_s": Param("int", "seconds to wait for a negotiation cycle that saw every request",
                                       minimum=1, maximum=DAY_S),
        "negotiation_cycles": Param("int", "cycles timed per RTT; the fastest is the point (TCG stalls "
                                           "stretch single cycles from 0.07 to 2.7 s on an idle `small`)",
                                    minimum=1, maximum=100),
        "failover_jobs": Param("int", "sleep jobs running during the failovers (0: every slot but one)",
                               minimum=0, maximum=MAX_JOBS),
        "cm_kill": Param("int", "1: hard-kill the central manager with the active negotiator (0 skips)",
                         minimum=0, maximum=1),
        "collector_kill": Param("int", "1: hard-kill one collector only (0 skips)", minimum=0, maximum=1),
        "ccb_outage_s": Param("int", "seconds one CCB server stays down (0 skips)", minimum=0, maximum=DAY_S),
        "failover_timeout_s": Param("int", "seconds a failover, a new match or a re-registration may take",
                                    minimum=1, maximum=DAY_S),
        "tree_settle_s": Param("int", "seconds every slot runs a sleeper before a collector shape is read "
                                      "(0 skips the two-tier collector rows)", minimum=0, maximum=DAY_S),
        # the collector ramp (collector.py): startd daemons per worker in doubling steps
        "collector_ramp_rtts": Param("numbers", "worker <-> central hosts RTTs of the collector ramp, ms",
                                     rows=True, minimum=0, maximum=MAX_RTT_MS),
        "collector_ramp_tiers": Param("ints", "collector tiers of the ramp: 1 (the CMs) and/or 2 (child "
                                              "collectors forwarding to them)", rows=True, minimum=1, maximum=2),
        "collector_ramp_start": Param("int", "startds per worker at the first step",
                                      minimum=1, maximum=MAX_STARTDS_PER_WORKER),
        "collector_ramp_max": Param("int", "startds per worker at the last step (0: as many as the workers' "
                                           "memory holds)", minimum=0, maximum=MAX_STARTDS_PER_WORKER),
        "collector_ramp_slots": Param("int", "sleeper slots of each ramp startd (0: the topology's)",
                                      minimum=0, maximum=2000),
        "collector_join_s": Param("int", "seconds the step's startds have to run, then to be listed",
                                  minimum=1, maximum=DAY_S),
        "collector_hold_s": Param("int", "seconds over which a step's updates and lost updates are counted",
                                  minimum=1, maximum=DAY_S),
        # the synthetic startds (synthetic.py): startd ads sent as that many startds would
        "synthetic_rtts": Param("numbers", "worker <-> central hosts RTTs of the synthetic startds' ramp, ms "
                                           "(empty skips it)", rows=True, minimum=0, maximum=MAX_RTT_MS),
        "synthetic_start": Param("int", "synthetic startds per worker at the first step", minimum=1, maximum=100000),
        "synthetic_max": Param("int", "synthetic startds per worker at the last step", minimum=1, maximum=100000),
        "synthetic_parallel": Param("int", "joins (condor_advertise processes) at once per worker",
                                    minimum=1, maximum=64),
        "synthetic_update_s": Param("int", "seconds between two updates of every synthetic startd",
                                    minimum=1, maximum=DAY_S),
        "ccb_startds": Param("int", "startds per worker while CCB on the children vs on its own hosts is "
                                    "counted (0 skips)", minimum=0, maximum=MAX_STARTDS_PER_WORKER),
        "negotiation_matchable": Param("int", "idle jobs every free slot matches, each its own request (0 skips)",
                                       minimum=0, maximum=MAX_JOBS),
        "matchable_rounds": Param("int", "cycles timed per RTT with matchable jobs (submitted anew each round)",
                                  minimum=1, maximum=100),
    },
    scales={
        # CI on `small` (16 sleeper slots) under TCG, within CI's budget on a slow 2-core
        # host: a ramp of one step (8 jobs), 50 requests at 0 and 100 ms in the batched
        # protocol only, the fastest of 5 cycles each (the fastest of fewer can leave every
        # LAN fetch slowed by the busy host and above the WAN one); `--set
        # negotiation_protocols=batched,per-request` adds the per-request rows (each
        # reconfigures the CMs twice; at 100 ms, 5 cycles of 50 round trips each);
        # `--set ccb_outage_s=30` adds one CCB down under 4 running jobs
        # (about 4 minutes). The stream count
        # restarts the workers' HTCondor twice (minutes under TCG): quick and full only
        # (--set streams_jobs=1 adds it at ci); so do the CM and collector kills.
        "ci": {"ramp_start": 8, "ramp_max": 8, "startds_per_worker": 0, "startd_slots": 0, "step_timeout_s": 240,
               "min_free_mb": 48, "streams_jobs": 0, "negotiation_requests": 50,
               "negotiation_rtts": [0, 100], "negotiation_protocols": ["batched"], "negotiation_timeout_s": 420,
               "negotiation_cycles": 5, "failover_jobs": 4,
               # ccb_outage_s 0 at ci: at ci the row takes ~665 s (441 s until its 4 sleepers
               # run), which puts `./tb test` near 81 min; --set ccb_outage_s=30 runs it
               "cm_kill": 0, "collector_kill": 0, "ccb_outage_s": 0, "failover_timeout_s": 420,
               "tree_settle_s": 0,
               # one tiny collector ramp at 0 ms on one tier: a single step of 4 startds per
               # worker of the topology's slots (a reconfig adds two, no restart), about 2 minutes
               "collector_ramp_rtts": [0], "collector_ramp_tiers": [1], "collector_ramp_start": 4,
               "collector_ramp_max": 4, "collector_ramp_slots": 0, "collector_join_s": 120, "collector_hold_s": 15,
               "ccb_startds": 0, "negotiation_matchable": 0, "matchable_rounds": 1,
               # one small step on the LAN: 10 ads per worker joined and updated twice
               "synthetic_rtts": [0], "synthetic_start": 10, "synthetic_max": 10, "synthetic_parallel": 4,
               "synthetic_update_s": 10},
        "quick": {"ramp_start": 16, "ramp_max": 512, "startds_per_worker": 0, "startd_slots": 0, "step_timeout_s": 600,
                  "min_free_mb": 48, "streams_jobs": 1, "negotiation_requests": 200,
                  "negotiation_rtts": [0, 100], "negotiation_protocols": ["batched", "per-request"],
                  "negotiation_timeout_s": 900, "negotiation_cycles": 5, "failover_jobs": 0,
                  "cm_kill": 1, "collector_kill": 1, "ccb_outage_s": 300, "failover_timeout_s": 600,
                  "tree_settle_s": 120,
                  "collector_ramp_rtts": [0, 100], "collector_ramp_tiers": [1, 2], "collector_ramp_start": 4,
                  "collector_ramp_max": 0, "collector_ramp_slots": 1, "collector_join_s": 180, "collector_hold_s": 120,
                  "ccb_startds": 8, "negotiation_matchable": 64, "matchable_rounds": 3,
                  # a join (one condor_advertise process, its handshake) takes a TCG worker ~2 s
                  # at 4 at once: 125 and 250 per worker are ~6 min of joins
                  "synthetic_rtts": [0, 100], "synthetic_start": 125, "synthetic_max": 250, "synthetic_parallel": 4,
                  "synthetic_update_s": 60},
        "full": {"ramp_start": 16, "ramp_max": 8192, "startds_per_worker": 0, "startd_slots": 0, "step_timeout_s": 1200,
                 "min_free_mb": 48, "streams_jobs": 1, "negotiation_requests": 1000,
                 "negotiation_rtts": [0, 100], "negotiation_protocols": ["batched", "per-request"],
                 "negotiation_timeout_s": 3600, "negotiation_cycles": 3, "failover_jobs": 0,
                 "cm_kill": 1, "collector_kill": 1, "ccb_outage_s": 1800, "failover_timeout_s": 900,
                 "tree_settle_s": 600,
                 "collector_ramp_rtts": [0, 100], "collector_ramp_tiers": [1, 2], "collector_ramp_start": 4,
                 "collector_ramp_max": 0, "collector_ramp_slots": 1, "collector_join_s": 300, "collector_hold_s": 300,
                 "ccb_startds": 16, "negotiation_matchable": 150, "matchable_rounds": 3,
                 "synthetic_rtts": [0, 100], "synthetic_start": 125, "synthetic_max": 8000, "synthetic_parallel": 8,
                 "synthetic_update_s": 300},
    },
    profiles=("default",), row_profiles=("default", "collector-tuned"),
    metrics=("e5.ramp_running", "e5.ramp_step_seconds", "e5.ramp_startds", "e5.ramp_slots",
             "e5.collector_updates_total", "e5.collector_updates_lost", "e5.daemon_rss",
             "e5.daemon_cpu_seconds", "e5.daemon_cpu_percent", "e5.guest_mem_available", "e5.running_over_time",
             "e5.startds_over_time", "e5.max_running",
             "e5.tcp_streams", "e5.tcp_streams_model", "e5.tcp_streams_after_over_before",
             "e5.negotiation_cycle", "e5.negotiation_cycle_median", "e5.negotiation_wan_over_lan",
             "e5.negotiation_round_trips_per_request",
             "e5.negotiation_prefetch", "e5.negotiation_prefetch_round_trips",
             "e5.cm_failover_negotiator", "e5.cm_failover_match", "e5.collector_failover_match",
             "e5.collector_failover_return", "e5.ccb_outage_match", "e5.ccb_reregister",
             "e5.jobs_restarted", "e5.tree_visible_seconds", "e5.tree_updates_total", "e5.tree_updates_lost",
             "e5.tree_negotiation_cycle",
             "e5.collector_ramp_listed", "e5.collector_ramp_missing", "e5.collector_ramp_updates",
             "e5.collector_ramp_lost", "e5.collector_ramp_skipped", "e5.collector_ramp_timeouts",
             "e5.collector_ramp_stat", "e5.collector_ramp_cpu",
             "e5.collector_ramp_join_seconds", "e5.collector_ramp_held_over_time", "e5.startd_rss",
             "e5.collector_limit", "e5.central_connections", "e5.ccb_split_connections_ratio",
             "e5.negotiation_match_cycle", "e5.negotiation_match_prefetch",
             "e5.synthetic_join_seconds", "e5.synthetic_join_rate", "e5.synthetic_listed", "e5.synthetic_updates",
             "e5.synthetic_lost", "e5.synthetic_stat", "e5.synthetic_cpu", "e5.synthetic_limit"),
    x_params=("t", "step", "rtt_ms"),
    paper="results/paper/e5.yaml",
    tables=e5_figures.text,        # the headline figures beside the paper's
    # The pool alone: schedd, CMs (HA failover), CCB servers (outage) and sleeper startds.
    # The DTN (a pool of its own) and the origin take no part; a DTN whose flocked schedd
    # still has a submitter ad in the CMs' collector is kept running by the runner, since
    # the negotiator would contact it in every cycle E5 times.
    uses=("submit", "cm", "ccb", "worker"),
    measured=("cm", "submit"),       # --pin: the negotiator and collector apart from the schedd
    figures=e5_figures.figures,    # the collector ramps: startds joined and updates lost per step
    doc_figures=e5_figures.DOC_FIGURES,   # ... on its docs page
    fits=uber.fits,             # the startds asked for fit the workers' memory
    consistent=lambda p: next((f"{a} ({p[a]}) must be at most {b} ({p[b]}): a ramp starts below where it stops"
                               for a, b in (("ramp_start", "ramp_max"), ("collector_ramp_start", "collector_ramp_max"),
                                            ("synthetic_start", "synthetic_max"))
                               if p[b] and p[a] > p[b]), None),   # a max of 0: as many as fit
    rows=e5_rows.ROWS, points=e5_rows.POINTS,
    capacity=e5_capacity.site_for,   # testbed plan: the hosts its parameters need
)

LIMITS = ("slots", "memory", "jobs", "schedd", "collector", "held", "ramp_max")


# --- ramp: steps and limits ----------------------------------------------------------
def ramp_steps(start, maximum, slots=None):
    """Doubling steps start, 2 start, ... up to `maximum` (included as the last step when
    doubling passes it), clipped to the sleeper slots: when a step would reach or exceed
    `slots`, the last step is `slots` itself and the slots are the limit once it is
    reached. Returns (steps, capped_by_slots)."""
    if start < 1 or maximum < start:
        raise ValueError(f"ramp needs 1 <= ramp_start <= ramp_max, got {start}, {maximum}")
    steps, n = [], start
    while n < maximum:
        steps.append(n)
        n *= 2
    steps.append(maximum)
    if slots is None or steps[-1] < slots:
        return steps, False
    kept = [s for s in steps if s < slots]
    return kept + [slots] if slots > 0 else kept, True


def first_limit(target, obs, elapsed, timeout, min_free_mb):
    """The limit an observation shows for a step of `target` running jobs, or None.
    `obs`: {running, held, schedd_ok, collector_ok, slots, mem_free_mb: {host: MB}}."""
    if not obs.get("schedd_ok", True):
        return "schedd"
    if not obs.get("collector_ok", True):
        return "collector"
    if obs.get("held"):
        return "held"
    low = {h: mb for h, mb in (obs.get("mem_free_mb") or {}).items() if mb is not None and mb < min_free_mb}
    if low:
        return "memory"
    if obs.get("running", 0) >= target:
        return None
    if elapsed > timeout:
        return "jobs"
    return None


# A daemon that does not answer one query is not yet a limit: under TCG a loaded guest may
# miss one (the collector's `condor_status` from a submit host starting 164 shadows did, on
# `default`); it is the limit when it misses this many observations in a row.
QUERY_LIMITS = ("schedd", "collector")
QUERY_MISSES = 3


class LimitWatch:
    """Confirms a query limit (schedd, collector) only after QUERY_MISSES observations in a
    row missed it; other limits count at once. `misses` says how many were forgiven."""

    def __init__(self, needed=QUERY_MISSES):
        self.needed, self.in_a_row, self.misses = needed, 0, []

    def judge(self, limit, obs):
        if limit not in QUERY_LIMITS:
            self.in_a_row = 0
            return limit
        self.in_a_row += 1
        self.misses.append(obs.get(f"{limit}_error", ""))
        return limit if self.in_a_row >= self.needed else None


def describe_limit(limit, target, obs, timeout, min_free_mb):
    """One sentence on why the ramp stopped."""
    if limit == "slots":
        return f"every sleeper slot the collector sees ({obs.get('slots')}) runs a job; no larger step fits"
    if limit == "memory":
        low = {h: mb for h, mb in obs.get("mem_free_mb", {}).items() if mb is not None and mb < min_free_mb}
        return "guest memory: " + ", ".join(f"{h} {mb} MB available" for h, mb in sorted(low.items())) + \
               f" (below {min_free_mb} MB)"
    if limit == "jobs":
        return f"{obs.get('running')} of {target} jobs running after {timeout} s"
    if limit == "schedd":
        return f"the schedd did not answer condor_q ({obs.get('schedd_error', '')})"
    if limit == "collector":
        return f"the collector did not answer condor_status ({obs.get('collector_error', '')})"
    if limit == "held":
        return f"{obs.get('held')} jobs held"
    if limit == "ramp_max":
        return f"every step up to ramp_max ({target}) reached; no limit below it"
    return f"unknown limit {limit!r}"


# --- observing the pool ----------------------------------------------------------------
def observe_script(role):
    """One command on the submit host: job states of the suite's jobs with `role`, slot ads."""
    return Schedd.observe_script(role_constraint(role))


def fastest_and_median(durations):
    """(fastest, median) of a point's cycle durations: the fastest is the least disturbed by
    the emulator's stalls, which only ever lengthen a cycle."""
    d = sorted(durations)
    if not d:
        raise ValueError("no cycle durations")
    mid = len(d) // 2
    return d[0], (d[mid] if len(d) % 2 else round((d[mid - 1] + d[mid]) / 2, 3))



def stream_model(startds, collectors, ccbs, jobs, shared_port, master_tcp):
    """Long-lived streams the paper counts from one execute node (section 4.4): each
    startd to each collector, the master to each collector (unless it updates by UDP),
    per CCB server one registration per daemon (master, startds, starters) or one for
    shared port, and one stream per running job back to the submit side.
    Paper, 1 startd, 2 collectors, 2 CCBs, 1 job: 11 before, 5 after."""
    to_collectors = startds * collectors + (collectors if master_tcp else 0)
    to_ccbs = ccbs if shared_port else (1 + startds + jobs) * ccbs
    return to_collectors + to_ccbs + jobs


def summarise_streams(streams):
    """{total, by_process: {p: n}, by_peer: {host: n}}."""
    by_process, by_peer = {}, {}
    for process, peer, _port in streams:
        by_process[process] = by_process.get(process, 0) + 1
        by_peer[peer] = by_peer.get(peer, 0) + 1
    return {"total": len(streams), "by_process": by_process, "by_peer": by_peer}


class ScaleExperiment(PoolEvents):
    """Runs E5's commands on a site: submit tagged sleepers, observe, sample, fail over."""

    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool
        self.submit = topo.role_host("submit").name
        self.schedd = Schedd(ssh, self.submit)
        self.workers = topo.with_role("worker")
        self.pool_hosts = [h.name for h in topo.hosts.values()
                           if any(h.has(r) for r in ("submit", "cm", "ccb", "worker"))]

    # --- jobs ------------------------------------------------------------------------------
    def submit_sleepers(self, count, role, requirements=None, seconds=SLEEP_SECONDS, distinct=False):
        """`count` sleep jobs tagged E5Role = role. distinct: every job its own requirements
        (so its own autocluster and resource request) that no slot meets."""
        extra = {f"+{E5_ROLE_ATTR}": f'"{role}"'}
        if distinct:
            requirements = "(TARGET.E5NeverMatches =?= $(Process))"
        desc = submit_description("/bin/sleep", str(seconds), count=int(count), requirements=requirements,
                                  extra=extra)
        desc = desc.replace("output = out.$(Process)\n", "output = /dev/null\n") \
                   .replace("error = err.$(Process)\n", "error = /dev/null\n")
        return self.pool.submit(desc, f"{SUBMIT_HOME}/e5/{role}-{time.time_ns()}")

    def remove(self, role, timeout=300, force_after=120, poll=5):
        """Remove the jobs tagged `role`, forcing out only those still queued after
        `force_after` s (Pool.remove_jobs). Returns the jobs left after `timeout` s."""
        return self.pool.remove_jobs(role_constraint(role), timeout, force_after, poll)

    def job_ads(self, role, attrs=START_ATTRS):
        return self.schedd.query(role_constraint(role), attrs)

    def observe(self, role):
        """Job states, slots and startds, and every pool guest's MemAvailable (MB)."""
        cmds = {h: MEM_AVAILABLE_CMD for h in self.pool_hosts}
        cmds[self.submit] = observe_script(role) + "; echo '#M'; " + MEM_AVAILABLE_CMD
        res = self.ssh.run_many(cmds, timeout=120)
        obs = parse_observation(res[self.submit].stdout)
        if not res[self.submit].stdout.strip():  # the guest itself did not answer (e.g. out of memory)
            obs["schedd_error"] = f"{self.submit} did not answer over SSH (rc {res[self.submit].rc}: " \
                                  f"{res[self.submit].stderr.strip()[-120:]})"
        mem = {}
        for h, r in res.items():
            text = r.stdout.split("#M")[-1].strip() if h == self.submit else r.stdout.strip()
            mem[h] = int(text.splitlines()[-1]) if r.ok and text and text.splitlines()[-1].isdigit() else None
        obs["mem_free_mb"] = mem
        return obs

    def wait_running(self, role, count, timeout, poll=5):
        """Seconds until `count` jobs of `role` run; RemoteError naming what stopped them."""
        last = {}

        def running():
            obs = last["obs"] = self.observe(role)
            if obs["held"]:
                raise RemoteError(f"{obs['held']} {role} job(s) held")
            return obs["running"] >= count

        def why():
            obs = last["obs"]
            return (f"{obs['running']} of {count} {role} jobs running after {timeout} s "
                    f"({obs['idle']} idle, {obs['slots']} slots, {obs['claimed']} claimed)")
        try:
            return float(wait_for(f"{count} {role} jobs running", running, timeout, poll, host=self.submit,
                                  message=why))
        except RemoteError as exc:  # every probe's failed wait says what the schedd saw
            raise RemoteError(f"{exc}\n{self.diagnosis(role)}") from None

    def diagnosis(self, role):
        """`why_not_running`'s text, headed; a diagnosis that fails itself says so."""
        try:
            text = self.why_not_running(role)
        except RemoteError as exc:
            text = f"(not available: {exc})"
        return f"--- why the {role} jobs do not run (condor_q -better-analyze, SchedLog):\n{text}"

    def ensure_running(self, role, count, timeout):
        """`count` sleepers of `role` running (submitting only what is missing): the
        failover tests share one set of running jobs without keeping state in Python."""
        obs = self.observe(role)
        have = obs["running"] + obs["idle"]
        if have < count:
            self.submit_sleepers(count - have, role)
        return self.wait_running(role, count, timeout)

    # --- sampling ----------------------------------------------------------------------------
    def daemon_stats(self):
        """{host: {daemon: {count, rss_mb, cpu_s}}} on the pool's hosts."""
        res = self.ssh.run_many({h: PS_SCRIPT for h in self.pool_hosts}, timeout=60)
        return {h: parse_ps(r.stdout) for h, r in res.items() if r.ok}

    def collector_ads(self):
        out = self.schedd.status("-collector -l", timeout=60)
        return parse_long_ads(out.stdout) if out.ok else []

    def collector_stats(self):
        """{collector: {ad type: {total, lost, initial}}}: each collector's own daemon ad
        (as last published, `ad_time` its MyCurrentTime) and, as type `slot_ads`, the sums
        of the per-ad statistics over the slot ads it holds now."""
        out = {}
        for ad in self.collector_ads():
            stats = update_stats(ad)
            for st in stats.values():
                st["ad_time"] = ad.get("MyCurrentTime", 0)
            out[collector_name(ad)] = stats
        cms = [h.name for h in self.topo.with_role("cm")]
        for h, part in self.schedd.status_by_pool(cms, "-af UpdatesTotal UpdatesLost", timeout=60).items():
            slot = sum_ad_updates(part)
            if slot["ads"]:
                out.setdefault(h, {})["slot_ads"] = {"total": slot["total"], "lost": slot["lost"],
                                                     "initial": slot["ads"], "ad_time": 0}
        return out

    # --- the ramp ----------------------------------------------------------------------------
    def ramp(self, start, maximum, timeout, min_free_mb, poll=10, echo=print):
        """Ramp running sleepers in doubling steps to the first limit; returns
        {steps: [...], series: [(t, running, startds)], limit, reason, max_running, slots}.
        The suite removes the ramp's jobs afterwards."""
        t0 = time.monotonic()
        obs = self.observe("ramp")
        prev_daemons, prev_t = self.daemon_stats(), time.monotonic()
        steps, capped = ramp_steps(start, maximum, obs["slots"])
        echo(f"  ramp steps {steps} ({obs['slots']} sleeper slots on {obs['startds']} startds)")
        series, done, submitted, limit, reason = [], [], obs["running"] + obs["idle"], None, ""
        for target in steps:
            if target > submitted:
                self.submit_sleepers(target - submitted, "ramp")
                submitted = target
            step_t0, watch, st = time.monotonic(), LimitWatch(), {}

            def step_over():
                """The step ends at its target or at a limit (`jobs` once `timeout` has passed)."""
                obs = st["obs"] = self.observe("ramp")
                series.append((round(time.monotonic() - t0, 1), obs["running"], obs["startds"]))
                seen = first_limit(target, obs, time.monotonic() - step_t0, timeout, min_free_mb)
                limit = st["limit"] = watch.judge(seen, obs)
                if seen and not limit:
                    echo(f"  step {target}: the {seen} did not answer ({watch.misses[-1]}); "
                         f"miss {watch.in_a_row} of {watch.needed} before it counts as the limit")
                return limit or (not seen and obs["running"] >= target)

            wait_for(f"ramp step {target}", step_over, float("inf"), poll, host=self.submit)
            obs, limit = st["obs"], st["limit"]
            daemons, now = self.daemon_stats(), time.monotonic()
            sample = {"step": target, "seconds": now - step_t0, "running": obs["running"],
                      "startds": obs["startds"], "slots": obs["slots"], "mem_free_mb": obs["mem_free_mb"],
                      "daemons": daemons, "cpu_pct": cpu_percent(prev_daemons, daemons, now - prev_t),
                      "collectors": self.collector_stats()}
            prev_daemons, prev_t = daemons, now
            done.append(sample)
            echo(f"  step {target}: {obs['running']} running after {sample['seconds']:.0f} s, "
                 f"{obs['startds']} startds, {obs['slots']} slots")
            if limit:
                reason = describe_limit(limit, target, obs, timeout, min_free_mb)
                break
        if not limit:
            limit = "slots" if capped else "ramp_max"
            reason = describe_limit(limit, steps[-1] if steps else 0, obs, timeout, min_free_mb)
        return {"steps": done, "series": series, "limit": limit, "reason": reason,
                "max_running": max((s["running"] for s in done), default=0), "slots": obs["slots"]}

    # --- streams ----------------------------------------------------------------------------
    def count_streams(self, host):
        hosts_by_ip = {h.site_ip: h.name for h in self.topo.hosts.values()}
        out = self.ssh.run(host.name, SS_SCRIPT).stdout
        return parse_ss(out, host.site_ip, hosts_by_ip)



def wait_healthy(topo, ssh, timeout, echo=print, skip=()):
    """The site's health check (services.health) against `topo`, the hosts in `skip` (paused
    for the run) not probed: (healthy, report text)."""
    report = health.wait_healthy(topo, ssh, timeout=timeout, echo=echo, skip=skip)
    return report["healthy"], health.format_report(report)
