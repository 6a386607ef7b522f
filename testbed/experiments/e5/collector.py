"""E5's collector ramp (seed 004, section 4.1): how many startd daemons one collector holds
with the workers on its LAN and behind a 100 ms WAN, with one collector tier and with two.

Every worker runs more startds at each step (doubling, "Uber glideins" of one slot each),
all reporting to the central managers' collectors (one tier) or to child collectors that
forward to them (two tiers; config.CollectorTree). At each step: the startd processes
running, then the startds each collector lists within the join window (`collector_join_s`),
then, over a hold window (`collector_hold_s`), the updates each collector counted and lost
(the per-ad statistics it keeps with every slot ad), the collectors' own statistics
(parsers.COLLECTOR_LOAD_ATTRS, as their daemon ad last published them), the CPU of the
collectors and startds, RSS per startd and the workers' memory. The ramp stops at the
first step where a collector does not answer, a startd never appears, updates are lost, the
workers cannot start the step's startds or run short of memory; the step before it is the
limit: the startds per collector there (`ramp_limit`).

Updates lost are the collector's: HTCondor counts a gap in an ad's sequence numbers as a
lost update, and a startd whose connection to a collector timed out skips that collector
for a while (its StartLog says "Skipping update to collector"), each skipped update still
taking a number. On a TCG worker starting 32 startds at once (each running its benchmarks),
such timeouts happen while the collectors are a few percent busy; so the updates the
startds logged as skipped, from the step's start to the end of its hold window, are taken
off the collector's count before it is judged (`collector_losses`), and both are recorded;
with two tiers a child's skips are gaps at its top collector too (`skips_seen_at`).

`CcbLayouts` counts what the central hosts hold open for the workers with CCB on the child
collectors (GlideinWMS's default) and on hosts of its own (the paper's fix: "halved").
"""
import shlex
import time

from testbed.experiments.e5 import config as cfg
from testbed.experiments.e5.e5_scale import ramp_steps
from testbed.experiments.e5.uber import StartdSampler
from testbed.model.constants import E5_CHILD_COLLECTOR_PORT, HTCONDOR_PORT
from testbed.model.startd_memory import StartdMemory
from testbed.remote.poll import wait_for
from testbed.experiments.e5.parsers import (STARTD_COLLECTOR_LOG_SCRIPT, collector_load, cpu_percent, inbound_by_port,
                                      own_collector_ad, parse_long_ads, skips_between, startd_collector_skips,
                                      startd_names, sum_ad_updates, update_window)

RAMP_LIMITS = ("collector", "start", "memory", "missing", "lost", "ramp_max")
TIERS = (1, 2)


class _NotYet(Exception):
    """A wait of the ramp ran out of time: not an error, the step's outcome says so."""


# --- what the collectors hold, read through the schedd's gateway --------------------------------
def _only(constraint, args):
    """condor_status `args` restricted to the ads matching `constraint` (None: every ad)."""
    return f"-const {shlex.quote(constraint)} {args}" if constraint else args


def startds_listed(exp, targets, constraint=None):
    """{collector: set of worker startds whose slots it lists, or None when it did not answer};
    only the slot ads matching `constraint` when given."""
    workers = {w.name for w in exp.workers}
    out = exp.schedd.answers_by_pool(targets, _only(constraint, "-af Name"), timeout=120)
    return {t: (None if text is None else startd_names(text, workers)) for t, text in out.items()}


def ad_updates(exp, targets, constraint=None):
    """{collector: the updates counted and lost summed over its slot ads (sum_ad_updates)}."""
    return {t: sum_ad_updates(text) for t, text in
            exp.schedd.status_by_pool(targets, _only(constraint, "-af UpdatesTotal UpdatesLost"), timeout=120).items()}


def collector_loads(exp, targets):
    """{collector: its own statistics (collector_load)} from its daemon ad; a `host:port`
    target is the child collector on that host."""
    out = {}
    for t, text in exp.schedd.status_by_pool(targets, "-collector -l", timeout=120).items():
        host, _, port = t.partition(":")
        ad = own_collector_ad(parse_long_ads(text), host, cfg.child_name(host) if port else None)
        out[t] = collector_load(ad) if ad else {}
    return out


