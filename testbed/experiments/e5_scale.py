"""E5: how much higher can HTCondor fly (seed 004) - a sleeper ramp to the first
limit, long-lived TCP streams per execute node, negotiation over the WAN, and
central-manager, collector and CCB failover with jobs running.

Scaling to the testbed: the paper's Uber glideins (n startds per core, sleeper
slots) are the workers' startds x sleeper slots of the topology, or more
startds per worker for one run (`--set startds_per_worker=N`). Running sleep
jobs are ramped in doubling steps up to the slots the collector sees, and the
ramp stops at the first limit: guest memory, jobs not reaching the step in time,
the schedd or the collector failing to answer, or no sleeper slots left.

Everything here either builds a command, parses what a command printed, or
decides (steps, limits, stream model, restarted jobs); `ScaleExperiment` runs
the commands on the site. The Robot library ScaleLibrary is thin over it.
"""
import datetime as dt
import json
import re
import shlex
import time
from collections import namedtuple

from testbed.experiments import e5_figures
from testbed.experiments.registry import Experiment, Param
from testbed.model.constants import (MEM_AVAILABLE_CMD, CONDOR_DAEMON_COMMS, E5_CHILD_COLLECTOR_CONF, E5_CHILD_COLLECTOR_PORT,
                                     E5_ROLE_ATTR, E5_STARTDS_CONF, E5_TREE_WORKER_CONF, HTCONDOR_PORT,
                                     NEGOTIATOR_LOG, SUBMIT_HOME, JobStatus)
from testbed.model.errors import RemoteError
from testbed.remote.health import ccb_contacts
from testbed.remote.poll import poll_until
from testbed.services.condor import submit_description

EXPERIMENT = Experiment(
    name="e5", title="How much higher can HTCondor fly", seed="004_b6b9f9503ced1c60",
    suite="robot/suites/e5_htcondor_scale.robot",
    params={
        "ramp_start": Param("int", "running sleep jobs at the first ramp step"),
        "ramp_max": Param("int", "the largest step tried (steps double from ramp_start)"),
        "startds_per_worker": Param("int", "startds per worker VM for this run (0: the topology's)"),
        "step_timeout_s": Param("int", "seconds a step may take before 'jobs' is the limit"),
        "min_free_mb": Param("int", "a pool guest's MemAvailable below this (MB) is the memory limit"),
        "streams_jobs": Param("int", "sleep jobs running on the worker whose TCP streams are counted (0 skips)"),
        "negotiation_requests": Param("int", "idle jobs that cannot match, each its own resource request"),
        "negotiation_rtts": Param("numbers", "schedd <-> central manager RTTs, ms", rows=True),
        "negotiation_timeout_s": Param("int", "seconds to wait for a negotiation cycle that saw every request"),
        "negotiation_cycles": Param("int", "cycles timed per RTT; the fastest is the point (TCG stalls "
                                           "stretch single cycles from 0.07 to 2.7 s on an idle `small`)"),
        "failover_jobs": Param("int", "sleep jobs running during the failovers (0: every slot but one)"),
        "cm_kill": Param("int", "1: hard-kill the central manager with the active negotiator (0 skips)"),
        "collector_kill": Param("int", "1: hard-kill one collector only (0 skips)"),
        "ccb_outage_s": Param("int", "seconds one CCB server stays down (0 skips)"),
        "failover_timeout_s": Param("int", "seconds a failover, a new match or a re-registration may take"),
        "tree_settle_s": Param("int", "seconds every slot runs a sleeper before a collector shape is read "
                                      "(0 skips the two-tier collector rows)"),
    },
    scales={
        # CI on `small` (16 sleeper slots) under TCG: a ramp 8, 16, 50 requests at 0 and
        # 100 ms, one CCB down for 30 s under 4 running jobs (measured with a ramp 4, 8, 16
        # and 60 s: 9.5 minutes; `--set ccb_outage_s=0` saves about 4). The stream count
        # restarts the workers' HTCondor twice (minutes under TCG): quick and full only
        # (--set streams_jobs=1 adds it at ci); so do the CM and collector kills.
        "ci": {"ramp_start": 8, "ramp_max": 16, "startds_per_worker": 0, "step_timeout_s": 240,
               "min_free_mb": 48, "streams_jobs": 0, "negotiation_requests": 50,
               "negotiation_rtts": [0, 100], "negotiation_timeout_s": 420, "negotiation_cycles": 5, "failover_jobs": 4,
               # ccb_outage_s 0 at ci: in the session-7 CI run the row took 665 s (441 s
               # until its 4 sleepers ran) and `./tb test` reached ~81 min; --set ccb_outage_s=30
               "cm_kill": 0, "collector_kill": 0, "ccb_outage_s": 0, "failover_timeout_s": 420,
               "tree_settle_s": 0},
        "quick": {"ramp_start": 16, "ramp_max": 512, "startds_per_worker": 0, "step_timeout_s": 600,
                  "min_free_mb": 48, "streams_jobs": 1, "negotiation_requests": 200,
                  "negotiation_rtts": [0, 100], "negotiation_timeout_s": 900, "negotiation_cycles": 5, "failover_jobs": 0,
                  "cm_kill": 1, "collector_kill": 1, "ccb_outage_s": 300, "failover_timeout_s": 600,
                  "tree_settle_s": 120},
        "full": {"ramp_start": 16, "ramp_max": 8192, "startds_per_worker": 0, "step_timeout_s": 1200,
                 "min_free_mb": 48, "streams_jobs": 1, "negotiation_requests": 1000,
                 "negotiation_rtts": [0, 100], "negotiation_timeout_s": 3600, "negotiation_cycles": 3, "failover_jobs": 0,
                 "cm_kill": 1, "collector_kill": 1, "ccb_outage_s": 1800, "failover_timeout_s": 900,
                 "tree_settle_s": 600},
    },
    profiles=("default",), row_profiles=("default", "collector-tuned"),
    metrics=("e5.ramp_running", "e5.ramp_step_seconds", "e5.ramp_startds", "e5.ramp_slots",
             "e5.collector_updates_total", "e5.collector_updates_lost", "e5.daemon_rss",
             "e5.daemon_cpu_seconds", "e5.daemon_cpu_percent", "e5.guest_mem_available", "e5.running_over_time",
             "e5.startds_over_time", "e5.max_running", "e5.jobs_per_gb",
             "e5.tcp_streams", "e5.tcp_streams_model", "e5.tcp_streams_after_over_before",
             "e5.negotiation_cycle", "e5.negotiation_cycle_median", "e5.negotiation_wan_over_lan", "e5.negotiation_round_trips_per_request",
             "e5.negotiation_prefetch", "e5.negotiation_prefetch_round_trips",
             "e5.cm_failover_negotiator", "e5.cm_failover_match", "e5.collector_failover_match",
             "e5.collector_failover_return", "e5.ccb_outage_match", "e5.ccb_reregister",
             "e5.jobs_restarted", "e5.tree_visible_seconds", "e5.tree_updates_total", "e5.tree_updates_lost",
             "e5.tree_negotiation_cycle"),
    x_params=("t", "step", "rtt_ms"),
    paper="results/paper/e5.yaml",
    tables=e5_figures.text,        # the headline figures beside the paper's
)

