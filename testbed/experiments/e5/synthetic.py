"""Synthetic startds for E5's collector limit (seed 004, section 4.1): startd ads sent the way
thousands of startds would send them, without thousands of startd daemons (each costs a
worker 17-18 MB under TCG, so the daemons' ramp stops near 74 per collector).

What the collector does for a startd, it does here for each synthetic one:
- joining: one `condor_advertise` process per ad and collector, so each opens its own
  connection and authenticates from scratch (a new process has no cached security
  session): the handshake the paper's collectors paid per joining startd, ~5 round trips
  with IDTOKENS (HTCondor 23.9's condor_secman.cpp);
- staying: every `update_s` seconds each worker sends all its ads to each collector with
  `condor_advertise -multiple` (one connection, the ads back to back), as a startd sends
  its updates over the TCP socket the collector keeps for it after the first one (no
  handshake); each ad carries DaemonStartTime and an UpdateSequenceNumber that grows by one
  per update, so the collector counts a missing update as lost as it does a startd's.
The ads are slot ads (MyType "Machine", slot 1 of startd `synthN` on the worker) that match
no job (Start = false) and tagged `E5Synthetic`, so a query can pick them out and they are
invalidated at the end. Measured per step: the seconds each join took (start to end of its
condor_advertise, failures counted), the ads each collector lists, and its counts.
"""
import re
import shlex
import time

from testbed.experiments.e5.collector import (ad_updates, collector_loads, run_steps, seconds_until,
                                             startds_listed)
from testbed.experiments.e5.parsers import cpu_percent, update_window
from testbed.services.gateway import Advertise

AD_DIR = "/var/tmp/e5-synthetic"
TAG = "E5Synthetic"
ONLY_SYNTHETIC = f"{TAG} =?= true"   # the synthetic slot ads, not a real startd's
JOIN_LINE = re.compile(r"^join (\d+) (\S+) ([0-9.]+) ([0-9.]+) (\d+)$", re.M)


def startd_name(i, worker, domain):
    """The synthetic startd's name, in the form the daemons' ramp lists ('synth7@worker1.dom')."""
    return f"synth{i}@{worker}.{domain}"


AD_LINES = ('MyType = "Machine"', 'TargetType = "Job"', 'Name = "slot1@synth{i}@{host}"',
            'Machine = "synth{i}.{host}"', "SlotID = 1", 'State = "Unclaimed"', 'Activity = "Idle"',
            "Start = false", "Requirements = false", "Cpus = 1", "Memory = 1", "Disk = 1",
            'MyAddress = "<{address}:0>"', 'StartdIpAddr = "<{address}:0>"', "DaemonStartTime = {start}",
            "UpdateSequenceNumber = {seq}", "ClassAdLifetime = {lifetime}", f"{TAG} = true", "")
AWK_VARS = ("i", "seq", "start")   # filled in by awk; the rest when the program is written