# --- what a step is and when the ramp stops ----------------------------------------------------
def central_groups(topo):
    """The host groups whose links to the workers carry the WAN: the central managers, and
    the CCB hosts that are not CMs (the workers' collectors, child collectors and CCBs are
    all remote from them, as remote glideins' are)."""
    return ["cm"] + (["ccb"] if cfg.dedicated_ccb_hosts(topo) else [])


def expected_startds(topo, per_worker):
    """The startd names every worker lists at a step of `per_worker` startds."""
    return {f"startd{i}@{w.name}.{topo.trust_domain}" for w in topo.with_role("worker")
            for i in range(1, per_worker + 1)}


def skips_seen_at(skipped, forwards):
    """{collector: updates skipped that it sees as gaps}: a child collector forwards the
    startds' ads with their sequence numbers, so an update a startd skipped at a child is a
    gap at the child's top collector too. `forwards`: {child target: its top collector}."""
    out = dict(skipped)
    for child, top in forwards.items():
        if skipped.get(child):
            out[top] = out.get(top, 0) + skipped[child]
    return out


def collector_losses(gaps, skipped):
    """{collector: updates lost at it}: the sequence gaps it counted in the hold window
    (`gaps`) less the updates the startds logged as skipped (`skipped`), never below 0."""
    return {c: max(0, n - skipped.get(c, 0)) for c, n in gaps.items()}


def judge_step(step, min_free_mb):
    """The limit a step's figures show, or None: `step` holds running ({worker: startd
    processes}), per_worker, answered ({collector: bool}), missing ({collector: [names]}
    at the collectors that must hold every startd), lost ({collector: updates lost at it in
    the hold window, collector_losses}), available_mb ({worker: MB})."""
    if not all(step["answered"].values()):
        return "collector"
    if any(n < step["per_worker"] for n in step["running"].values()):
        return "start"
    if any(mb is not None and mb < min_free_mb for mb in step["available_mb"].values()):
        return "memory"
    if any(step["missing"].values()):
        return "missing"
    if any(n > 0 for n in step["lost"].values()):
        return "lost"
    return None


def describe(limit, step, min_free_mb):
    """One sentence on why the ramp stopped at `step`."""
    if limit == "collector":
        return f"{', '.join(c for c, ok in sorted(step['answered'].items()) if not ok)} did not answer condor_status"
    if limit == "start":
        return (f"the workers ran {step['running']} of {step['per_worker']} startds each within the join window "
                "(the emulated CPU or memory could not start them)")
    if limit == "memory":
        low = {w: mb for w, mb in step["available_mb"].items() if mb is not None and mb < min_free_mb}
        return "worker memory: " + ", ".join(f"{w} {mb} MB available" for w, mb in sorted(low.items())) + \
            f" (below {min_free_mb} MB)"
    if limit == "missing":
        parts = [f"{c} lacks {len(names)} (e.g. {sorted(names)[0]})" for c, names in sorted(step["missing"].items())
                 if names]
        return "startds that never appeared in the join window: " + "; ".join(parts)
    if limit == "lost":
        skipped = step.get("skipped_seen") or step.get("skipped") or {}   # at a top: its children's too
        return "updates lost in the hold window: " + ", ".join(
            f"{c} {n}" + (f" (besides {skipped[c]} the startds skipped)" if skipped.get(c) else "")
            for c, n in sorted(step["lost"].items()) if n > 0)
    if limit == "ramp_max":
        return f"every step up to {step['per_worker']} startds per worker held; no limit below it"
    return f"unknown limit {limit!r}"


def ramp_limit(steps):
    """(startds per collector at the limit, startds per worker there, found): the startds
    the last step without a limit listed (0, 0 when the first step already failed); `found`
    False when no step failed (the limit is above the ramp, and the figure a lower bound)."""
    good = [s for s in steps if not s.get("limit")]
    found = any(s.get("limit") for s in steps)
    if not good:
        return 0, 0, found
    return good[-1]["held"], good[-1]["per_worker"], found


def ramp_plan(start, maximum, topo, memory, min_free_mb):
    """The ramp's steps (startds per worker, doubling from `start`); `maximum` 0: up to the
    most that every worker's memory holds (`memory`, a StartdMemory, with min_free_mb kept)."""
    if maximum <= 0:
        budget = StartdMemory(memory.per_startd_mb, memory.source, memory.base_mb, min_free_mb)
        maximum = min(budget.largest(w.memory_mb) for w in topo.with_role("worker"))
    return ramp_steps(start, max(start, maximum))[0]