SLEEP_SECONDS = 86400  # sleepers run until the suite removes them
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
def role_constraint(role):
    """The ClassAd constraint that selects the suite's jobs tagged `role`."""
    return f'{E5_ROLE_ATTR} =?= "{role}"'


def observe_script(role):
    """One command on the submit host: job states of the suite's jobs with `role`, slot ads."""
    constraint = shlex.quote(role_constraint(role))
    return (f"echo '#Q'; condor_q -all -constraint {constraint} -af JobStatus 2>&1 && echo '#QOK'; "
            f"echo '#S'; condor_status -af Name State 2>&1 && echo '#SOK' || echo \"condor_status exit $?\"; true")


def _sections(text, names):
    out, current = {n: [] for n in names}, None
    for line in text.splitlines():
        s = line.strip()
        if s in {f"#{n}" for n in names}:
            current = s[1:]
        elif re.fullmatch(r"#[A-Z]", s):  # another section's marker
            current = None
        elif current:
            out[current].append(s)
    return out


SLOT_STATES = {"Owner", "Unclaimed", "Matched", "Claimed", "Preempting", "Backfill", "Drained"}


def startd_of_slot(name):
    """'slot3@startd2@worker1.small.testbed' -> 'startd2@worker1.small.testbed'."""
    return name.split("@", 1)[1] if re.match(r"^slot\d+(_\d+)?@", name) else name


def parse_observation(text):
    """{running, idle, held, schedd_ok, schedd_error, slots, claimed, startds, collector_ok,
    collector_error} from observe_script's output."""
    sec = _sections(text, ("Q", "S"))
    q, s = sec["Q"], sec["S"]
    obs = {"schedd_ok": bool(q) and q[-1] == "#QOK", "collector_ok": bool(s) and s[-1] == "#SOK"}
    states = [int(x) for x in (q[:-1] if obs["schedd_ok"] else []) if x.isdigit()]
    obs.update(running=states.count(JobStatus.RUNNING), idle=states.count(JobStatus.IDLE),
               held=states.count(JobStatus.HELD))
    if not obs["schedd_ok"]:
        obs["schedd_error"] = (q[-1] if q else "no output")[:160]
    slots = [line.split() for line in (s[:-1] if obs["collector_ok"] else [])
             if len(line.split()) == 2 and line.split()[1] in SLOT_STATES]  # not a warning on stderr
    obs.update(slots=len(slots), claimed=sum(1 for x in slots if x[1] == "Claimed"),
               startds=len({startd_of_slot(x[0]) for x in slots}))
    if not obs["collector_ok"]:
        obs["collector_error"] = (s[-1] if s else "no output")[:160]
    return obs


# SIGKILL every collector process without -local-name (the top-level one); fails when none
KILL_TOP_COLLECTOR = ("n=0; for p in $(pgrep -x condor_collecto); do tr '\\0' ' ' < /proc/$p/cmdline | "
                      "grep -q -- -local-name || { kill -KILL $p && n=$((n+1)); }; done; [ $n -gt 0 ]")
PS_SCRIPT = "ps -eo comm=,rss=,time="


