"""The fault suite: faults injected into a running site, each with its
invariant - jobs do not restart and their output is right, files keep their checksums, the
pool and the storage come back - and the timings recorded as metrics.

The injectors and their undo live in testbed/injectors; the flows here string them together
and return what they saw, and robot/suites/faults.robot asserts on it; the worker-cut rows
are in fault_reconnect, the interrupted-run rows in fault_interrupt. `summarise` turns a run's metrics into the suite's benchmark
figures (benchmarks/faults.py prints them).
"""
import shlex
import statistics
import time

from testbed.experiments.faults.fault_reconnect import ReconnectFlows
from testbed.harness.capacity import base_site
from testbed.harness.registry import DAY_S, MAX_RTT_MS, Experiment, Param, ReleaseFinding
from testbed.injectors.condor_faults import CondorFaults, compare_starts
from testbed.injectors.network_faults import NetworkFaults
from testbed.injectors.security_checks import SecurityChecks
from testbed.injectors.storage_faults import StorageFaults, array_failed, checksum_mismatches, error_source, pick_members
from testbed.model.constants import (DTN_XROOTD_UNITS, FAULT_WORKDIR, JOB_LEASE_S, RESTART_CUT_HOLD_S,
                                     JobStatus)
from testbed.model.errors import RemoteError
from testbed.model.topology import ROLES
from testbed.services import health
from testbed.remote.poll import repeat_for, wait_for
from testbed.services.condor import submit_description
from testbed.services.gateway import Schedd


def site_for(p, host_mb, host_cpus):
    """`testbed plan`: the default site holds it."""
    site = base_site()
    return site, [f"{p['jobs']} sleep jobs through each fault and RAID6 losing members: the default site holds them"]


