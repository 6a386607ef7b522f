"""E5's failovers and negotiation: a central manager, a collector or a CCB server taken
down with jobs running, what restarted, when matches and registrations came back; and
the negotiator's cycles timed from its ad and its log. `PoolEvents` is mixed into
`e5_scale.ScaleExperiment`."""
import shlex
import time

from testbed.experiments.e5.config import SLEEP_SECONDS, role_constraint
from testbed.model.constants import HTCONDOR_PORT, NEGOTIATOR_LOG, SCHEDD_LOG, JobStatus
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.gateway import Daemons, Schedd
from testbed.experiments.e5.parsers import (NEGOTIATOR_LOG_MARKS, address_uses_shared_port, count_inbound,
                                      cycle_saw_requests, latest_negotiator, logged_cycles,
                                      matching_logged_cycle, negotiation_cycle, parse_long_ads,
                                      startd_of_slot, startds_registered_with, utc_offset_seconds)


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


class PoolEvents:
    """ScaleExperiment's failover and negotiation commands (needs topo, ssh, pool, submit,
    workers, job_ads, submit_sleepers, wait_running)."""

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
        wait_for(f"every running {role} job showing its start", ready, timeout, poll, host=self.submit,
                 message=why)
        return last["starts"]

    def negotiator_ad(self, cm=None):
        """The negotiator's ad with its latest cycles: asked of the negotiator on `cm` itself
        (its query handler publishes the cycle statistics fresh), else from the collector
        (where the negotiator's ad is refreshed every NEGOTIATOR_UPDATE_INTERVAL, 300 s by
        default: a wait for a new cycle may then take that long)."""
        if cm:
            fqdn = f"{cm}.{self.topo.trust_domain}"  # the negotiator's Name (the hosts file's first name)
            out = self.schedd.status(f"-negotiator -direct {fqdn} -l", timeout=60)
            ad = latest_negotiator(parse_long_ads(out.stdout)) if out.ok else None
            if ad:
                return ad
        out = self.schedd.status("-negotiator -l", timeout=60)
        return latest_negotiator(parse_long_ads(out.stdout)) if out.ok else None

    def next_cycle(self, cm, requests, after, timeout, poll=2.0, reschedule_every=30.0, stale_after=90.0):
        """The first negotiation cycle that starts after `after` (the CM's clock) and
        considers `requests` jobs, as (cm, cycle). Not the cycle's idle count: the negotiator
        sums that over submitter names, and another schedd's stale ad for the same user (the
        DTN's, left from a flocked job of an earlier suite for up to 15 minutes) made it read
        1 while the cycle considered all 50 requests. condor_reschedule asks for a cycle at once and
        again every `reschedule_every` s (a lost request would otherwise leave the wait to
        NEGOTIATOR_INTERVAL). When `cm`'s negotiator shows no new cycle for `stale_after` s,
        the active CM is looked up again: HAD may have moved the negotiator meanwhile."""
        st = {"cm": cm, "fresh": time.monotonic(), "asked": None, "last": None, "last_start": None}
        moves = []

        def saw_requests():
            now = time.monotonic()
            if st["asked"] is None or now - st["asked"] >= reschedule_every:
                self.schedd.reschedule()
                st["asked"] = now
            ad = self.negotiator_ad(st["cm"])
            if ad:
                st["last"] = negotiation_cycle(ad)
                if cycle_saw_requests(st["last"], after, requests):
                    return True
                if st["last"]["start"] != st["last_start"]:
                    st["last_start"], st["fresh"] = st["last"]["start"], now
            if now - st["fresh"] >= stale_after:
                try:
                    active = self.pool.active_cm()
                except RemoteError as e:
                    active = None
                    moves.append(str(e))
                if active and active != st["cm"]:
                    moves.append(f"negotiator moved {st['cm']} -> {active}")
                    st["cm"] = active
                st["fresh"] = now
            return False

        def why():
            idle = self.pool.queued(f"{role_constraint('negotiation')} && JobStatus == {JobStatus.IDLE:d}")
            return (f"no negotiation cycle considered {requests} jobs within {timeout:.0f} s "
                    f"(negotiator on {st['cm']}; the schedd has {idle} idle; latest cycle: {st['last']}"
                    + (f"; {'; '.join(moves)}" if moves else "") + ")")

        wait_for(f"a negotiation cycle that considered {requests} jobs", saw_requests, timeout, poll,
                 host=self.submit, message=why)
        return st["cm"], st["last"]

    # Each job its own resource request that every slot meets: the literal process number
    # makes each job's requirements (so its autocluster) its own, as the unmatchable jobs'.
    MATCHABLE = "(TARGET.Cpus >= 1) && ($(Process) >= 0)"

    def matched_cycle(self, cm, count, timeout):
        """Submit `count` sleepers tagged `matchable` that every free slot meets and return
        (cm, cycle): the first negotiation cycle that started after the submission and
        considered them all (negotiation_cycle's figures, `matches` among them)."""
        after = self.host_clock(cm)
        self.submit_sleepers(count, "matchable", requirements=self.MATCHABLE)
        return self.next_cycle(cm, count, after, timeout)

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

    def restart_condor(self, hosts):
        self.ssh.run_many({h: Daemons.RESTART for h in hosts}, check=False, timeout=180)

    def wait_startds(self, hosts, shared_port, timeout, poll=10):
        """Seconds until every planned slot of `hosts` is back in the collector, from
        startds whose address does (or does not) go through shared port."""
        names, last = {h.name for h in hosts}, {"ok": []}
        want = sum(h.total_slots for h in hosts)

        def back():
            out = self.schedd.status("-af Name MyAddress").stdout
            slots = [line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2]
            mine = [s for s in slots if startd_of_slot(s[0]).split("@")[-1].split(".")[0] in names]
            ok = last["ok"] = [s for s in mine if address_uses_shared_port(s[1]) == shared_port]
            return len(mine) >= want and len(ok) == len(mine)

        return float(wait_for(f"every slot of {', '.join(sorted(names))} back", back, timeout, poll, host=self.submit,
                              message=lambda: f"{len(last['ok'])} of {want} slots of {', '.join(sorted(names))} back "
                                              f"{'with' if shared_port else 'without'} shared port after {timeout} s"))

    # --- failover ----------------------------------------------------------------------------
    def kill_collector(self, host):
        """SIGKILL the collector only (its master restarts it, as after a crash)."""
        Daemons(self.ssh, host).kill_top_collector()

    def stop_collector(self, host):
        """Take a CCB server down until `start_collector`: the master keeps it off."""
        Daemons(self.ssh, host).off("collector")

    def start_collector(self, host):
        self.ssh.run(host, Daemons.on_command("collector") + " >/dev/null")

    def collector_running(self, host):
        return Daemons(self.ssh, host).is_running("collector")

    def wait_collector_stopped(self, host, timeout=60, poll=2):
        return Daemons(None, host).wait_stopped("collector", timeout, poll,
                                             running=lambda: self.collector_running(host))

    def worker_connections(self, host):
        """Established connections from the workers to `host`'s port 9618 (CCB + collector)."""
        ips = {h.site_ip for h in self.workers}
        out = self.ssh.run(host, "ss -Htn state established", check=False).stdout
        return count_inbound(out, HTCONDOR_PORT, ips)

    def why_not_running(self, role, log_lines=30):
        """What the schedd says of `role`'s jobs that do not run: `condor_q -better-analyze`
        and the SchedLog's last lines on claims, CCB and shadows (a failed wait's diagnosis,
        for the test's log)."""
        script = (f"{Schedd.analyze_command(role_constraint(role))}; echo '--- {SCHEDD_LOG}'; "
                  f"grep -aiE 'ccb|claim|shadow|activate|match' {SCHEDD_LOG} 2>&1 | tail -n {int(log_lines)}")
        r = self.ssh.run(self.submit, script, check=False, timeout=120)
        return (r.stdout + r.stderr).strip()

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
            out = self.schedd.status("-af Name MyAddress").stdout
            registered, every = last["startds"] = startds_registered_with(out.splitlines(), ip)
            now = last["connections"] = self.worker_connections(ccb_host)
            return every and registered == every and now >= connections

        def why():
            registered, every = last["startds"]
            return (f"{len(registered)} of {len(every)} startds name CCB {ccb_host} in their address "
                    f"and the workers hold {last['connections']} of {connections} connections to it "
                    f"{timeout} s after it returned")
        return float(wait_for(f"every startd registered with CCB {ccb_host}", registered_again, timeout, poll,
                              host=self.submit, message=why))

    def wait_collector_sees_startds(self, host, count, timeout, poll=10):
        """Seconds until the collector on `host` lists `count` startds again."""
        seen = set()

        def sees_them():
            out = self.schedd.status(f"-pool {host} -af Name")
            seen.clear()
            seen.update(startd_of_slot(n.strip()) for n in out.stdout.splitlines() if n.strip() and out.ok)
            return len(seen) >= count
        return float(wait_for(f"the collector on {host} listing {count} startds", sees_them, timeout, poll,
                              host=self.submit,
                              message=lambda: f"collector on {host} sees {len(seen)} of {count} startds "
                                              f"after {timeout} s"))

    def wait_cycle_after(self, cm, mark, timeout, poll=5):
        """The latest negotiation cycle of `cm`'s negotiator once one started after `mark`
        (the CM's clock); AssertionError after `timeout` s."""
        seen = {}

        def new_cycle():
            ad = self.negotiator_ad(cm)
            cycle = seen["cycle"] = negotiation_cycle(ad) if ad else None
            return bool(cycle and cycle["start"] > mark)

        wait_for(f"a negotiation cycle on {cm}", new_cycle, timeout, poll, host=self.submit, error=AssertionError,
                 message=f"no negotiation cycle within {timeout:.0f} s after the pool filled")
        return seen["cycle"]

    def collectors_on(self, hosts):
        """`condor_on -daemon collector` on every one of `hosts` (no-op where it runs)."""
        self.ssh.run_many({h: Daemons.on_command("collector", quiet=True) for h in hosts}, timeout=60)
