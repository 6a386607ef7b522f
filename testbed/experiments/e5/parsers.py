"""E5's parsers of what HTCondor and the kernel print on a site (pure functions, no SSH): the
`condor_q`/`condor_status` observation of a pool, ClassAds in `-l` form and the collector's
update statistics, the negotiator's ads and its NegotiatorLog (D_SUB_SECOND), `ps` and
`ss` output."""
import datetime as dt
import re
from collections import namedtuple

from testbed.model.constants import CONDOR_DAEMON_COMMS, CONDOR_LOG_DIR, JobStatus
from testbed.services.health import ccb_contacts


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


# The collector's own statistics (its daemon ad, `condor_status -collector -l`; HTCondor's
# manual, "Collector ClassAd Attributes"), refreshed in the ad every COLLECTOR_UPDATE_INTERVAL
# (MyCurrentTime says when): updates received and lost by sequence number, the query workers
# it forked and the queries waiting for one or dropped, the startd ads it counted.
COLLECTOR_LOAD_ATTRS = ("UpdatesTotal", "UpdatesLost", "UpdatesLostRatio", "UpdatesLostMax", "UpdatesInitial",
                        "ActiveQueryWorkers", "ActiveQueryWorkersPeak", "PendingQueries", "PendingQueriesPeak",
                        "DroppedQueries", "RecentDroppedQueries", "StartdAds", "StartdAdsPeak",
                        "RecentDaemonCoreDutyCycle", "MyCurrentTime")


def collector_load(ad):
    """{attribute: number} of COLLECTOR_LOAD_ATTRS that the collector ad `ad` has."""
    return {k: ad[k] for k in COLLECTOR_LOAD_ATTRS
            if isinstance(ad.get(k), (int, float)) and not isinstance(ad.get(k), bool)}


CHILD_COLLECTOR_PREFIX = "child-"   # E5's child collectors are named child-<host> (COLLECTOR_NAME)


def own_collector_ad(ads, host, child_name=None):
    """The ad of the collector on `host` among collector ads: the top-level one, or (with
    `child_name`, its COLLECTOR_NAME) the child collector there; None when absent. A child's
    ad carries its COLLECTOR_NAME as Name, the top-level one the host."""
    for ad in ads:
        name = str(ad.get("Name", ""))
        if child_name is not None:
            if name == child_name or name.startswith(f"{child_name}@"):
                return ad
        elif collector_name(ad) == host and not name.startswith(CHILD_COLLECTOR_PREFIX):
            return ad
    return None


def startd_names(text, hosts=None):
    """The startds behind `condor_status -af Name` lines ('slot1@startd3@worker1.x' ->
    'startd3@worker1.x'; a startd's own name stays), of `hosts` (short names) only when
    given; warnings and blank lines are not names. Slot ads, not the startds' daemon ads:
    a child collector forwards those to its parent for sure."""
    out = set()
    for line in text.splitlines():
        name = startd_of_slot(line.strip())
        if not re.fullmatch(r"[A-Za-z0-9_.-]+@[A-Za-z0-9.-]+", name):
            continue
        if hosts is None or name.split("@", 1)[1].split(".")[0] in hosts:
            out.add(name)
    return out


STARTD_RSS_SCRIPT = "ps -C condor_startd -o rss="


def process_rss_mb(text):
    """[MB] of each process in `ps -o rss=` output (KiB, one process a line)."""
    return [int(t) / 1024 for t in text.split() if t.isdigit()]


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



def inbound_by_port(text, peer_ips):
    """{local port: established connections from `peer_ips`} (ss -Htn state established):
    what a central host holds open for the workers, port by port (9618 the collector or
    CCB behind shared port, 9620 a child collector)."""
    out = {}
    for line in text.splitlines():
        addrs = [p for p in line.split() if re.match(r"^\[?[0-9a-fA-F:.]+\]?(%\S+)?:\d+$", p)]
        if len(addrs) < 2:
            continue
        lport = int(addrs[0].rsplit(":", 1)[1])
        pip = addrs[1].rsplit(":", 1)[0].strip("[]").replace("::ffff:", "")
        if pip in peer_ips:
            out[lport] = out.get(lport, 0) + 1
    return out


def count_inbound(text, port, peer_ips):
    """Established connections (ss -Htn state established) to local `port` from `peer_ips`:
    a CCB server's (and its collector's) view of who is connected to it."""
    return inbound_by_port(text, peer_ips).get(int(port), 0)


def address_uses_shared_port(sinful):
    """A daemon behind shared port has `sock=` in its sinful string."""
    return "sock=" in str(sinful)



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


def fresh_slots(lines, since):
    """Slots (`Name DaemonStartTime` lines) whose startd started at or after `since`."""
    n = 0
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and int(parts[1]) >= since:
            n += 1
    return n


# What a startd logs when it leaves out a collector (its CollectorList): a connection that
# timed out makes it avoid that collector for a while, and the updates it skips meanwhile
# still take a sequence number, so the collector counts each one as an update lost.
STARTD_COLLECTOR_LOG_SCRIPT = (f"grep -h -e 'Skipping update to collector' -e 'Will avoid querying collector' "
                               f"{CONDOR_LOG_DIR}/StartLog* 2>/dev/null || true")
_SKIPPED = re.compile(r"Skipping update to collector <[^:>]+:(\d+)\?[^>]*?alias=([A-Za-z0-9_-]+)")
_AVOIDED = re.compile(r"Will avoid querying collector \S+ <[^:>]+:(\d+)\?[^>]*?alias=([A-Za-z0-9_-]+)")


def startd_collector_skips(text, default_port):
    """{"skipped": {collector: updates skipped}, "timeouts": {collector: times avoided}} from
    StartLog lines (STARTD_COLLECTOR_LOG_SCRIPT); a collector is named by its host's alias,
    with `:port` unless it listens on `default_port` (as the ramp names its targets)."""
    out = {"skipped": {}, "timeouts": {}}
    for key, pattern in (("skipped", _SKIPPED), ("timeouts", _AVOIDED)):
        for port, alias in pattern.findall(text):
            name = alias if int(port) == default_port else f"{alias}:{port}"
            out[key][name] = out[key].get(name, 0) + 1
    return out


def skips_between(before, after):
    """The skips and timeouts logged between two readings of startd_collector_skips (the
    logs only grow; a count that went down, a rotated log, gives 0)."""
    return {k: {c: max(0, n - before.get(k, {}).get(c, 0)) for c, n in v.items()} for k, v in after.items()}