EXPERIMENT = Experiment(
    name="faults", title="Faults and the site's invariants", seed=None,
    suite="robot/suites/faults.robot",
    params={
        "jobs": Param("int", "sleep jobs running through each fault", minimum=1, maximum=1000),
        "job_margin_s": Param("int", "seconds each job sleeps beyond the fault's own length", minimum=1, maximum=DAY_S),
        # a cut as long as the job lease loses the jobs (ReconnectFlows.check_cut)
        "cutoff_s": Param("int", "seconds a worker is cut off the site network (less than the job lease)",
                          minimum=1, maximum=JOB_LEASE_S - 1),
        "restart_cut_max_s": Param("int", f"longest cut around a schedd restart (it ends {RESTART_CUT_HOLD_S} s "
                                          "after every job's new shadow started; less than the job lease)",
                                   minimum=1, maximum=JOB_LEASE_S - 1),
        "failover_limit_s": Param("int", "the standby negotiator must be active within this many seconds",
                                  minimum=1, maximum=DAY_S),
        "ccb_outage_s": Param("int", "seconds one CCB server stays down", minimum=1, maximum=DAY_S),
        # the origin holds at most 10000 files (model/topology.py)
        "raid_files": Param("int", "origin files read through the caching proxy on a degraded array",
                            minimum=1, maximum=10000),
        "resync_timeout_s": Param("int", "longest wait for md0 to rebuild its members", minimum=1, maximum=DAY_S),
        "origin_down_bound_s": Param("int", "an uncached read with the origin down must fail within this",
                                     minimum=1, maximum=DAY_S),
        "transfer_jobs": Param("int", "jobs whose output crosses the bad WAN", minimum=1, maximum=1000),
        # the outputs land on the submit host's disk (constants.HOST_DISK_GB)
        "transfer_mb": Param("int", "MB of output per job under the bad WAN", minimum=1, maximum=1024),
        "wan_rtt_ms": Param("float", "RTT submit <-> workers for the transfer-integrity test",
                            minimum=0, maximum=MAX_RTT_MS),
        "wan_loss_pct": Param("float", "packet loss (%) each way for the transfer-integrity test",
                              minimum=0, maximum=100),
        "long_faults": Param("int", "1: also the slow rows (worker cuts the shadows notice late, DTN reboot, "
                                    "RAID failures, CCB outage, transfers under loss, interrupted runs); "
                                    "0 skips them", minimum=0, maximum=1),
    },
    scales={
        # CI: about 9 minutes on the small site under TCG - security, schedd restarts, CM
        # failover, the origin down (measured: a worker cut 344 s, two RAID members 118 s);
        # plus the cut around a schedd restart, which ends once the new shadows run (not yet
        # measured; estimated 2-3 minutes). The cuts the shadows notice late run at quick.
        "ci": {"jobs": 2, "job_margin_s": 45, "cutoff_s": 45, "restart_cut_max_s": 120,
               "failover_limit_s": 60, "ccb_outage_s": 120,
               "raid_files": 2, "resync_timeout_s": 600, "origin_down_bound_s": 60, "transfer_jobs": 2,
               "transfer_mb": 5, "wan_rtt_ms": 80, "wan_loss_pct": 1, "long_faults": 0},
        "quick": {"jobs": 4, "job_margin_s": 60, "cutoff_s": 120, "restart_cut_max_s": 180,
                  "failover_limit_s": 60, "ccb_outage_s": 180,
                  "raid_files": 5, "resync_timeout_s": 900, "origin_down_bound_s": 60, "transfer_jobs": 4,
                  "transfer_mb": 20, "wan_rtt_ms": 80, "wan_loss_pct": 1, "long_faults": 1},
        "full": {"jobs": 8, "job_margin_s": 90, "cutoff_s": 300, "restart_cut_max_s": 300,
                 "failover_limit_s": 60, "ccb_outage_s": 300,
                 "raid_files": 20, "resync_timeout_s": 1800, "origin_down_bound_s": 60, "transfer_jobs": 8,
                 "transfer_mb": 50, "wan_rtt_ms": 80, "wan_loss_pct": 1, "long_faults": 1},
    },
    profiles=("default",), row_profiles=("default",),
    metrics=("faults.injected", "faults.jobs_lost", "faults.files_corrupted", "faults.security_problems",
             "faults.cutoff_seconds", "faults.worker_reconnect_seconds", "faults.jobs_disconnected",
             "faults.reconnected_after_cut_seconds",
             "faults.schedd_back_seconds", "faults.schedd_reconnect_seconds",
             "faults.cm_failover_seconds", "faults.cm_new_job_seconds",
             "faults.ccb_new_job_seconds", "faults.ccb_reregister_seconds",
             "faults.raid_resync_seconds", "faults.raid_resync_rate", "faults.raid_sync_speed",
             "faults.raid_restore_seconds", "faults.origin_down_cached_read_seconds",
             "faults.origin_down_fail_seconds", "faults.origin_back_seconds",
             "faults.dtn_reboot_seconds", "faults.dtn_storage_back_seconds", "faults.dtn_services_back_seconds",
             "faults.transfer_seconds", "faults.transfer_rate", "faults.interrupt_exit_seconds"),
    x_params=("t",),
    paper=None,
    # the reconnect rows' outcome per release: whether a worker's cut loses jobs (HTCondor's
    # transfer-key defect on a same-shadow reconnect) and whether any output comes back wrong
    release_findings=(
        ReleaseFinding("faults.jobs_lost", "jobs started again after the fault (known_defect: lost to that "
                       "upstream defect)", page="upstream/htcondor-transfer-key.md"),
        ReleaseFinding("faults.files_corrupted", "outputs that came back wrong after the fault"),
        ReleaseFinding("faults.reconnected_after_cut_seconds", "seconds from the cut's end until every job "
                       "was reconnected"),
    ),
    uses=ROLES,                    # faults in every role: the CMs, CCB, a worker, the RAID, the origin
    capacity=site_for,   # testbed plan: the hosts its parameters need
)

