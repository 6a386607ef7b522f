"""Robot Framework keywords, thin over the `testbed` package: the site, profiles,
WAN emulation, jobs and the run's results folder. Experiment-specific keywords
live in TransferLibrary (E1) and SiteInABoxLibrary (E2) and share this one's
site connection and results folder."""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from robot.api import SkipExecution, logger  # noqa: E402
from robot.api.deco import keyword, library  # noqa: E402
from robot.libraries.BuiltIn import BuiltIn  # noqa: E402

from testbed.results import compare, runs as results  # noqa: E402
from testbed.services import health  # noqa: E402
from testbed.network import netem, wan  # noqa: E402
from testbed.model import profiles, topology  # noqa: E402
from testbed.experiments import registry, runner as suites  # noqa: E402
from testbed.services import tuning  # noqa: E402
from testbed.model import constants  # noqa: E402
from testbed.model.errors import RemoteError  # noqa: E402
from testbed.services.condor import Pool, submit_description  # noqa: E402
from testbed.remote.ssh import SSH  # noqa: E402
from testbed.model.state import TestbedState  # noqa: E402
from testbed.services.storage import Storage  # noqa: E402
from testbed.experiments.e1_transfer import job_stats  # noqa: E402

VERSIONS_CMD = ("echo condor=$(condor_version | head -1 | awk '{print $2}'); "
                "echo xrootd=$(xrootd -v 2>&1 | head -1); echo kernel=$(uname -r); "
                "echo os=$(. /etc/os-release; echo $PRETTY_NAME)")


def _var(name, default=None):
    try:
        return BuiltIn().get_variable_value("${" + name + "}", default)
    except Exception:  # outside a running suite (unit tests)
        return default


