"""One run's context and the site a suite talks to.

`RunContext` is what `testbed run` resolves once and writes into the results
folder's manifest (the topology *file*, the scale, the profiles, the typed `--set`
parameters); a Robot suite given the folder reads it back from there instead of
re-parsing Robot variables. `Session` is the site seen from one suite: the
topology, its state, SSH, the pool and the storage, built once, with the
operations the keywords need (health, profiles, WAN, jobs, HA, storage, the
run's metrics). Robot's keyword libraries are thin adapters over it: TestbedLibrary owns
one per suite, and the area and experiment libraries reach it there.
"""
import os
import time
from dataclasses import dataclass, field

from testbed.harness import registry
from testbed.machines import existing
from testbed.model import constants, scaled_profiles, site_lock
from testbed.model.errors import RemoteError
from testbed.network import netem, wan
from testbed.services import health
from testbed.remote import profile_record, repair_record
from testbed.remote.site import Site
from testbed.results import runs, verdict
from testbed.services import tuning
from testbed.services.condor import JOB_AD_ATTRS, Pool, job_stats, submit_description
from testbed.services.storage import Storage


@dataclass
class RunContext:
    """What a run is about, resolved once: `topology` is a file path (or, for a plain
    `robot` run, a name under topologies/), `parameters` the typed `--set` overrides,
    `experiment_parameters` the suite's parameters at the scale with them (when known),
    `paused` the hosts `testbed run` paused for the run (harness/quiet.py)."""
    topology: str = "default"
    suite: str = ""
    scale: str = "quick"
    profiles: list = field(default_factory=lambda: ["default"])
    parameters: dict = field(default_factory=dict)
    experiment_parameters: dict | None = None
    results_dir: str | None = None
    paused: list = field(default_factory=list)

    @classmethod
    def from_results(cls, path):
        """The context `testbed run` wrote into the manifest of the results folder `path`."""
        m = runs.Run(path).manifest()
        topo = m.get("topology") or {}
        source = topo.get("file") if isinstance(topo, dict) else topo
        return cls(topology=str(source or "default"), suite=m.get("suite", ""), scale=m.get("scale", "quick"),
                   profiles=list(m.get("profiles") or ["default"]), parameters=dict(m.get("parameters") or {}),
                   experiment_parameters=m.get("experiment_parameters"), results_dir=str(path),
                   paused=list((m.get("quiet") or {}).get("paused") or []))

    def open_run(self):
        """The results folder `testbed run` made for this context."""
        manifest = runs.Run(self.results_dir).manifest()
        repeated = (manifest.get("trials") or 1) > 1
        return runs.Run(self.results_dir, trial=manifest.get("trial") if repeated else None)

    def params_for(self, name):
        """Experiment `name`'s parameters at this scale with this run's overrides."""
        if self.experiment_parameters is not None and name == self.suite:
            return dict(self.experiment_parameters)
        exp = registry.get(name)
        return exp.parameters(self.scale, {k: v for k, v in self.parameters.items() if k.lower() in exp.params})