# the suite's benchmark figures: metric -> label
FIGURES = {
    "faults.cm_failover_seconds": "CM failover (standby negotiator active), s",
    "faults.ccb_reregister_seconds": "CCB server back: startds registered again, s",
    "faults.ccb_new_job_seconds": "new job through the other CCB, submit to done, s",
    "faults.schedd_back_seconds": "schedd answering again after a restart, s",
    "faults.schedd_reconnect_seconds": "jobs reconnected after a schedd restart, s",
    "faults.worker_reconnect_seconds": "jobs reconnected after a worker cut (job log), s",
    "faults.reconnected_after_cut_seconds": "every job reconnected, both sides, after a cut ended, s",
    "faults.raid_resync_rate": "RAID member rebuild, MB/s",
    "faults.raid_restore_seconds": "failed array forced back and rebuilt, s",
    "faults.origin_down_fail_seconds": "uncached read with the origin down fails after, s",
    "faults.origin_back_seconds": "uncached reads succeed again after the origin returns, s",
    "faults.dtn_reboot_seconds": "DTN reboot until SSH answers, s",
    "faults.dtn_services_back_seconds": "DTN reboot until XRootD and HTCondor run, s",
}


def _num(v):
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def summarise(records):
    """The suite's benchmark figures from a run's metrics: [(figure, n, min, median, max)] and
    totals {injected, jobs_lost, files_corrupted, security_problems, kinds, known_defects}.
    Jobs lost to a known upstream defect (a jobs_lost record with `known_defect`) count in
    known_defects ({defect: jobs}), not in jobs_lost."""
    rows = []
    for name, label in FIGURES.items():
        values = [r["value"] for r in records if r["name"] == name]
        if values:
            rows.append((label, len(values), min(values), statistics.median(values), max(values)))
    totals, known = {}, {}
    for r in records:
        defect = r.get("params", {}).get("known_defect") if r["name"] == "faults.jobs_lost" else None
        if defect:
            known[defect] = known.get(defect, 0) + int(r["value"])
    for key in ("injected", "jobs_lost", "files_corrupted", "security_problems"):
        totals[key] = int(sum(r["value"] for r in records if r["name"] == f"faults.{key}"
                              and not (key == "jobs_lost" and r.get("params", {}).get("known_defect"))))
    kinds = sorted({r["params"].get("kind") for r in records if r["name"] == "faults.injected"
                    and r.get("params", {}).get("kind")})
    totals["kinds"] = kinds
    totals["known_defects"] = dict(sorted(known.items()))
    return rows, totals


def render_summary(rows, totals):
    from testbed.model import tables
    out = [tables.render(["figure", "n", "min", "median", "max"],
                         [[label, n, _num(lo), _num(mid), _num(hi)] for label, n, lo, mid, hi in rows])]
    known = totals.get("known_defects") or {}
    beside = (" (and " + ", ".join(f"{n} to the known upstream defect {d}" for d, n in known.items()) + ")"
              if known else "")
    out.append(f"faults injected {totals['injected']} ({', '.join(totals['kinds']) or 'none'}): "
               f"jobs lost {totals['jobs_lost']}{beside}, files corrupted {totals['files_corrupted']} "
               f"(target 0 and 0); security problems {totals['security_problems']}")
    return "\n".join(out)


ORIGIN_BACK_S = 300  # an uncached read must work again this soon after the origin restarts


# --- 8: transfer integrity ------------------------------------------------------------------------
TRANSFER_SCRIPT = """#!/bin/sh
# Fault-suite job: $1 MB of random output and its sha256, computed here on the worker.
head -c $(( $1 * 1048576 )) /dev/urandom > payload
sha256sum payload | cut -d' ' -f1 > payload.sha256
"""
SUMS_SCRIPT = ("cd {workdir}/out && for f in payload.*; do p=${{f#payload.}}; "
               "echo \"sum $p $(cat sum.$p 2>/dev/null || echo none) $(sha256sum $f | cut -d' ' -f1)\"; done")