def parse_cpu_time(text):
    """ps TIME '[DD-]HH:MM:SS' (or 'MM:SS') -> seconds."""
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def parse_ps(text):
    """{daemon: {count, rss_mb, cpu_s}} of HTCondor's processes (ps -eo comm=,rss=,time=)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] not in CONDOR_DAEMON_COMMS or not parts[1].isdigit():
            continue
        d = out.setdefault(CONDOR_DAEMON_COMMS[parts[0]], {"count": 0, "rss_mb": 0.0, "cpu_s": 0})
        d["count"] += 1
        d["rss_mb"] += int(parts[1]) / 1024
        d["cpu_s"] += parse_cpu_time(parts[2])
    return out


def cpu_percent(before, after, seconds):
    """{host: {daemon: % of one CPU}} between two daemon_stats samples `seconds` apart
    (processes that exited in between, e.g. shadows, take their CPU time with them)."""
    out = {}
    for host, daemons in after.items():
        for daemon, d in daemons.items():
            prev = before.get(host, {}).get(daemon, {}).get("cpu_s", 0)
            out.setdefault(host, {})[daemon] = max(0.0, d["cpu_s"] - prev) / seconds * 100 if seconds > 0 else 0.0
    return out


def _value(text):
    text = text.strip()
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return {"true": True, "false": False}.get(text.lower(), text)


def parse_long_ads(text):
    """ClassAds in `condor_status -l` form (Attr = value lines, ads separated by blank lines)."""
    ads, ad = [], {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if ad:
                ads.append(ad)
            ad = {}
            continue
        key, sep, value = line.partition(" = ")
        if sep and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key.strip()):
            ad[key.strip()] = _value(value)
    return ads


UPDATE_ATTR = re.compile(r"^Updates(Total|Lost|Initial)(?:_(\w+))?$")


def update_stats(ad):
    """The collector's own update statistics by ad type: {type: {total, lost, initial}},
    type 'all' for the unsuffixed totals (UpdatesTotal, UpdatesLost_<Type>, ...)."""
    out = {}
    for key, value in ad.items():
        m = UPDATE_ATTR.match(key)
        if m and isinstance(value, (int, float)) and not isinstance(value, bool):
            out.setdefault(m.group(2) or "all", {"total": 0, "lost": 0, "initial": 0})[m.group(1).lower()] = value
    return out


def sum_ad_updates(text):
    """{total, lost, ads} summed over `condor_status -af UpdatesTotal UpdatesLost` lines: the
    per-ad statistics a collector adds to every ad it holds (COLLECTOR_DAEMON_STATS), fresh
    with each update, unlike its own daemon ad (refreshed every COLLECTOR_UPDATE_INTERVAL)."""
    out = {"total": 0, "lost": 0, "ads": 0}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            out["total"] += int(parts[0])
            out["lost"] += int(parts[1])
            out["ads"] += 1
    return out


def update_window(before, after):
    """{collector: {total, lost, ads, window}}: the updates each collector counted between
    two readings of sum_ad_updates (`before`, `after`: {collector: {total, lost, ads}}).
    The per-ad statistics run over an ad's life in that collector, so a reading alone
    carries what came before the window (the restart, the sleepers' start). When the
    collector held other ads at the two readings, or a count went down (an ad replaced),
    the window cannot be taken: the `after` reading stands, with window False."""
    out = {}
    for name, a in after.items():
        b = before.get(name)
        d = {k: a[k] - b[k] for k in ("total", "lost")} if b and b["ads"] == a["ads"] else None
        if d is None or min(d.values()) < 0:
            out[name] = dict(a, window=False)
        else:
            out[name] = dict(d, ads=a["ads"], window=True)
    return out


def collector_name(ad):
    return str(ad.get("Machine") or ad.get("Name") or "?").split(".")[0]


def negotiation_cycle(ad, index=0):
    """One cycle of a negotiator ad (0 = the latest): start (epoch, the CM's clock),
    duration (s), jobs considered, idle jobs, matches, rejections."""
    def get(name, default=0):
        return ad.get(f"LastNegotiationCycle{name}{index}", default)
    return {"start": get("Time"), "duration": get("Duration"), "considered": get("NumJobsConsidered"),
            "idle": get("NumIdleJobs"), "matches": get("Matches"), "rejections": get("Rejections"),
            "phase4": get("Phase4Duration"), "schedulers": get("NumSchedulers"),
            "out_of_time": get("SubmittersOutOfTime", "")}


# The negotiator's ad counts a cycle's duration in whole seconds (end - start, both time_t),
# so a 0.4 s cycle reads 0 or 1 depending on where the second ticks. The CMs log with
# D_SUB_SECOND: the cycle's start and finish lines give its duration to the millisecond.
NEGOTIATOR_LOG_LINE = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) (.*)$")
CYCLE_STARTED, CYCLE_FINISHED = "Started Negotiation Cycle --", "Finished Negotiation Cycle --"
# Where a cycle talks to the schedd over the link: the prefetch of its resource-request list
# (NEGOTIATOR_PREFETCH_REQUESTS, on by default; up to NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE,
# 200, requests). The rest of an unmatched cycle (collector queries, accounting, matching)
# stays on the CM: on `small` under TCG it varies by 0.2-1.4 s between cycles and hides
# the WAN's round trips in the cycle's total.
PREFETCH_SPAN = ("Starting prefetch negotiation for", "Prefetch summary:")
NEGOTIATOR_LOG_MARKS = (CYCLE_STARTED, CYCLE_FINISHED, *PREFETCH_SPAN)


# A cycle from the NegotiatorLog: start epoch, duration s, and `prefetch`, the seconds it
# spent fetching the schedds' resource-request lists (None when it fetched none).
LoggedCycle = namedtuple("LoggedCycle", "start duration prefetch")


def _span(marks, span):
    first, last = marks.get(span[0]), marks.get(span[1])
    return last - first if first is not None and last is not None and last >= first else None


def logged_cycles(text, utc_offset_s=0):
    """[LoggedCycle] of every complete cycle in a NegotiatorLog written with D_SUB_SECOND
    (timestamps in the CM's local time, `utc_offset_s` east of UTC)."""
    out, started, marks = [], None, {}
    for line in text.splitlines():
        m = NEGOTIATOR_LOG_LINE.match(line)
        if not m:
            continue
        stamp = dt.datetime.strptime(m.group(1), "%m/%d/%y %H:%M:%S.%f").replace(tzinfo=dt.timezone.utc)
        t, what = stamp.timestamp() - utc_offset_s, m.group(2)
        if CYCLE_STARTED in what:
            started, marks = t, {}
        elif started is None:
            continue
        elif CYCLE_FINISHED in what:
            prefetch = _span(marks, PREFETCH_SPAN)
            out.append(LoggedCycle(started, round(t - started, 3), None if prefetch is None else round(prefetch, 3)))
            started = None
        elif PREFETCH_SPAN[0] in what:
            marks.setdefault(PREFETCH_SPAN[0], t)      # the first schedd's prefetch starts the span
        elif PREFETCH_SPAN[1] in what:
            marks[PREFETCH_SPAN[1]] = t
    return out


def matching_logged_cycle(cycles, start_epoch, whole_s, slack_s=1.5):
    """The logged cycle the ad reports (start `start_epoch`, `whole_s` whole seconds): the
    one that started within `slack_s` of it and agrees with the whole seconds; None when the
    log holds no such cycle."""
    near = [(abs(c.start - start_epoch), i) for i, c in enumerate(cycles)
            if abs(c.start - start_epoch) <= slack_s and abs(c.duration - float(whole_s)) < 1.0 + 1e-6]
    return cycles[min(near)[1]] if near else None


def fastest_and_median(durations):
    """(fastest, median) of a point's cycle durations: the fastest is the least disturbed by
    the emulator's stalls, which only ever lengthen a cycle."""
    d = sorted(durations)
    if not d:
        raise ValueError("no cycle durations")
    mid = len(d) // 2
    return d[0], (d[mid] if len(d) % 2 else round((d[mid - 1] + d[mid]) / 2, 3))


def utc_offset_seconds(z):
    """`date +%z` text (+0100, -0530) -> seconds east of UTC."""
    z = z.strip()
    if not re.fullmatch(r"[+-]\d{4}", z):
        return 0
    sign = -1 if z[0] == "-" else 1
    return sign * (int(z[1:3]) * 3600 + int(z[3:5]) * 60)


def latest_negotiator(ads):
    """The negotiator ad with the most recent cycle (a dead CM's ad may linger)."""
    ads = [a for a in ads if "LastNegotiationCycleTime0" in a]
    return max(ads, key=lambda a: a["LastNegotiationCycleTime0"]) if ads else None


def cycle_saw_requests(cycle, after, requests):
    """True once a cycle that started after `after` (CM clock) considered all `requests`."""
    return cycle["start"] > after and cycle["considered"] >= requests


# --- TCP streams per execute node --------------------------------------------------------
SS_SCRIPT = "ss -Htnp state established"


def parse_ss(text, own_ip, hosts_by_ip):
    """Established TCP connections of a host to other testbed hosts (ss -Htnp state
    established): [(process, peer host, peer port)]. SSH (port 22) and loopback are not
    counted; nor are peers outside the testbed."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        addrs = [p for p in parts if re.match(r"^\[?[0-9a-fA-F:.]+\]?(%\S+)?:\d+$", p)]
        if len(addrs) < 2:
            continue
        local, peer = addrs[0], addrs[1]
        lip, lport = local.rsplit(":", 1)
        pip, pport = peer.rsplit(":", 1)
        pip = pip.strip("[]").replace("::ffff:", "")
        lip = lip.strip("[]").replace("::ffff:", "")
        if "22" in (lport, pport) or pip.startswith("127.") or pip == own_ip or pip not in hosts_by_ip:
            continue
        m = re.search(r'users:\(\("([^"]+)"', line)
        out.append((CONDOR_DAEMON_COMMS.get(m.group(1), m.group(1)) if m else "?", hosts_by_ip[pip], int(pport)))
    return out


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


def count_inbound(text, port, peer_ips):
    """Established connections (ss -Htn state established) to local `port` from `peer_ips`:
    a CCB server's (and its collector's) view of who is connected to it."""
    n = 0
    for line in text.splitlines():
        addrs = [p for p in line.split() if re.match(r"^\[?[0-9a-fA-F:.]+\]?(%\S+)?:\d+$", p)]
        if len(addrs) < 2:
            continue
        lport = addrs[0].rsplit(":", 1)[1]
        pip = addrs[1].rsplit(":", 1)[0].strip("[]").replace("::ffff:", "")
        if lport == str(port) and pip in peer_ips:
            n += 1
    return n


def address_uses_shared_port(sinful):
    """A daemon behind shared port has `sock=` in its sinful string."""
    return "sock=" in str(sinful)


# --- failover ------------------------------------------------------------------------------
START_ATTRS = ["ClusterId", "ProcId", "JobStatus", "NumJobStarts", "NumShadowStarts", "RemoteHost"]


def not_yet_started(starts):
    """Running jobs whose ad does not show their start yet: the schedd bumps NumShadowStarts
    and NumJobStarts a while after JobStatus turns 2 (minutes with 199 shadows starting
    on `default`'s one emulated submit CPU), and a baseline taken before would read
    0 -> 1 as a restart."""
    return sorted(job for job, st in starts.items() if st[0] == JobStatus.RUNNING and (st[1] < 1 or st[2] < 1))


def baseline_ready(starts):
    """True when there are jobs and every running one shows its start."""
    return bool(starts) and not not_yet_started(starts)


def job_starts(ads):
    """{'c.p': (JobStatus, NumJobStarts, NumShadowStarts)}."""
    return {f"{a.get('ClusterId')}.{a.get('ProcId')}": (a.get("JobStatus"), a.get("NumJobStarts", 0) or 0,
                                                        a.get("NumShadowStarts", 0) or 0) for a in ads}


def restarted_jobs(before, after):
    """Jobs running before that stopped, vanished or started again: [(job, why)]."""
    out = []
    for job, (status, starts, shadows) in sorted(before.items()):
        if status != JobStatus.RUNNING:
            continue
        now = after.get(job)
        if now is None:
            out.append((job, "left the queue"))
        elif now[0] != JobStatus.RUNNING:
            out.append((job, f"is {JobStatus(now[0]).label if now[0] in list(JobStatus) else now[0]}"))
        elif now[1] != starts or now[2] != shadows:
            out.append((job, f"NumJobStarts {starts}->{now[1]}, NumShadowStarts {shadows}->{now[2]}"))
    return out


def pick_ccb(topo, active_cm):
    """The CCB server to take down: a CCB host that is not the active central manager."""
    ccbs = [h.name for h in (topo.with_role("ccb") or topo.with_role("cm"))]
    others = [h for h in ccbs if h != active_cm]
    return (others or ccbs)[0]


def startds_registered_with(slot_lines, ccb_ip):
    """Startds whose address (slot ads: `Name MyAddress`) names the CCB at `ccb_ip`, and all startds."""
    registered, every = set(), set()
    for line in slot_lines:
        parts = line.split(None, 1)
        if len(parts) != 2:
            continue
        startd = startd_of_slot(parts[0])
        every.add(startd)
        if any(c.startswith(f"{ccb_ip}:") for c in ccb_contacts(parts[1])):
            registered.add(startd)
    return registered, every


# --- more startds per worker for one run ---------------------------------------------------
def extra_startd_names(host, total):
    """The local names of the startds a run adds to a worker beyond the topology's count
    (each has its own EXECUTE directory, `$(EXECUTE)/<name>`)."""
    return [f"startd{i}" for i in range(host.startds + 1, total + 1)]


def extra_startds_conf(host, total):
    """A config fragment adding startds startds+1..total to a worker (the same names and
    files as the rendered worker.conf), or '' when the topology already runs that many."""
    lines = [f"# E5 run: {total} startds on {host.name} (topology: {host.startds}); "
             f"removed by the E5 suite teardown"]
    if total <= host.startds:
        return ""
    for name in extra_startd_names(host, total):
        n = name.upper()
        lines += [f"{n} = $(STARTD)", f"DAEMON_LIST = $(DAEMON_LIST) {n}", f"DC_DAEMON_LIST = + {n}",
                  f"{n}.STARTD_NAME = {n.lower()}", f"{n}.STARTD_LOG = $(LOG)/StartLog.{n}",
                  f"{n}.EXECUTE = $(EXECUTE)/{n.lower()}",
                  f"{n}.STARTD_ADDRESS_FILE = $(LOG)/.startd_address.{n}",
                  f"{n}.STARTD_HISTORY = $(SPOOL)/startd_history.{n}",
                  f'{n}_ENVIRONMENT = "_CONDOR_STARTER_LOG=$(LOG)/StarterLog.{n}"']
    return "\n".join(lines) + "\n"


def startds_script(text, execute_dirs=()):
    """Install (or, for '', remove) the extra-startds fragment; reconfig the master, which
    starts or stops the startds in its DAEMON_LIST. A startd whose EXECUTE directory is
    missing exits at start (status 4) and the master retries it forever, so each added
    startd's directory (`execute_dirs`, names under $(EXECUTE)) is made first, as
    provisioning makes the topology's."""
    if not text:
        return f"if [ -e {E5_STARTDS_CONF} ]; then rm -f {E5_STARTDS_CONF}; condor_reconfig >/dev/null; fi"
    dirs = " ".join(shlex.quote(d) for d in execute_dirs)
    return (f"execute=$(condor_config_val EXECUTE) && for d in {dirs}; do "
            f'install -d -m 0755 -o condor -g condor "$execute/$d" || exit 1; done && '
            f"printf %s {shlex.quote(text)} > {E5_STARTDS_CONF}.new && "
            f"if ! cmp -s {E5_STARTDS_CONF}.new {E5_STARTDS_CONF}; then mv {E5_STARTDS_CONF}.new {E5_STARTDS_CONF}; "
            f"condor_reconfig >/dev/null; else rm -f {E5_STARTDS_CONF}.new; fi")


class ScaleExperiment:
    """Runs E5's commands on a site: submit tagged sleepers, observe, sample, fail over."""

    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool
        self.submit = topo.role_host("submit").name
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
        constraint = shlex.quote(role_constraint(role))
        out = self.ssh.run(self.submit, f"condor_q -all -constraint {constraint} -json -attributes "
                                        f"{','.join(attrs)}", timeout=120)
        text = out.stdout.strip()
        return json.loads(text) if text else []

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
        return poll_until(running, timeout, poll, why)

    def ensure_running(self, role, count, timeout):
        """`count` sleepers of `role` running (submitting only what is missing): the
        failover tests share one set of running jobs without keeping state in Python."""
        obs = self.observe(role)
        have = obs["running"] + obs["idle"]
        if have < count:
            self.submit_sleepers(count - have, role)
        return self.wait_running(role, count, timeout)

    def running_baseline(self, role, timeout, poll=5):
        """job_starts of `role`'s jobs once every running one shows its start (NumJobStarts
        and NumShadowStarts >= 1); RemoteError after `timeout` s, rather than a baseline
        that would count first starts as restarts."""
        last = {}

        def ready():
            last["starts"] = job_starts(self.job_ads(role))
            return baseline_ready(last["starts"])

        def why():
            late = not_yet_started(last["starts"])
            running = sum(1 for st in last["starts"].values() if st[0] == JobStatus.RUNNING)
            return (f"{len(late)} of {running} running {role} jobs show no start yet (NumJobStarts or "
                    f"NumShadowStarts 0) after {timeout} s, e.g. {', '.join(late[:5]) or 'none running'}")
        poll_until(ready, timeout, poll, why)
        return last["starts"]

    # --- sampling ----------------------------------------------------------------------------
    def daemon_stats(self):
        """{host: {daemon: {count, rss_mb, cpu_s}}} on the pool's hosts."""
        res = self.ssh.run_many({h: PS_SCRIPT for h in self.pool_hosts}, timeout=60)
        return {h: parse_ps(r.stdout) for h, r in res.items() if r.ok}

    def collector_ads(self):
        out = self.ssh.run(self.submit, "condor_status -collector -l", check=False, timeout=60)
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
        res = self.ssh.run(self.submit, "; ".join(
            f"echo '#{i}'; condor_status -pool {h} -af UpdatesTotal UpdatesLost 2>/dev/null" for i, h in
            enumerate(cms)), check=False, timeout=60)
        for i, h in enumerate(cms):
            part = res.stdout.split(f"#{i}\n", 1)[-1].split(f"#{i + 1}\n", 1)[0] if f"#{i}" in res.stdout else ""
            slot = sum_ad_updates(part)
            if slot["ads"]:
                out.setdefault(h, {})["slot_ads"] = {"total": slot["total"], "lost": slot["lost"],
                                                     "initial": slot["ads"], "ad_time": 0}
        return out

    def negotiator_ad(self, cm=None):
        """The negotiator's ad with its latest cycles: asked of the negotiator on `cm` itself
        (its query handler publishes the cycle statistics fresh), else from the collector
        (where the negotiator's ad is refreshed every NEGOTIATOR_UPDATE_INTERVAL, 300 s by
        default: a wait for a new cycle may then take that long)."""
        if cm:
            fqdn = f"{cm}.{self.topo.trust_domain}"  # the negotiator's Name (the hosts file's first name)
            out = self.ssh.run(self.submit, f"condor_status -negotiator -direct {fqdn} -l", check=False, timeout=60)
            ad = latest_negotiator(parse_long_ads(out.stdout)) if out.ok else None
            if ad:
                return ad
        out = self.ssh.run(self.submit, "condor_status -negotiator -l", check=False, timeout=60)
        return latest_negotiator(parse_long_ads(out.stdout)) if out.ok else None

    def next_cycle(self, cm, requests, after, timeout, poll=2.0, reschedule_every=30.0, stale_after=90.0,
                   clock=time.monotonic, sleep=time.sleep):
        """The first negotiation cycle that starts after `after` (the CM's clock) and
        considers `requests` jobs, as (cm, cycle). Not the cycle's idle count: the negotiator
        sums that over submitter names, and another schedd's stale ad for the same user (the
        DTN's, left from a flocked job of an earlier suite for up to 15 minutes) made it read
        1 while the cycle considered all 50 requests. condor_reschedule asks for a cycle at once and
        again every `reschedule_every` s (a lost request would otherwise leave the wait to
        NEGOTIATOR_INTERVAL). When `cm`'s negotiator shows no new cycle for `stale_after` s,
        the active CM is looked up again: HAD may have moved the negotiator meanwhile."""
        started = fresh = clock()
        asked = last = last_start = None
        moves = []
        while True:
            now = clock()
            if asked is None or now - asked >= reschedule_every:
                self.ssh.run(self.submit, "condor_reschedule >/dev/null 2>&1", check=False, timeout=60)
                asked = now
            ad = self.negotiator_ad(cm)
            if ad:
                last = negotiation_cycle(ad)
                if cycle_saw_requests(last, after, requests):
                    return cm, last
                if last["start"] != last_start:
                    last_start, fresh = last["start"], now
            if now - fresh >= stale_after:
                try:
                    active = self.pool.active_cm()
                except RemoteError as e:
                    active = None
                    moves.append(str(e))
                if active and active != cm:
                    moves.append(f"negotiator moved {cm} -> {active}")
                    cm = active
                fresh = now
            if now - started > timeout:
                idle = self.pool.queued(f"{role_constraint('negotiation')} && JobStatus == {JobStatus.IDLE:d}")
                raise RemoteError(f"no negotiation cycle considered {requests} jobs within {timeout:.0f} s "
                                  f"(negotiator on {cm}; the schedd has {idle} idle; latest cycle: {last}"
                                  + (f"; {'; '.join(moves)}" if moves else "") + ")")
            sleep(poll)

    def logged_cycle(self, cm, cycle):
        """`cycle` (from negotiation_cycle) as the CM's NegotiatorLog has it, to the
        millisecond (a LoggedCycle), or None when the log does not have it."""
        out = self.ssh.run(cm, f"date +%z; grep -aF -e {' -e '.join(shlex.quote(m) for m in NEGOTIATOR_LOG_MARKS)} "
                               f"{shlex.quote(NEGOTIATOR_LOG)} | tail -n 200", check=False, timeout=60)
        if not out.ok or not out.stdout.strip():
            return None
        first, _, rest = out.stdout.partition("\n")
        cycles = logged_cycles(rest, utc_offset_seconds(first))
        return matching_logged_cycle(cycles, float(cycle["start"]), cycle["duration"])

    def host_clock(self, host):
        return float(self.ssh.run(host, "date +%s.%N").stdout.strip())

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
            step_t0, watch = time.monotonic(), LimitWatch()
            while True:
                obs = self.observe("ramp")
                series.append((round(time.monotonic() - t0, 1), obs["running"], obs["startds"]))
                seen = first_limit(target, obs, time.monotonic() - step_t0, timeout, min_free_mb)
                limit = watch.judge(seen, obs)
                if seen and not limit:
                    echo(f"  step {target}: the {seen} did not answer ({watch.misses[-1]}); "
                         f"miss {watch.in_a_row} of {watch.needed} before it counts as the limit")
                if limit or (not seen and obs["running"] >= target):
                    break
                time.sleep(poll)
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

    def restart_condor(self, hosts):
        self.ssh.run_many({h: "systemctl restart condor.service" for h in hosts}, check=False, timeout=180)

    def wait_startds(self, hosts, shared_port, timeout, poll=10):
        """Seconds until every planned slot of `hosts` is back in the collector, from
        startds whose address does (or does not) go through shared port."""
        started, names = time.monotonic(), {h.name for h in hosts}
        want = sum(h.total_slots for h in hosts)
        while True:
            out = self.ssh.run(self.submit, "condor_status -af Name MyAddress", check=False).stdout
            slots = [line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2]
            mine = [s for s in slots if startd_of_slot(s[0]).split("@")[-1].split(".")[0] in names]
            ok = [s for s in mine if address_uses_shared_port(s[1]) == shared_port]
            if len(mine) >= want and len(ok) == len(mine):
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise RemoteError(f"{len(ok)} of {want} slots of {', '.join(sorted(names))} back "
                                  f"{'with' if shared_port else 'without'} shared port after {timeout} s")
            time.sleep(poll)

    # --- failover ----------------------------------------------------------------------------
    def kill_collector(self, host):
        """SIGKILL the collector only (its master restarts it, as after a crash)."""
        # the top-level collector only: a child collector (-local-name COLLECTOR2) has the same name
        self.ssh.run(host, KILL_TOP_COLLECTOR)

    def stop_collector(self, host):
        """Take a CCB server down until `start_collector`: the master keeps it off."""
        self.ssh.run(host, "condor_off -daemon collector >/dev/null")

    def start_collector(self, host):
        self.ssh.run(host, "condor_on -daemon collector >/dev/null")

    def collector_running(self, host):
        return self.ssh.run(host, "pgrep -x condor_collecto >/dev/null && echo yes || echo no",
                            check=False).stdout.strip() == "yes"

    def wait_collector_stopped(self, host, timeout=60, poll=2):
        return poll_until(lambda: not self.collector_running(host), timeout, poll,
                          f"the collector on {host} still runs {timeout} s after condor_off")

    def worker_connections(self, host):
        """Established connections from the workers to `host`'s port 9618 (CCB + collector)."""
        ips = {h.site_ip for h in self.workers}
        out = self.ssh.run(host, "ss -Htn state established", check=False).stdout
        return count_inbound(out, HTCONDOR_PORT, ips)

    def wait_new_job(self, role, timeout, poll=5):
        """Submit one sleeper of `role`; seconds until it runs."""
        started = time.monotonic()
        self.submit_sleepers(1, role, seconds=SLEEP_SECONDS)
        self.wait_running(role, 1, timeout, poll)
        return time.monotonic() - started

    def wait_reregistered(self, ccb_host, connections, timeout, poll=10):
        """Seconds until the workers hold at least `connections` established connections to
        the CCB server again (its count before the outage) and every startd's address
        names it."""
        ip, last = self.topo.hosts[ccb_host].site_ip, {}

        def registered_again():
            out = self.ssh.run(self.submit, "condor_status -af Name MyAddress", check=False).stdout
            registered, every = last["startds"] = startds_registered_with(out.splitlines(), ip)
            now = last["connections"] = self.worker_connections(ccb_host)
            return every and registered == every and now >= connections

        def why():
            registered, every = last["startds"]
            return (f"{len(registered)} of {len(every)} startds name CCB {ccb_host} in their address "
                    f"and the workers hold {last['connections']} of {connections} connections to it "
                    f"{timeout} s after it returned")
        return poll_until(registered_again, timeout, poll, why)

    def wait_collector_sees_startds(self, host, count, timeout, poll=10):
        """Seconds until the collector on `host` lists `count` startds again."""
        seen = set()

        def sees_them():
            out = self.ssh.run(self.submit, f"condor_status -pool {host} -af Name", check=False)
            seen.clear()
            seen.update(startd_of_slot(n.strip()) for n in out.stdout.splitlines() if n.strip() and out.ok)
            return len(seen) >= count
        return poll_until(sees_them, timeout, poll,
                          lambda: f"collector on {host} sees {len(seen)} of {count} startds after {timeout} s")


# --- two-tier collectors (GlideinWMS style, section 4.1) -----------------------------------
def child_collector_hosts(topo):
    """Where the child collectors run: the CCB hosts that are not central managers (the
    default topology's ccb1, ccb2) when there is one for each CM, else the central
    managers themselves."""
    cms = sorted(h.name for h in topo.with_role("cm"))
    ccbs = [h.name for h in topo.with_role("ccb") if h.name not in cms]
    return ccbs if len(ccbs) >= len(cms) else cms


def child_collector_top(topo, host):
    """The one top-level collector (a CM) the child on `host` forwards to: children are
    paired with the CMs in turn, as GlideinWMS pairs its secondary collectors with each
    HA central manager. One target per child: a collector reconnects to its view hosts
    under one shared time slice (5% of its time), so after a slow connect to the first
    target the second waits minutes under TCG; seen on `small`, where cm2's collector got
    no forwarded update in a 120 s window while cm1's got 40."""
    cms = sorted(h.name for h in topo.with_role("cm"))
    return cms[child_collector_hosts(topo).index(host) % len(cms)]


def child_collector_conf(topo, host):
    """A child collector on `host` at E5_CHILD_COLLECTOR_PORT (its own port, no shared port,
    no CCB) forwarding what the startds send it to its top-level collector."""
    top = f"{child_collector_top(topo, host)}:{HTCONDOR_PORT}"
    n = "COLLECTOR2"
    return "\n".join([
        f"# E5 two-tier collectors: child collector on {host}; removed after the row",
        f"{n} = $(COLLECTOR)", f"{n}_ARGS = -f -p {E5_CHILD_COLLECTOR_PORT}",
        f"DAEMON_LIST = $(DAEMON_LIST) {n}", f"DC_DAEMON_LIST = + {n}",
        f"{n}.COLLECTOR_NAME = child-{host}", f"{n}.USE_SHARED_PORT = False",
        f"{n}.COLLECTOR_LOG = $(LOG)/CollectorLog.child", f"{n}.COLLECTOR_ADDRESS_FILE = $(LOG)/.collector_address.child",
        f"{n}.ENABLE_CCB_SERVER = False", f"{n}.CONDOR_VIEW_HOST = {top}",
        f"{n}.UPDATE_VIEW_COLLECTOR_WITH_TCP = True"]) + "\n"


def tree_worker_conf(topo, worker, startds=None):
    """Worker `worker`'s daemons send their ads to one child collector per top-level
    collector instead of to the CMs (section 4.1, GlideinWMS under HA: every CM receives
    every update, through a child of its own). Within a CM's children, startds are dealt
    round-robin across the workers; the master goes with its first startd. One child per
    CM and daemon: sending to two children of one CM would deliver each update to it
    twice, with the same sequence number, which its statistics count as lost updates.
    `startds`: this run's startds per worker (default the topology's)."""
    groups = {}
    for child in child_collector_hosts(topo):
        groups.setdefault(child_collector_top(topo, child), []).append(f"{child}:{E5_CHILD_COLLECTOR_PORT}")
    workers = [h.name for h in topo.with_role("worker")]
    n = max(1, startds or topo.hosts[worker].startds)
    first = workers.index(worker) * n

    def hosts(k):
        return ", ".join(group[k % len(group)] for _, group in sorted(groups.items()))

    lines = ["# E5 two-tier collectors: each daemon updates one child per CM; removed after the row",
             f"COLLECTOR_HOST = {hosts(first)}"]
    lines += [f"STARTD{i}.COLLECTOR_HOST = {hosts(first + i - 1)}" for i in range(1, n + 1)]
    return "\n".join(lines) + "\n"


def tops_without_updates(stats, tops):
    """The top-level collectors (`tops`: CM names) that counted no update over the window
    in `stats` (update_window's result): in the tree every CM must hear every startd."""
    return [t for t in tops if t not in stats or stats[t]["total"] <= 0]


def fragment_script(path, text, restart_had=False):
    """Install (text) or remove ('') a config fragment; reconfig when it changed. A CM
    restarts HAD after a reconfig (23.9's HAD drops its leader state on reconfig)."""
    had = "; condor_restart -subsystem had >/dev/null" if restart_had else ""
    if not text:
        return f"if [ -e {path} ]; then rm -f {path}; condor_reconfig >/dev/null{had}; fi; true"
    return (f"printf %s {shlex.quote(text)} > {path}.new && if ! cmp -s {path}.new {path}; then "
            f"mv {path}.new {path}; condor_reconfig >/dev/null{had}; else rm -f {path}.new; fi")


def fresh_slots(lines, since):
    """Slots (`Name DaemonStartTime` lines) whose startd started at or after `since`."""
    n = 0
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and int(parts[1]) >= since:
            n += 1
    return n


class CollectorTree:
    """Switches the pool between one collector tier and a two-tier tree, and measures it."""

    def __init__(self, exp, startds=0):
        self.exp, self.topo, self.ssh = exp, exp.topo, exp.ssh
        self.startds = startds  # this run's startds per worker (0: the topology's)

    def use(self, shape):
        """Install (`tree`) or remove (`flat`) the child collectors and the workers'
        fragment. Returns the hosts whose configuration changed."""
        tree = shape == "tree"
        children = child_collector_hosts(self.topo)
        cmds = {h: fragment_script(E5_CHILD_COLLECTOR_CONF, child_collector_conf(self.topo, h) if tree else "",
                                   restart_had=self.topo.hosts[h].has("cm")) for h in children}
        for w in self.exp.workers:
            conf = tree_worker_conf(self.topo, w.name, max(w.startds, self.startds)) if tree else ""
            cmds[w.name] = fragment_script(E5_TREE_WORKER_CONF, conf)
        res = self.ssh.run_many(cmds, timeout=120)
        bad = [f"{h}: {(r.stderr or r.stdout).strip()[-160:]}" for h, r in res.items() if not r.ok]
        if bad:
            raise RemoteError(f"collector shape {shape}: " + "; ".join(bad))
        return sorted(cmds)

    def installed(self):
        """True while any host still has a fragment of the tree."""
        hosts = {h: E5_CHILD_COLLECTOR_CONF for h in child_collector_hosts(self.topo)}
        hosts.update({w.name: E5_TREE_WORKER_CONF for w in self.exp.workers})
        res = self.ssh.run_many({h: f"test -e {path} && echo yes || echo no" for h, path in hosts.items()},
                                timeout=60)
        return any(r.stdout.strip() == "yes" for r in res.values())

    def children_running(self):
        res = self.ssh.run_many({h: f"ss -Hltn 'sport = :{E5_CHILD_COLLECTOR_PORT}' | wc -l"
                                 for h in child_collector_hosts(self.topo)}, timeout=60)
        return {h: r.ok and r.stdout.strip().isdigit() and int(r.stdout.strip()) > 0 for h, r in res.items()}

    def time_to_visible(self, slots, timeout, poll=5):
        """Restart the workers' HTCondor; seconds until the first top-level collector lists
        `slots` slots from startds started after the restart."""
        w = self.exp.workers[0].name
        since = int(float(self.ssh.run(w, "date +%s").stdout.strip()))
        top = self.topo.with_role("cm")[0].name
        started = time.monotonic()
        self.exp.restart_condor([h.name for h in self.exp.workers])
        while True:
            out = self.ssh.run(self.exp.submit, f"condor_status -pool {top} -af Name DaemonStartTime",
                               check=False).stdout
            seen = fresh_slots(out.splitlines(), since)
            if seen >= slots:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise RemoteError(f"{seen} of {slots} slots visible in the collector on {top} {timeout} s "
                                  f"after restarting the workers")
            time.sleep(poll)

    def update_stats(self):
        """{collector host[:port]: {total, lost, ads}} over the slot ads each collector holds."""
        targets = [h.name for h in self.topo.with_role("cm")]
        running = self.children_running()
        targets += [f"{h}:{E5_CHILD_COLLECTOR_PORT}" for h in child_collector_hosts(self.topo) if running.get(h)]
        res = self.ssh.run(self.exp.submit, "; ".join(
            f"echo '#{i}'; condor_status -pool {t} -af UpdatesTotal UpdatesLost 2>/dev/null"
            for i, t in enumerate(targets)), check=False, timeout=120)
        out = {}
        for i, t in enumerate(targets):
            part = res.stdout.split(f"#{i}\n", 1)[-1].split(f"#{i + 1}\n", 1)[0] if f"#{i}" in res.stdout else ""
            out[t] = sum_ad_updates(part)
        return out