def _typed(value):
    """'80' -> 80, '0.5' -> 0.5, other values unchanged (Robot passes named arguments as text)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                f = float(value)
                return f if f == f else value
            except ValueError:
                return value
    return value


@library(scope="SUITE", auto_keywords=False)
class TestbedLibrary:
    def __init__(self, topology_name=None):
        self.topo = topology.load(topology_name or os.environ.get("TESTBED_TOPOLOGY", "default"))
        self.state = TestbedState(self.topo.name)
        self.ssh = SSH(self.topo, self.state)
        self.pool = Pool(self.topo, self.ssh)
        self.storage = Storage(self.topo, self.ssh)
        self.run = None
        self.profile_in_force = None
        self.wan_in_force = {}  # (a, b) -> (configured, measured RTT) this suite set last

    # --- site -------------------------------------------------------------------------
    @keyword
    def site_should_be_healthy(self, timeout=600):
        report = health.wait_healthy(self.topo, self.ssh, timeout=float(timeout), echo=logger.console)
        logger.info(health.format_report(report))
        return report

    @keyword
    def run_on_host(self, host, command, timeout=600):
        return self.ssh.run(host, command, timeout=float(timeout)).stdout

    # --- results ----------------------------------------------------------------------
    @keyword
    def start_experiment(self, suite):
        """Open the run's results folder (the one `testbed run` made, or a new one)
        and write the guests' software versions into its manifest."""
        names = self.profiles_to_compare()
        given = _var("RESULTS_DIR", "")
        if given:
            self.run = results.Run(given)
        else:
            self.run = suites.open_run(self.topo, suite, [profiles.load(n) for n in names],
                                       _var("SCALE", "quick"), {})
        probe = self.topo.role_host("dtn") or self.topo.role_host("submit")
        out = self.ssh.run(probe.name, VERSIONS_CMD).stdout
        versions = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        versions["qemu"] = results.host_facts()["qemu"]
        self.run.update(versions=versions)
        logger.console(f"  results: {self.run.path}")
        return str(self.run.path)

    @keyword
    def finish_experiment(self):
        """Close the manifest (complete|failed) and write the figures and paper table."""
        if self.run is None:
            return
        status = _var("SUITE_STATUS", "PASS")
        if self.run.manifest().get("status") == "running":
            self.run.finish("complete" if status == "PASS" else "failed")
        if self.run.metrics():
            figures = compare.load_paper()
            path, pngs = compare.render_html([self.run], self.run.path / "figures.html", figures,
                                             title=f"{self.run.label}", axes=registry.plot_axes(),
                                             figure_makers=registry.figure_makers(),
                                             table_makers=registry.table_makers())
            if not _var("RESULTS_DIR", ""):  # `testbed run` prints the comparison itself
                logger.console("\n" + compare.render_text([self.run], figures,
                                                           table_makers=registry.table_makers()))
            logger.console(f"  figures: {path} ({len(pngs)} plots)")

    @keyword
    def record_metric(self, name, value, unit="", **params):
        """One measurement into the run's metrics. Parameters written in a suite come as
        text: numbers among them are stored as numbers (plots and the paper match them)."""
        if self.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        rec = self.run.record(name, float(value), unit, **{k: _typed(v) for k, v in params.items()})
        logger.info(f"metric {rec}")
        return rec

    @keyword
    def record_metric_series(self, name, unit, series, column=1, **params):
        """A time series [(t, value, ...)] as one record per sample, with parameter t."""
        column = int(column)
        for row in series:
            self.record_metric(name, row[column], unit, t=round(float(row[0]), 1), **params)
        return len(series)

    @keyword
    def recorded_values(self, name, **params):
        """The values of metric `name` recorded so far in this run whose parameters include
        `params` (compared as text): what a summary test computes from, instead of state
        kept between tests."""
        if self.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        want = {k: str(_typed(v)) for k, v in params.items()}
        return [r["value"] for r in self.run.metrics() if r["name"] == name
                and all(str(r.get("params", {}).get(k)) == v for k, v in want.items())]

    # --- parameters and rows ----------------------------------------------------------
    @keyword
    def experiment_parameters(self, name):
        """The experiment's parameters at ${SCALE}, overridden by robot variables named like
        them (`testbed run --set rtts=0,20` passes RTTS); checked against its declaration."""
        exp = registry.get(name)
        given = {key: _var(key.upper()) for key in exp.params}
        params = exp.parameters(str(_var("SCALE", "quick")), {k: v for k, v in given.items() if v is not None})
        logger.info(f"{name} at {_var('SCALE', 'quick')} scale: {params}")
        return params

    @keyword
    def skip_unless_in_this_run(self, params, **point):
        """Skip the row (Robot `Skip`) when its point is not one of this run's: every value
        must be in the scale's list of that name (`profile`: among the profiles compared)."""
        scale = _var("SCALE", "quick")
        for key, value in point.items():
            if key == "profile":
                names = self.profiles_to_compare()
                if value not in names:
                    raise SkipExecution(f"profile {value} is not compared in this run (profiles: {', '.join(names)})")
                continue
            allowed = params[key]
            if float(value) not in [float(v) for v in allowed]:
                raise SkipExecution(f"{key} {value} is not a point of this run ({scale} scale: "
                                    f"{key} = {', '.join(str(v) for v in allowed)})")

    # --- profiles and WAN -------------------------------------------------------------
    @property
    def profile_name(self):
        """The profile the suite applied last (`default` before any)."""
        return self.profile_in_force.name if self.profile_in_force else "default"

    @keyword
    def profiles_to_compare(self):
        """${PROFILES} (comma-separated, from `testbed run --profile`), or the profile
        given to `robot --variablefile profiles/NAME.yaml`, or `default`."""
        given = _var("PROFILES", "")
        if given:
            return [p.strip() for p in str(given).split(",") if p.strip()]
        if isinstance(_var("roles"), dict) and _var("name"):
            return [str(_var("name"))]
        return ["default"]

    @keyword
    def apply_profile_if_needed(self, name):
        """Apply `name` unless this suite applied it last; returns the seconds it took (0)."""
        if self.profile_in_force is not None and self.profile_in_force.name == name:
            return 0.0
        return self.apply_profile(name)

    @keyword
    def apply_profile(self, name):
        prof = profiles.load(name)
        previous = self.profile_in_force or health.recorded_profile(self.state)
        outcome = tuning.apply(self.topo, self.ssh, prof, previous, echo=logger.console)
        health.record_profile(self.state, prof, outcome)
        self.profile_in_force = prof
        self.wan_in_force = {}  # a profile may set links of its own
        if self.run is not None:
            self.record_metric("profile.apply_seconds", outcome["seconds"], "s", profile=name)
        return outcome["seconds"]

    @keyword
    def restore_the_default_profile(self):
        """Suite teardown: apply `default` unless it is known to be in force (this suite applied
        it last, or the site's record says so); returns the seconds it took (0)."""
        current = self.profile_in_force or health.recorded_profile(self.state)
        if current is not None and current.name == "default":
            return 0.0
        return self.apply_profile("default")

    @keyword
    def profile_should_be_in_force(self, name):
        prof = profiles.load(name)
        got, bad = tuning.read_back(self.topo, self.ssh, prof)
        if bad:
            raise AssertionError(f"profile {name}: {bad[0]} ({len(bad)} mismatches)")
        n = sum(len(v) for v in got.values())
        logger.console(f"  profile {name}: {n} values read back, all as the profile says")
        return n

    @keyword
    def set_wan_latency(self, a, b, rtt_ms):
        """Emulate `rtt_ms` between host groups a and b (LAN elsewhere); returns the measured RTT."""
        rows = wan.set_links(self.topo, self.ssh, self.state, [netem.Link(a=a, b=b, rtt_ms=float(rtt_ms))],
                             count=10)
        measured = rows[0]["measured_ms"]
        self.wan_in_force[(a, b)] = (float(rtt_ms), measured)
        logger.console(f"  WAN {a}<->{b}: configured {float(rtt_ms):g} ms, measured {measured} ms")
        if self.run is not None:
            self.record_metric("wan.rtt_measured", measured, "ms", link=f"{a}-{b}", rtt_ms=float(rtt_ms))
        return measured

    @keyword
    def set_wan_latency_if_needed(self, a, b, rtt_ms):
        """Set `rtt_ms` between a and b unless this suite set it last; returns the measured RTT."""
        current = self.wan_in_force.get((a, b))
        if current is not None and current[0] == float(rtt_ms):
            return current[1]
        return self.set_wan_latency(a, b, rtt_ms)

    @keyword
    def measured_rtt_should_match(self, configured, measured, base=0.0):
        if not wan.within_target(float(configured), float(measured), float(base)):
            raise AssertionError(f"RTT {measured} ms (base {base} ms) is not within 1 ms + 5% of {configured} ms")

    @keyword
    def measure_rtt(self, a, b):
        link = netem.Link(a=a, b=b, rtt_ms=0)
        return wan.measure(self.topo, self.ssh, [link], count=10)[0]["measured_ms"]

    @keyword
    def clear_wan(self):
        self.wan_in_force = {}
        wan.clear(self.topo, self.ssh, self.state)

    # --- jobs -------------------------------------------------------------------------
    @keyword
    def clear_job_queue(self):
        """Remove jobs an earlier (interrupted) run left on the submit host."""
        removed = self.pool.clear_queue()
        if removed:
            logger.console(f"  removed {removed} job(s) left in the queue by an earlier run")
        return removed

    @keyword
    def submit_sleep_jobs(self, count=1, seconds=5, requirements=None):
        desc = submit_description("/bin/sleep", str(seconds), count=int(count), requirements=requirements)
        cluster = self.pool.submit(desc, f"{constants.SUBMIT_HOME}/jobs/sleep-{os.getpid()}-{time.time_ns()}")
        logger.info(f"submitted cluster {cluster}: {count} x sleep {seconds}")
        return cluster

    @keyword
    def wait_for_jobs(self, cluster, count=1, timeout=600):
        return self.pool.wait(int(cluster), int(count), timeout=float(timeout))

    @keyword
    def collect_job_transfer_metrics(self, cluster):
        from testbed.experiments.e1_transfer import AD_ATTRS
        return [job_stats(ad) for ad in self.pool.jobs(int(cluster), AD_ATTRS) if ad.get("JobStatus") == constants.JobStatus.COMPLETED]

    @keyword
    def jobs_should_have_run_on_role(self, cluster, role):
        ads = self.pool.jobs(int(cluster), ["ClusterId", "ProcId", "LastRemoteHost", "JobStatus"])
        hosts = {h.name for h in self.topo.with_role(role)}
        for ad in ads:
            where = str(ad.get("LastRemoteHost", "")).split("@")[-1].split(".")[0]
            if where not in hosts:
                raise AssertionError(f"job {cluster}.{ad['ProcId']} ran on {where!r}, not on a {role} host")
        return ads

    @keyword
    def startds_should_be_reached_through_ccb(self):
        try:
            workers = self.pool.worker_startd_ads()
        except RemoteError as e:
            raise AssertionError(str(e)) from None
        missing = [f"{m} {a}" for m, a in workers if "CCBID" not in a]
        if missing:
            raise AssertionError(f"{len(missing)} worker startd ads without a CCB contact: {missing[0][:160]}")
        return len(workers)

    # --- high availability --------------------------------------------------------------
    @keyword
    def active_central_manager(self):
        return self.pool.active_cm()

    @keyword
    def kill_central_manager(self, host):
        self.pool.kill_cm(host)

    @keyword
    def restart_central_manager(self, host):
        self.pool.restart_cm(host)

    @keyword
    def negotiator_should_move_to(self, host, timeout=300):
        seconds = self.pool.wait_negotiator_on(host, timeout=float(timeout))
        logger.console(f"  negotiator active on {host} after {seconds:.0f} s")
        return seconds

    @keyword
    def other_central_manager(self, host):
        others = [h.name for h in self.topo.with_role("cm") if h.name != host]
        return others[0]

    # --- storage ----------------------------------------------------------------------
    @keyword
    def raid_should_be(self, level, members):
        info = self.storage.raid()
        want = f"raid{int(level)}"
        if info["level"] != want or len(info["members"]) != int(members) or info["degraded"] != "0" \
                or info["state"] not in ("clean", "active", "active-idle"):
            raise AssertionError(f"md0 is {info}, expected active {want} with {members} members")
        return info

    @keyword
    def planned_raid_members(self):
        return self.storage.dtn.disks.count

    @keyword
    def read_through_caching_proxy_and_check(self, filename):
        expected = self.storage.origin_checksums()[filename]
        endpoint = f"{self.storage.dtn.name}:{constants.XROOTD_CACHE_PORT}"
        got, seconds = self.storage.read_via(endpoint, f"/data/{filename}")
        if got != expected:
            raise AssertionError(f"{filename} via {endpoint}: adler32 {got}, origin recorded {expected}")
        logger.console(f"  {filename} via caching proxy: adler32 {got} matches origin ({seconds:.1f} s)")
        return got