def parse_sums(text):
    """{proc: (sha256 from the worker, sha256 on the submit host)} from SUMS_SCRIPT."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "sum" and parts[1].isdigit():
            out[int(parts[1])] = (parts[2], parts[3])
    return out


def transfer_mismatches(sums, jobs):
    """[(proc, worker's sha256, submit host's sha256)] for outputs missing or changed on the way."""
    bad = []
    for proc in range(jobs):
        worker, here = sums.get(proc, ("missing", "missing"))
        if worker != here or len(worker) != 64:
            bad.append((proc, worker, here))
    return bad


# --- the flows of the other faults ---------------------------------------------------------------
class FaultSuite(ReconnectFlows):
    """Each flow injects one fault, undoes it, and returns what it measured and what broke
    (the worker cuts: ReconnectFlows)."""

    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool
        self.condor = CondorFaults(topo, ssh, pool)
        self.net = NetworkFaults(topo, ssh)
        self.storage = StorageFaults(topo, ssh)
        self.security = SecurityChecks(topo, ssh)

    # 2 --------------------------------------------------------------------------------------
    def wait_back(self, batch, timeout=600, poll=5):
        """Seconds until every job of the batch is running or done again (after a schedd restart)."""
        ok = (JobStatus.RUNNING, JobStatus.COMPLETED, JobStatus.TRANSFERRING_OUTPUT)

        def back():
            snap = self.condor.snapshot(batch, "back")
            return len(snap) == batch.count and all(ad.get("JobStatus") in ok for ad in snap.values())
        return float(wait_for(f"cluster {batch.cluster}: every job running or done again after the schedd returned",
                              back, timeout, poll, host=self.pool.submit_host,
                              state=lambda: self.pool.describe_unfinished(batch.cluster)))

    def schedd_restarts(self, jobs, margin_s):
        batch = self.condor.submit_batch("schedd", jobs, 60 + margin_s)  # through both restarts
        self.condor.wait_all_running(batch)
        before = batch.snapshots["before"]
        rounds = []
        for mode in ("clean", "kill"):
            if mode == "clean":
                old = self.condor.restart_schedd()
            else:
                old = self.condor.pid(self.pool.submit_host, "schedd")
                self.condor.kill_daemon(self.pool.submit_host, "schedd")
            back = self.condor.wait_schedd(old, timeout=300)
            reconnect = self.wait_back(batch)
            queue = compare_starts(before, self.condor.snapshot(batch, f"after-{mode}"))
            rounds.append({"mode": mode, "back": back, "reconnect": reconnect, "queue_problems": queue})
        done = self.condor.finish(batch, timeout=60 + margin_s + 900)
        return dict(done, rounds=rounds, cluster=batch.cluster)

    # 3 --------------------------------------------------------------------------------------
    def other_cm(self, host):
        return [h.name for h in self.topo.with_role("cm") if h.name != host][0]

    def new_job(self, tag, timeout=600):
        """One short job submitted now; (seconds submit to done, host it ran on)."""
        start = time.monotonic()
        batch = self.condor.submit_batch(tag, 1, 1)
        ads = self.pool.wait(batch.cluster, 1, timeout=timeout)
        host = str(ads[0].get("LastRemoteHost") or ads[0].get("RemoteHost") or "").split("@")[-1].split(".")[0]
        return time.monotonic() - start, host

    def cm_kill(self, jobs, limit_s, margin_s):
        """Returns the killed CM too: the suite's teardown starts it again."""
        # the jobs only need to run when the CM dies; the invariant is that none starts again
        batch = self.condor.submit_batch("cm", jobs, limit_s + margin_s)
        self.condor.wait_all_running(batch)
        active = self.pool.active_cm()
        standby = self.other_cm(active)
        self.condor.kill_host(active)
        failover = self.pool.wait_negotiator_on(standby, timeout=max(300, 3 * limit_s))
        new_seconds, new_host = self.new_job("cm-new")
        done = self.condor.finish(batch, timeout=limit_s + margin_s + 900)
        return dict(done, killed=active, standby=standby, failover=failover, new_job_seconds=new_seconds,
                    new_job_host=new_host)

    # 4 --------------------------------------------------------------------------------------
    def ccb_servers(self):
        return [h.name for h in (self.topo.with_role("ccb") or self.topo.with_role("cm"))]

    def ccb_registrations(self, collector=None):
        """{CCB server: startds whose address names it} from the startd ads of the pool, or of
        one collector (a restarted collector starts empty, so every ad it holds is fresh)."""
        pool = f"-pool {self.topo.hosts[collector].site_ip} " if collector else ""
        out = Schedd(self.ssh, self.pool.submit_host).status(f"{pool}-startd -af Machine Name MyAddress",
                                                             timeout=60).stdout
        ips = {self.topo.hosts[n].site_ip: n for n in self.ccb_servers()}
        counts = {n: 0 for n in self.ccb_servers()}
        workers = {h.name for h in self.topo.with_role("worker")}
        for line in out.splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0].split(".")[0] in workers:
                contacts = health.ccb_contacts(parts[2])
                for ip, name in ips.items():
                    if any(c.startswith(f"{ip}:") for c in contacts):
                        counts[name] += 1
        return counts

    def wait_registered(self, ccb, timeout=600, poll=10):
        """Seconds until every worker startd has sent the returned CCB server's collector an ad
        whose address carries a CCB contact at it (registered again)."""
        want, got = self.topo.planned_startds, [0]

        def registered():
            got[0] = self.ccb_registrations(collector=ccb).get(ccb, 0)
            return got[0] >= want
        return float(wait_for(f"every startd ({want}) registered with CCB {ccb} after it returned", registered,
                              timeout, poll, host=self.pool.submit_host,
                              state=lambda: f"{got[0]} of {want} startds registered"))

    def ccb_target(self):
        """A CCB server whose host does not run the active negotiator (when there is one)."""
        servers = self.ccb_servers()
        try:
            active = self.pool.active_cm()
        except RemoteError:
            active = None
        others = [s for s in servers if s != active]
        return (others or servers)[0]

    def ccb_outage(self, jobs, outage_s, margin_s, target):
        """`target`'s collector (its CCB server) killed and held down for outage_s; the suite's
        teardown brings it back if this flow did not."""
        if len(self.ccb_servers()) < 2:
            raise RemoteError("the topology has one CCB server: there is no other CCB to keep the pool going")
        batch = self.condor.submit_batch("ccb", jobs, outage_s + margin_s)
        self.condor.wait_all_running(batch)
        started = time.monotonic()
        self.condor.hold_down(target, "collector")
        new_seconds, new_host = self.new_job("ccb-new")
        during, next_look = [], [0.0]

        def look(t):  # the queue every 15 s; ticks of 1 s end the outage within 1 s of outage_s
            if t >= next_look[0]:
                during.extend(compare_starts(batch.snapshots["before"], self.condor.snapshot(batch, "during")))
                next_look[0] = t + 15
        repeat_for(outage_s - (time.monotonic() - started), look, interval=1.0)
        self.condor.bring_back(target, "collector")
        outage = time.monotonic() - started
        reregister = self.wait_registered(target)
        done = self.condor.finish(batch, timeout=outage_s + margin_s + 900)
        return dict(done, target=target, outage=outage, new_job_seconds=new_seconds, new_job_host=new_host,
                    during=sorted(set(during)), reregister=reregister)

    # 5 --------------------------------------------------------------------------------------
    def origin_names(self, n):
        return sorted(self.storage.origin_records())[:max(1, int(n))]

    def raid_two_members(self, n_files, resync_timeout):
        st = self.storage
        info = st.status()
        if info.get("degraded_n") != 0 or array_failed(info):
            raise RemoteError(f"md0 is not healthy before the fault: {info.get('detail_state')}")
        members = pick_members(info, 2)
        records = st.origin_records()
        names = sorted(records)[:max(1, int(n_files))]
        st.evict(names)
        degraded = st.fail(members)
        reads = {n: st.read_through_proxy(n) for n in names}
        incomplete = st.cache_complete(names)
        on_raid = st.cache_checksums([n for n in names if n not in incomplete])
        st.add_back(members)
        resync = st.wait_resync(timeout=resync_timeout)
        via_proxy = {n: r["adler32"] or "read failed" for n, r in reads.items()}
        return {"members": members, "degraded": degraded, "names": names, "reads": reads,
                "proxy_mismatches": checksum_mismatches(via_proxy, records),
                "raid_mismatches": checksum_mismatches(on_raid, records), "incomplete": incomplete,
                "resync": resync, "after": st.status()}

    def raid_third_failure(self, resync_timeout):
        """Two members out, /raid released, a third failed: md0 must say it failed and a raw
        read must fail; the origin's files keep their bytes. Then the array is forced back."""
        st = self.storage
        info = st.status()
        everything = sorted(info["disks"])
        records = st.origin_records()
        first_two = pick_members(info, 2)
        st.fail(first_two)
        st.release_raid()
        third = pick_members(st.status(), 1)
        broken = st.fail(third, remove=False)
        raw_error = st.raw_read_error()
        origin_now = st.origin_checksums(sorted(records))
        started = time.monotonic()
        restored = st.restore_array(everything)
        resync = st.wait_resync(timeout=resync_timeout)
        return {"failed_members": first_two + third, "broken": broken, "says_failed": array_failed(broken),
                "raw_read_error": raw_error, "origin_mismatches": checksum_mismatches(origin_now, records),
                "restored": restored, "restore_seconds": time.monotonic() - started, "resync": resync,
                "after": st.status()}

    def ensure_array(self, resync_timeout=1800):
        """Undo of every RAID fault: whatever state md0 is in, bring it back to all its data
        disks, mounted, with the XRootD units running. Returns the status after."""
        st = self.storage
        info = st.status()
        everything = sorted(info["disks"])
        if array_failed(info) or info.get("array_state") in ("missing", "inactive"):
            st.restore_array(everything)
        elif info.get("degraded_n") or info["faulty"] or info["outside"]:
            st.add_back([s for s in everything if s not in info["members"]])
        st.mount_and_serve()
        st.wait_resync(timeout=resync_timeout)
        return st.status()

    # 6 --------------------------------------------------------------------------------------
    def origin_down(self, bound_s):
        st = self.storage
        records = st.origin_records()
        names = sorted(records)
        cached, uncached = names[0], names[-1]
        st.evict([cached, uncached])
        warm = st.read_through_proxy(cached)
        incomplete = st.cache_complete([cached])
        st.stop_origin()
        try:
            hit = st.read_through_proxy(cached, bound=bound_s)
            miss = st.read_through_proxy(uncached, bound=bound_s)
        finally:
            st.start_origin()
        miss["source"] = error_source(miss, bound_s)
        last = {}

        def readable():
            last["read"] = st.read_through_proxy(uncached, bound=bound_s)
            return last["read"]["ok"]

        def seen():
            r = last.get("read") or {}
            return (f"read rc {r.get('rc')}: {r.get('error') or 'no error printed'}; while the origin was down: "
                    f"cached {cached} {'read' if hit['ok'] else 'NOT read'}, uncached {uncached} "
                    f"{'failed' if not miss['ok'] else 'read'} ({miss['source']})")
        # the origin is back only when a miss reads again: past 300 s the site is not restored,
        # and the row must say so rather than record 300 s as the time it took to come back
        started = time.monotonic()
        wait_for(f"uncached {uncached} read through the proxy again after the origin started",
                 readable, ORIGIN_BACK_S, 5, host=st.client.name, state=seen)
        back = last["read"]
        # a read that worked but brought other bytes than the origin's
        corrupted = sum(1 for read, name in ((warm, cached), (hit, cached), (back, uncached))
                        if read["ok"] and read["adler32"] != records[name])
        return {"cached": cached, "uncached": uncached, "records": {cached: records[cached],
                uncached: records[uncached]}, "warm": warm, "incomplete": incomplete, "hit": hit,
                "miss": miss, "back": back, "back_seconds": time.monotonic() - started,
                "corrupted": corrupted}

    # 8 --------------------------------------------------------------------------------------
    def transfer_integrity(self, jobs, size_mb, timeout=3600):
        """Jobs write size_mb of random bytes and their sha256 on the worker; both come back by
        file transfer; the submit host's sha256 of each payload must equal the worker's."""
        workdir = f"{FAULT_WORKDIR}/transfer-{time.time_ns()}"
        desc = submit_description("xferjob.sh", f"{int(size_mb)}", count=int(jobs),
                                  requirements="(IsDTN =!= True)",
                                  extra={"transfer_output_files": "payload,payload.sha256",
                                         "transfer_output_remaps": '"payload = out/payload.$(Process); '
                                                                   'payload.sha256 = out/sum.$(Process)"'})
        started = time.monotonic()
        cluster = self.pool.submit(desc, workdir, files={"xferjob.sh": (TRANSFER_SCRIPT, "0755")},
                                   setup=["mkdir -p out"])
        self.pool.wait(cluster, int(jobs), timeout=timeout)
        seconds = time.monotonic() - started
        out = self.ssh.run(self.pool.submit_host, SUMS_SCRIPT.format(workdir=shlex.quote(workdir)),
                           timeout=600).stdout
        sums = parse_sums(out)
        self.ssh.run(self.pool.submit_host, f"rm -rf {shlex.quote(workdir)}/out", check=False)
        mismatches = transfer_mismatches(sums, int(jobs))
        return {"cluster": cluster, "seconds": seconds, "checked": len(sums), "mismatches": mismatches,
                "rate": int(jobs) * int(size_mb) * 1048576 / 1e6 / seconds if seconds > 0 else 0.0}

    # 7 --------------------------------------------------------------------------------------
    def wait_for(self, check, timeout, poll=5, what="condition", host=None, state=None):
        """Seconds until `check()` holds after a reboot (RemoteError naming `what` past `timeout`)."""
        return float(wait_for(f"{what} after the reboot", check, timeout, poll, host=host, state=state))

    def dtn_reboot(self, n_files):
        st = self.storage
        records = st.origin_records()
        names = sorted(records)[:max(1, int(n_files))]
        for n in names:
            st.read_through_proxy(n)
        incomplete = st.cache_complete(names)
        before, cache_before = st.status(), st.cache_checksums(names)
        reboot = st.reboot(st.dtn.name)
        md = {}

        def mounted():
            md.update(st.status())
            return md.get("fs") == "xfs"
        storage_back = self.wait_for(mounted, 300, what="md0 mounted as XFS", host=st.dtn.name,
                                     state=lambda: f"md0 {md.get('array_state')}, fs {md.get('fs') or 'none'}")
        daemons = ("master", "collector", "negotiator", "schedd", "startd")
        down = []

        def services():
            down[:] = [u for u, up in st.dtn_units.active(DTN_XROOTD_UNITS).items() if not up]
            down.extend(f"condor_{d}" for d in daemons if not self.condor.running(st.dtn.name, d))
            return not down
        services_back = self.wait_for(services, 600, what="XRootD and HTCondor running", host=st.dtn.name,
                                      state=lambda: "not running: " + ", ".join(down))
        after, cache_after = st.status(), st.cache_checksums(names)
        return {"names": names, "incomplete": incomplete, "before": before, "after": after,
                "same_members": before["members"] == after["members"] and before.get("uuid") == after.get("uuid"),
                "cache_changed": checksum_mismatches(cache_after, cache_before),
                "cache_mismatches": checksum_mismatches(cache_after, records), "reboot": reboot,
                "storage_back": reboot + storage_back, "services_back": reboot + services_back}