def seconds_until(what, check, timeout, poll, host):
    """Seconds until check() holds, or None when `timeout` s passed first (a step's outcome)."""
    try:
        return float(wait_for(what, check, timeout, poll, host=host, error=_NotYet))
    except _NotYet:
        return None


def run_steps(step, steps, say, reason):
    """step(per_worker, t0, series) for each of `steps` in turn, say(step's figures) after
    each, until one shows a limit; {steps, series [(t, startds listed)], limit, reason
    (reason(limit, last step)), held, per_worker, found} (ramp_limit)."""
    t0, series, done = time.monotonic(), [], []
    for per_worker in steps:
        st = step(per_worker, t0, series)
        done.append(st)
        say(st)
        if st["limit"]:
            break
    last = done[-1]
    limit = last["limit"] or "ramp_max"
    held, per_worker, found = ramp_limit(done)
    return {"steps": done, "series": series, "limit": limit, "reason": reason(limit, last),
            "held": held, "per_worker": per_worker, "found": found}


# --- the ramp on a site ----------------------------------------------------------------------------
class CollectorRamp:
    """Runs one ramp: `exp` a ScaleExperiment, `tree` a CollectorTree in use (tiers 2) or None."""

    def __init__(self, exp, tree=None, slots=0, join_s=180, hold_s=120, min_free_mb=48, poll=5, echo=print):
        self.exp, self.topo, self.ssh, self.tree = exp, exp.topo, exp.ssh, tree
        self.slots, self.join_s, self.hold_s, self.min_free_mb = slots, join_s, hold_s, min_free_mb
        self.poll, self.echo = poll, echo
        self.sampler = StartdSampler(self.ssh, exp.workers)
        self.central = sorted({h.name for h in self.topo.with_role("cm") + self.topo.with_role("ccb")})
        self.forwards = {f"{c}:{E5_CHILD_COLLECTOR_PORT}": cfg.child_collector_top(self.topo, c, tree.placement)
                         for c in tree.children} if tree else {}

    def targets(self):
        """The collectors to read: the CMs' (one tier), and the running children (two)."""
        return self.tree.targets() if self.tree else [h.name for h in self.topo.with_role("cm")]

    def tops(self):
        return [h.name for h in self.topo.with_role("cm")]

    def skips(self):
        """{"skipped": {collector: n}, "timeouts": {collector: n}} summed over the workers'
        StartLogs since they began (startd_collector_skips)."""
        out = {"skipped": {}, "timeouts": {}}
        res = self.ssh.run_many({w.name: STARTD_COLLECTOR_LOG_SCRIPT for w in self.exp.workers}, timeout=60)
        for r in res.values():
            for key, counts in startd_collector_skips(r.stdout, HTCONDOR_PORT).items():
                for c, n in counts.items():
                    out[key][c] = out[key].get(c, 0) + n
        return out

    def _wait(self, what, check, timeout):
        return seconds_until(what, check, timeout, self.poll, self.exp.submit)

    def step(self, per_worker, t0, series):
        """Run `per_worker` startds on every worker and measure the step (see judge_step)."""
        skips_before = self.skips()
        cfg.use_startds(self.ssh, self.exp.workers, per_worker, self.slots)
        st = {"per_worker": per_worker, "started_s": None, "joined_s": None}
        running = {}

        def started():
            running.update(self.sampler.running())
            return all(n >= per_worker for n in running.values())

        st["started_s"] = self._wait(f"{per_worker} startds running on every worker", started, self.join_s)
        targets, want, seen = self.targets(), expected_startds(self.topo, per_worker), {}
        must_hold = self.tops()

        def joined():
            seen.update(startds_listed(self.exp, targets))
            held = len(seen.get(must_hold[0]) or ())
            series.append((round(time.monotonic() - t0, 1), held))
            return all(want <= (seen.get(t) or set()) for t in must_hold)

        st["joined_s"] = self._wait(f"{len(want)} startds in the collectors", joined, self.join_s)
        before, cpu_before, t_before = ad_updates(self.exp, targets), self.exp.daemon_stats(), time.monotonic()
        time.sleep(self.hold_s)
        window = update_window(before, ad_updates(self.exp, targets))
        cpu_after = self.exp.daemon_stats()
        skips = skips_between(skips_before, self.skips())
        seen.update(startds_listed(self.exp, targets))
        silent = [t for t in targets if seen.get(t) is None]
        if silent:  # one query missed under TCG is not yet a collector that does not answer
            seen.update(startds_listed(self.exp, silent))
        st.update(running=running, answered={t: seen.get(t) is not None for t in targets},
                  listed={t: len(seen.get(t) or ()) for t in targets},
                  held=min(len(seen.get(t) or ()) for t in must_hold),
                  missing={t: sorted(want - (seen.get(t) or set())) for t in must_hold},
                  updates=window, skipped=skips["skipped"], timeouts=skips["timeouts"],
                  skipped_seen=skips_seen_at(skips["skipped"], self.forwards))
        st.update(lost=collector_losses({t: w["lost"] for t, w in window.items()}, st["skipped_seen"]),
                  loads=collector_loads(self.exp, targets), memory=self.sampler.memory(),
                  cpu=cpu_percent(cpu_before, cpu_after, time.monotonic() - t_before))
        st["available_mb"] = {w: m["available_mb"] for w, m in st["memory"].items()}
        st["limit"] = judge_step(st, self.min_free_mb)
        return st

    def run(self, steps):
        """Every step in turn until one shows a limit (run_steps)."""
        def say(st):
            self.echo(f"  {st['per_worker']} startds per worker: {st['held']} listed by every CM, missing "
                      f"{sum(len(m) for m in st['missing'].values())}, lost {st['lost']} (skipped by the startds "
                      f"{st['skipped'] or 0}, connections timed out {st['timeouts'] or 0}), limit {st['limit']}")
        return run_steps(self.step, steps, say, lambda limit, last: describe(limit, last, self.min_free_mb))