def _awk_string(line, fixed):
    """An awk expression for one ad line: its text with the fixed fields filled in and the
    awk variables (AWK_VARS) concatenated in."""
    text = line
    for key, value in fixed.items():
        text = text.replace("{" + key + "}", str(value))
    parts = re.split(r"\{(" + "|".join(AWK_VARS) + r")\}", text)
    out = []
    for n, part in enumerate(parts):
        if n % 2:
            out.append(part)
        elif part or len(parts) == 1:
            out.append('"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(out)


def ad_awk(worker, domain, address, lifetime_s):
    """An awk program printing the ads of synthetic startds `first`..`last` (awk -v) with
    UpdateSequenceNumber `seq` and DaemonStartTime `start`, a blank line after each
    (condor_advertise -multiple reads ads separated by blank lines); with `dir` set, each
    ad goes to a file of its own, dir/N.ad."""
    fixed = {"host": f"{worker}.{domain}", "address": address, "lifetime": int(lifetime_s)}
    prints = " ".join(f"print {_awk_string(line, fixed)} > out;" for line in AD_LINES)
    return ('BEGIN { for (i = first; i <= last; i++) { out = (dir == "" ? "/dev/stdout" : dir "/" i ".ad"); '
            + prints + ' if (dir != "") close(out) } }')


def ads_command(worker, domain, address, lifetime_s, first, last, seq, start, into=""):
    """One shell command printing the ads of synthetic startds first..last (`into`: a
    folder that gets one file per ad instead). `first`, `last` and `seq` may be shell
    words such as "$seq"."""
    prog = ad_awk(worker, domain, address, lifetime_s)
    return (f"awk -v first={first} -v last={last} -v seq={seq} -v start={int(start)} "
            f"-v dir={shlex.quote(into)} {shlex.quote(prog)}")


# one condor_advertise per ad and collector, timed: `join I COLLECTOR START END RC`
JOIN_ONE = ("s=$(date +%s.%N); " + Advertise.one('"$2"', '"$0/$1.ad"') + " >/dev/null 2>&1; "
            "rc=$?; e=$(date +%s.%N); echo join $1 $2 $s $e $rc")


def join_script(collectors, worker, domain, address, lifetime_s, first, last, start, parallel):
    """Bash that joins synthetic startds first..last to every collector (host[:port]), one
    condor_advertise process per ad and collector, `parallel` at a time; prints
    `join I COLLECTOR START END RC` per advertise (read by parse_joins)."""
    folder = f"{AD_DIR}/join"
    pairs = " ".join(f"{i} {c}" for i in range(int(first), int(last) + 1) for c in collectors)
    return (f"rm -rf {folder}; mkdir -p {folder}; "
            f"{ads_command(worker, domain, address, lifetime_s, first, last, 1, start, into=folder)}; "
            f"printf '%s %s\\n' {pairs} | xargs -P {int(parallel)} -n 2 bash -c {shlex.quote(JOIN_ONE)} {folder}; "
            f"rm -rf {folder}")


def parse_joins(text):
    """[(i, collector, seconds, rc)] of the `join` lines join_script printed."""
    return [(int(i), c, float(e) - float(s), int(rc)) for i, c, s, e, rc in JOIN_LINE.findall(text)]


def join_summary(joins):
    """{collector: {joined, failed, median_s, max_s}} over parse_joins' tuples."""
    out = {}
    for c in sorted({j[1] for j in joins}):
        ok = sorted(s for _i, cc, s, rc in joins if cc == c and rc == 0)
        failed = sum(1 for _i, cc, _s, rc in joins if cc == c and rc != 0)
        out[c] = {"joined": len(ok), "failed": failed,
                  "median_s": ok[len(ok) // 2] if ok else None, "max_s": ok[-1] if ok else None}
    return out


def updater_script(collectors, worker, domain, address, lifetime_s, first, last, start, update_s):
    """Bash that adds synthetic startds first..last (just joined, with sequence number 1) to
    the worker's updater and starts the updater unless it runs: every `update_s` s, one
    round sends every added ad to every collector over one connection each (-multiple),
    each ad with the next number of its own sequence (round - the round it was added at
    + 1), so a step's new ads never restart the sequences of the ads before them."""
    ads = ads_command(worker, domain, address, lifetime_s, '"$f"', '"$l"', '"$((r - at + 1))"', start)
    sends = "; ".join(f"{Advertise.many(shlex.quote(c), AD_DIR + '/all.ads')} >/dev/null 2>&1" for c in collectors)
    loop = (f"while true; do sleep {int(update_s)}; r=$(( $(cat {AD_DIR}/round 2>/dev/null || echo 0) + 1 )); "
            f"echo $r > {AD_DIR}/round; : > {AD_DIR}/all.ads; "
            f"while read f l at; do {ads} >> {AD_DIR}/all.ads; done < {AD_DIR}/ranges; {sends}; done")
    pid = f"{AD_DIR}/updater.pid"
    return (f"mkdir -p {AD_DIR}; echo {int(first)} {int(last)} $(cat {AD_DIR}/round 2>/dev/null || echo 0) "
            f">> {AD_DIR}/ranges; [ -r {pid} ] && kill -0 $(cat {pid}) 2>/dev/null || "
            f"{{ setsid nohup bash -c {shlex.quote(loop)} >/dev/null 2>&1 < /dev/null & echo $! > {pid}; }}")


def stop_script():
    """Bash that stops the worker's updater and forgets its ads (no-op when none runs)."""
    pid = f"{AD_DIR}/updater.pid"
    return (f"[ -r {pid} ] && kill -- -$(cat {pid}) 2>/dev/null; "
            f"rm -f {pid} {AD_DIR}/round {AD_DIR}/ranges {AD_DIR}/all.ads; true")


def invalidate_script(collectors):
    """Bash that stops nothing but removes every synthetic ad from each collector."""
    query = f'MyType = "Query"\nTargetType = "Machine"\nRequirements = {TAG} =?= true\n'
    return (f"mkdir -p {AD_DIR}; printf %s {shlex.quote(query)} > {AD_DIR}/invalidate.ad; "
            + "; ".join(f"{Advertise.invalidate(shlex.quote(c), AD_DIR + '/invalidate.ad')} >/dev/null 2>&1"
                        for c in collectors) + "; true")


# --- the ramp on a site ------------------------------------------------------------------------
BUSY_DUTY_CYCLE = 0.95   # a collector this busy (RecentDaemonCoreDutyCycle) has no time to spare
SYNTHETIC_LIMITS = ("collector", "join", "missing", "lost", "busy", "ramp_max")


def judge(step):
    """The limit a synthetic step's figures show, or None: a collector that did not answer,
    joins it refused, ads it never listed, updates it lost, or a duty cycle at BUSY_DUTY_CYCLE."""
    if not all(step["answered"].values()):
        return "collector"
    if any(s["failed"] for s in step["joins"].values()):
        return "join"
    if any(step["missing"].values()):
        return "missing"
    if any(n > 0 for n in step["lost"].values()):
        return "lost"
    if any(load.get("RecentDaemonCoreDutyCycle", 0) >= BUSY_DUTY_CYCLE for load in step["loads"].values()):
        return "busy"
    return None


def describe(limit, step):
    """One sentence on why the synthetic ramp stopped at `step`."""
    if limit == "collector":
        return f"{', '.join(c for c, ok in sorted(step['answered'].items()) if not ok)} did not answer condor_status"
    if limit == "join":
        return "joins refused: " + ", ".join(f"{c} {s['failed']} of {s['failed'] + s['joined']}"
                                             for c, s in sorted(step["joins"].items()) if s["failed"])
    if limit == "missing":
        return "ads never listed in the join window: " + ", ".join(
            f"{c} lacks {len(names)} (e.g. {sorted(names)[0]})" for c, names in sorted(step["missing"].items()) if names)
    if limit == "lost":
        return "updates lost in the hold window: " + ", ".join(f"{c} {n}" for c, n in sorted(step["lost"].items()) if n)
    if limit == "busy":
        return "collector duty cycle at its limit: " + ", ".join(
            f"{c} {load.get('RecentDaemonCoreDutyCycle'):.2f}" for c, load in sorted(step["loads"].items())
            if load.get("RecentDaemonCoreDutyCycle", 0) >= BUSY_DUTY_CYCLE)
    if limit == "ramp_max":
        return f"every step up to {step['per_worker']} synthetic startds per worker held; no limit below it"
    return f"unknown limit {limit!r}"


class SyntheticRamp:
    """Synthetic startds per worker in doubling steps, reporting to the central managers'
    collectors (one tier): `exp` a ScaleExperiment. Each step joins the new ads (a fresh
    handshake each), restarts the workers' updaters for all of them, waits until every
    collector lists them (`join_s`), then counts over `hold_s` the updates each collector
    took and lost for them, its own statistics and the collectors' CPU."""

    def __init__(self, exp, join_s=180, hold_s=120, update_s=60, parallel=4, poll=5, echo=print):
        self.exp, self.topo, self.ssh = exp, exp.topo, exp.ssh
        self.join_s, self.hold_s, self.update_s, self.parallel = join_s, hold_s, update_s, parallel
        self.poll, self.echo = poll, echo
        self.collectors = [h.name for h in self.topo.with_role("cm")]
        self.domain = self.topo.trust_domain
        self.start = int(time.time())
        self.joined = 0

    def expected(self, per_worker):
        return {startd_name(i, w.name, self.domain) for w in self.exp.workers for i in range(1, per_worker + 1)}

    def join(self, first, last):
        """Join synthetic startds first..last on every worker; {collector: join_summary}."""
        res = self.ssh.run_many({w.name: join_script(self.collectors, w.name, self.domain, w.site_ip,
                                                     3 * self.update_s, first, last, self.start, self.parallel)
                                 for w in self.exp.workers}, timeout=self.join_s * 10 + 300)
        return join_summary([j for r in res.values() for j in parse_joins(r.stdout)])

    def keep_updating(self, first, last):
        """The workers' updaters take synthetic startds first..last too (started with the first)."""
        self.ssh.run_many({w.name: updater_script(self.collectors, w.name, self.domain, w.site_ip, 3 * self.update_s,
                                                  first, last, self.start, self.update_s)
                           for w in self.exp.workers}, check=True, timeout=60)

    def step(self, per_worker, t0, series):
        st = {"per_worker": per_worker}
        started = time.monotonic()
        stats_before = self.exp.daemon_stats()
        first, self.joined = self.joined + 1, per_worker
        st["joins"] = self.join(first, per_worker)
        st["join_s"] = time.monotonic() - started
        self.keep_updating(first, per_worker)
        want, seen = self.expected(per_worker), {}

        def listed():
            seen.update(startds_listed(self.exp, self.collectors, ONLY_SYNTHETIC))
            series.append((round(time.monotonic() - t0, 1), len(seen.get(self.collectors[0]) or ())))
            return all(want <= (seen.get(c) or set()) for c in self.collectors)

        st["listed_s"] = seconds_until(f"{len(want)} synthetic startds in the collectors", listed, self.join_s,
                                       self.poll, self.exp.submit)
        cpu_before, t_before = self.exp.daemon_stats(), time.monotonic()
        join_cpu = cpu_percent(stats_before, cpu_before, t_before - started)
        before = ad_updates(self.exp, self.collectors, ONLY_SYNTHETIC)
        time.sleep(self.hold_s)
        window = update_window(before, ad_updates(self.exp, self.collectors, ONLY_SYNTHETIC))
        cpu = cpu_percent(cpu_before, self.exp.daemon_stats(), time.monotonic() - t_before)
        seen.update(startds_listed(self.exp, self.collectors, ONLY_SYNTHETIC))
        st.update(answered={c: seen.get(c) is not None for c in self.collectors},
                  listed={c: len(seen.get(c) or ()) for c in self.collectors},
                  held=min(len(seen.get(c) or ()) for c in self.collectors),
                  missing={c: sorted(want - (seen.get(c) or set())) for c in self.collectors},
                  updates=window, lost={c: w["lost"] for c, w in window.items()},
                  loads=collector_loads(self.exp, self.collectors),
                  cpu=cpu, join_cpu=join_cpu)
        st["limit"] = judge(st)
        return st

    def run(self, steps):
        """Every step in turn until one shows a limit (collector.run_steps). The ads stay until `clean`."""
        def say(st):
            joins = ", ".join(f"{c} median {s['median_s'] or 0:.2f} s" for c, s in sorted(st["joins"].items()))
            self.echo(f"  {st['per_worker']} synthetic startds per worker: joined in {st['join_s']:.0f} s ({joins}), "
                      f"{st['held']} listed by every CM, lost {st['lost']}, duty cycle "
                      f"{ {c: load.get('RecentDaemonCoreDutyCycle') for c, load in st['loads'].items()} }, "
                      f"limit {st['limit']}")
        return run_steps(self.step, steps, say, describe)

    def clean(self):
        """Stop the updaters and drop every synthetic ad from the collectors."""
        self.ssh.run_many({w.name: stop_script() for w in self.exp.workers}, timeout=60)
        self.ssh.run(self.exp.workers[0].name, invalidate_script(self.collectors), check=False, timeout=120)
        self.joined = 0