class Session:
    """What one suite talks to: its topology's site (testbed.remote.site.Site: the topology
    and its state), SSH, pool and storage built once, the run it records into, and what the
    suite set last (profile, WAN links). The hosts in `paused` (paused by `testbed run` for
    the run) are left out of the health checks, the profile swaps and the WAN settings; the
    run brings them up to date when it resumes them."""

    def __init__(self, topo, ssh=None, paused=()):
        self.site = Site(topo)
        self.topo, self.state = topo, self.site.state
        self.paused = tuple(paused)
        self.ssh = ssh or self.site.ssh()
        self.pool = Pool(self.topo, self.ssh)
        self.storage = Storage(self.topo, self.ssh)
        self.run = None
        self.profile_in_force = None
        self.wan_in_force = {}  # (a, b) -> (configured, measured RTT) this suite set last
        self.derived_profiles = {}  # name -> a profile the suite made at run time (E1's scaled ones)

    # --- site and run ---------------------------------------------------------------
    def hold(self, what):
        """Hold the site for this suite's process (model/site_lock.py); a suite `testbed run`
        started runs under the run's hold."""
        return site_lock.hold(self.state, what)

    def unrepaired(self):
        """The line refusing a run on a site an earlier teardown could not restore, or None."""
        return repair_record.refusal(self.topo, self.state)

    def restore_failed(self, suite, step, problem):
        """Record a restore step of `suite`'s teardown that failed: the site needs repair."""
        return repair_record.record(self.state, suite, step, problem)

    def wait_healthy(self, timeout, echo):
        return health.wait_healthy(self.topo, self.ssh, timeout=float(timeout), echo=echo, skip=self.paused)

    def guest_versions(self):
        """condor, xrootd, kernel and os of the DTN (else, or while it is paused, the submit
        host), and the host's qemu."""
        probe = next(h for h in (self.topo.role_host("dtn"), self.topo.role_host("submit"))
                     if h is not None and h.name not in self.paused)
        versions = health.guest_versions(self.ssh, probe.name)
        versions["qemu"] = runs.host_facts()["qemu"]
        return versions

    def existing_host_facts(self):
        """{host: hardware and OS read off it} of the site's existing hosts (the manifest keeps
        them: such a host is no VM of this machine's, with nothing else saying what it is)."""
        return {h.name: existing.facts(self.ssh, h.name) for h in self.topo.existing_hosts}

    def record(self, name, value, unit="", **params):
        return self._open_run().record(name, float(value), unit, **params)

    def keep(self, relpath, data):
        """A JSON document into the run's results folder (runs.Run.keep)."""
        return self._open_run().keep(relpath, data)

    def _open_run(self):
        if self.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        return self.run

    def first_trial_value(self, name, **params):
        """In trial 2+ of a repeated run, the last value of metric `name` (with `params`) that
        trial 1 recorded: what keeps a point's parameters the same in every trial (E1 sizes
        its jobs' output from trial 1's saturation rate). None in trial 1 or a single run."""
        if self.run is None or self.run.trial in (None, 1):
            return None
        first = runs.Run(self.run.path, trial=1).metrics()
        found = runs.matching(first, name, **params)
        return found[-1]["value"] if found else None

    def claim_verdict(self, claim_id):
        """The verdict of one of this run's paper claims over every trial it has recorded so
        far: (Verdict, None), or (None, why it is not judged): a trial before the last, or no
        record of what the claim reads (a scale that does not measure the point)."""
        if self.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        manifest = self.run.manifest()
        exp = registry.get(manifest["suite"])
        claims = {c.id: c for c in verdict.load_file(exp.paper_path)} if exp.paper else {}
        if claim_id not in claims:
            raise AssertionError(f"{exp.paper or exp.name}: no claim {claim_id!r} "
                                 f"(claims: {', '.join(claims) or 'none'})")
        trials, trial = manifest.get("trials") or 1, manifest.get("trial") or 1
        if trial < trials:
            return None, f"judged after the last trial (this is trial {trial} of {trials})"
        judged = verdict.evaluate_all(list(claims.values()), runs.Run(self.run.path).metrics())
        found = next(v for v in judged if v.claim.id == claim_id)
        return (None, found.line()) if found.verdict == verdict.NO_DATA else (found, None)

    # --- profiles and WAN -----------------------------------------------------------
    @property
    def profile_name(self):
        """The profile the suite applied last (`default` before any)."""
        return self.profile_in_force.name if self.profile_in_force else "default"

    def current_profile(self):
        return self.profile_in_force or profile_record.recorded_profile(self.state)

    def add_profile(self, prof):
        """Make a profile built at run time (E1's scaled ones) one the suite can apply by name."""
        self.derived_profiles[prof.name] = prof
        return prof

    def load_profile(self, name):
        """A profile by name: one `add_profile` made, else the file's or a spec's (scaled_profiles.load)."""
        return self.derived_profiles.get(name) or scaled_profiles.load(name)

    def apply_profile(self, name, echo):
        """Apply profile `name`, record it on the site (and its time in the run); returns seconds."""
        prof = self.load_profile(name)
        previous, self.profile_in_force = self.current_profile(), None   # until this one is in force
        with profile_record.failure_recorded(self.state, prof):   # some hosts may have it: none is known in force
            outcome = tuning.apply(self.topo, self.ssh, prof, previous, echo=echo, skip=self.paused)
        profile_record.record_profile(self.state, prof, outcome)
        self.profile_in_force = prof
        self.wan_in_force = {}  # a profile may set links of its own
        if self.run is not None:
            self.record("profile.apply_seconds", outcome["seconds"], "s", profile=name)
        return outcome["seconds"]

    def apply_profile_if_needed(self, name, echo):
        """Apply profile `name` unless this suite applied it last or, before the suite applied
        any, the site's record names it and every value of it reads back; returns the seconds
        an apply took (0)."""
        current = self.current_profile()
        if current is None or current.name != name:
            return self.apply_profile(name, echo)
        if self.profile_in_force is not None:
            return 0.0
        started = time.monotonic()
        n, bad = self.profile_mismatches(name)
        if bad:
            return self.apply_profile(name, echo)
        self.profile_in_force = self.load_profile(name)
        echo(f"profile {name} already in force: {n} values read back in {time.monotonic() - started:.1f} s")
        return 0.0

    def profile_mismatches(self, name):
        """(values read back, mismatches) of profile `name` on the site."""
        got, bad = tuning.read_back(self.topo, self.ssh, self.load_profile(name), skip=self.paused)
        return sum(len(v) for v in got.values()), bad

    def set_wan_latency(self, a, b, rtt_ms, echo):
        """Emulate `rtt_ms` between host groups a and b (LAN elsewhere); returns the measured RTT."""
        return self.set_wan_latencies([(a, b)], rtt_ms, echo)[0]

    def set_wan_latency_if_needed(self, a, b, rtt_ms, echo):
        """Set `rtt_ms` between a and b unless this suite set it last; returns the measured RTT."""
        current = self.wan_in_force.get((a, b))
        if current is not None and current[0] == float(rtt_ms):
            return current[1]
        return self.set_wan_latency(a, b, rtt_ms, echo)

    def set_wan_latencies(self, pairs, rtt_ms, echo):
        """Emulate `rtt_ms` between each pair of host groups (the topology's own links stay,
        every other link the suite set goes); [measured RTT] per pair. What is in force is
        exactly these pairs afterwards: `set_wan_latency_if_needed` must not take a pair set
        earlier for one still in force."""
        links = [netem.Link(a=a, b=b, rtt_ms=float(rtt_ms)) for a, b in pairs]
        rows = wan.set_links(self.topo, self.ssh, self.state, links, count=10, skip=self.paused)
        self.wan_in_force = {}
        for (a, b), row in zip(pairs, rows):
            self.wan_in_force[(a, b)] = (float(rtt_ms), row["min_ms"])
            echo(f"  WAN {a}<->{b}: configured {float(rtt_ms):g} ms, measured {row['min_ms']} ms "
                 f"(least of {row['samples']} pings; median {row['measured_ms']} ms)")
            if self.run is not None:
                self.record("wan.rtt_measured", row["measured_ms"], "ms", link=f"{a}-{b}", rtt_ms=float(rtt_ms))
        return [row["min_ms"] for row in rows]

    def measure_rtt(self, a, b):
        """The RTT between a and b as it is now (emulation included): the least of 10 pings.
        The least, not the median, is what a fidelity check compares: netem's delay is fixed,
        and a busy host (TCG guests, the host's other work) only ever adds to it."""
        return wan.measure(self.topo, self.ssh, [netem.Link(a=a, b=b, rtt_ms=0)], count=10)[0]["min_ms"]

    def lan_rtt(self, a, b):
        """The RTT between a and b without emulation, the base a fidelity check subtracts:
        measure_rtt less what the links in force (the topology's own, e.g. `default`'s
        dtn<->origin, or one a row set) add between them."""
        added = wan.emulated_rtt(self.topo, wan.links_in_force(self.topo, self.state), a, b)
        return round(max(self.measure_rtt(a, b) - added, 0.0), 3)

    @staticmethod
    def check_measured_rtt(configured, measured, base=0.0):
        """A measured RTT within 1 ms + 5% of the configured one over the LAN's own `base`."""
        if not wan.within_target(float(configured), float(measured), float(base)):
            raise AssertionError(f"RTT {measured} ms (base {base} ms) is not within 1 ms + 5% of {configured} ms")

    def clear_wan(self):
        self.wan_in_force = {}
        wan.clear(self.topo, self.ssh, self.state, skip=self.paused)

    # --- jobs -----------------------------------------------------------------------
    def submit_sleep_jobs(self, count, seconds, requirements=None):
        desc = submit_description("/bin/sleep", str(seconds), count=int(count), requirements=requirements)
        return self.pool.submit(desc, f"{constants.SUBMIT_HOME}/jobs/sleep-{os.getpid()}-{time.time_ns()}")

    def job_transfer_metrics(self, cluster):
        return [job_stats(ad) for ad in self.pool.jobs(int(cluster), JOB_AD_ATTRS)
                if ad.get("JobStatus") == constants.JobStatus.COMPLETED]

    def check_jobs_ran_on_role(self, cluster, role):
        ads = self.pool.jobs(int(cluster), ["ClusterId", "ProcId", "LastRemoteHost", "JobStatus"])
        hosts = {h.name for h in self.topo.with_role(role)}
        for ad in ads:
            where = str(ad.get("LastRemoteHost", "")).split("@")[-1].split(".")[0]
            if where not in hosts:
                raise AssertionError(f"job {cluster}.{ad['ProcId']} ran on {where!r}, not on a {role} host")
        return ads

    def check_startds_through_ccb(self):
        try:
            workers = self.pool.worker_startd_ads()
        except RemoteError as e:
            raise AssertionError(str(e)) from None
        missing = [f"{m} {a}" for m, a in workers if "CCBID" not in a]
        if missing:
            raise AssertionError(f"{len(missing)} worker startd ads without a CCB contact: {missing[0][:160]}")
        return len(workers)

    def other_central_manager(self, host):
        return [h.name for h in self.topo.with_role("cm") if h.name != host][0]

    # --- storage --------------------------------------------------------------------
    def check_raid(self, level, members):
        info = self.storage.raid()
        want = f"raid{int(level)}"
        if info["level"] != want or len(info["members"]) != int(members) or info["degraded"] != "0" \
                or info["state"] not in ("clean", "active", "active-idle"):
            raise AssertionError(f"md0 is {info}, expected active {want} with {members} members")
        return info

    def check_caching_proxy_read(self, filename, echo):
        expected = self.storage.origin_checksums()[filename]
        endpoint = f"{self.storage.dtn.name}:{constants.XROOTD_CACHE_PORT}"
        got, seconds = self.storage.read_via(endpoint, f"/data/{filename}")
        if got != expected:
            raise AssertionError(f"{filename} via {endpoint}: adler32 {got}, origin recorded {expected}")
        echo(f"  {filename} via caching proxy: adler32 {got} matches origin ({seconds:.1f} s)")
        return got