# --- CCB on the child collectors or on hosts of its own ----------------------------------------------
class CcbLayouts:
    """Connections the workers hold open to the central managers, with child collectors on
    the CMs that are (`on-children`) or are not (`own-hosts`) also the workers' CCB servers;
    with shared port on the workers (`shared-port`: one CCB registration per worker) or
    without (`per-daemon`: every daemon registers, as on the paper's execute nodes)."""

    LAYOUTS = ("on-children", "own-hosts")
    CONFIGS = ("shared-port", "per-daemon")

    def __init__(self, exp, startds):
        self.exp, self.topo, self.startds = exp, exp.topo, startds

    def tree(self, layout, config="shared-port"):
        if layout not in self.LAYOUTS or config not in self.CONFIGS:
            raise ValueError(f"layout must be one of {', '.join(self.LAYOUTS)} and config one of "
                             f"{', '.join(self.CONFIGS)}, not {layout!r}, {config!r}")
        return cfg.CollectorTree(self.exp, self.startds, placement="cm", ccb=layout == "on-children",
                                 shared_port=config == "shared-port")

    def connections(self, samples=3, pause=3.0):
        """{cm: {port: established connections from the workers}}, each port's fewest over
        `samples` readings `pause` s apart (the steady count, not an update's passing
        connection)."""
        ips = {w.site_ip for w in self.exp.workers}
        cms = [h.name for h in self.topo.with_role("cm")]
        readings = []
        for i in range(samples):
            if i:
                time.sleep(pause)
            res = self.exp.ssh.run_many({h: "ss -Htn state established" for h in cms}, timeout=60)
            readings.append({h: inbound_by_port(r.stdout, ips) for h, r in res.items()})
        ports = {(h, p) for r in readings for h, by_port in r.items() for p in by_port}
        out = {h: {} for h in cms}
        for h, p in sorted(ports):
            out[h][p] = min(r.get(h, {}).get(p, 0) for r in readings)
        return out


def connection_total(by_cm):
    """Every connection the CMs hold for the workers (connections() summed)."""
    return sum(n for ports in by_cm.values() for n in ports.values())


def child_port_share(by_cm):
    """The connections on the child collectors' port, of connection_total."""
    return sum(ports.get(E5_CHILD_COLLECTOR_PORT, 0) for ports in by_cm.values())
