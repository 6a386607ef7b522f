"""Robot Framework keywords of the run, thin over `testbed.harness.session`: its results
folder and records, the paper's claims, the experiment's parameters and profiles, the
site's health; and the suite's session, which the area libraries (TuningLibrary,
NetworkLibrary, CondorLibrary, StorageLibrary) and the experiment libraries
(TransferLibrary, ...) share. Given the results folder of `testbed run` (RESULTS_DIR),
the run's context (topology file, scale, profiles, typed parameters) is read from its
manifest; under plain `robot` the library opens, closes and reports its own run."""
import os

from robot.api import SkipExecution, logger
from robot.api.deco import keyword, library
from robot.libraries.BuiltIn import BuiltIn

from testbed.harness import points, registry, runner, session
from testbed.model import scaled_profiles, topology
from testbed.services import health


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
    """`context` is the run's (from RESULTS_DIR's manifest) or None under plain robot;
    `site` the suite's session (its topology, state, SSH, pool, storage and run)."""

    def __init__(self, topology_name=None, results_dir=None):
        self.context = session.RunContext.from_results(results_dir) if results_dir else None
        ref = self.context.topology if self.context else \
            (topology_name or os.environ.get("TESTBED_TOPOLOGY", "default"))
        self.site = session.Session(topology.load(ref), paused=self.context.paused if self.context else ())

    @property
    def scale(self):
        return self.context.scale if self.context else str(_var("SCALE", "quick"))

    # --- site -------------------------------------------------------------------------
    @keyword
    def site_should_be_healthy(self, timeout=600):
        report = self.site.wait_healthy(timeout, echo=logger.console)
        logger.info(health.format_report(report))
        return report

    @keyword
    def run_on_host(self, host, command, timeout=600):
        return self.site.ssh.run(host, command, timeout=float(timeout)).stdout

    # --- results ----------------------------------------------------------------------
    @keyword
    def start_experiment(self, suite):
        """Open the run's results folder (the one `testbed run` made, or a new one)
        and write the guests' software versions (and each existing host's hardware and
        OS) into its manifest. Refused on a site an earlier teardown could not restore, and
        while another command holds the site (a plain `robot` holds it to its end)."""
        self.site.hold(f"robot {suite}")
        problem = self.site.unrepaired()
        if problem:
            raise AssertionError(problem)
        if self.context:
            self.site.run = self.context.open_run()
        else:
            names = self.profiles_to_compare()
            self.site.run = runner.open_run(self.site.site, registry.get(suite),
                                            [scaled_profiles.for_run(n) for n in names],
                                            self.scale, self._robot_overrides(suite))
        self.site.run.update(versions=self.site.guest_versions())
        hosts = self.site.existing_host_facts()
        if hosts:  # hardware and OS of the machines the testbed did not create
            self.site.run.update(existing_hosts=hosts)
        logger.console(f"  results: {self.site.run.path}")
        return str(self.site.run.path)

    @keyword
    def restore_step(self, name, *args):
        """One restore step of a suite's teardown (`Restore Step    Clear WAN`). A step that fails
        is recorded (testbed/remote/repair_record.py: the next run refuses until the site is brought
        up again) and fails the teardown; Robot still runs the steps after it."""
        try:
            return BuiltIn().run_keyword(name, *args)
        except Exception as exc:
            self.site.restore_failed(_var("SUITE NAME", "?"), " ".join([name, *map(str, args)]), exc)
            logger.console(f"  restore failed: {name}: {exc}; the site needs repair")
            raise

    @keyword
    def finish_experiment(self):
        """Under plain robot, close the manifest (complete|failed) and write the report;
        `testbed run` does both itself once robot is done. As there, a row reported SKIP
        (not a point of the scale, a known upstream defect) is not a failure."""
        if self.site.run is None or self.context:
            return
        runner.close_own_run(self.site.run, _var("SUITE_STATUS", "PASS") != "FAIL", echo=logger.console)

    @keyword
    def record_metric(self, name, value, unit="", **params):
        """One measurement into the run's metrics. Parameters written in a suite come as
        text: numbers among them are stored as numbers (plots and the paper match them)."""
        rec = self.site.record(name, value, unit, **{k: _typed(v) for k, v in params.items()})
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
        if self.site.run is None:
            raise AssertionError("no results folder: call Start Experiment in the suite set-up")
        want = {k: str(_typed(v)) for k, v in params.items()}
        return [r["value"] for r in self.site.run.metrics() if r["name"] == name
                and all(str(r.get("params", {}).get(k)) == v for k, v in want.items())]

    @keyword
    def paper_claim_should_hold(self, claim_id):
        """One of the paper's claims, checks or findings (results/paper/<suite>.yaml `claims:`),
        judged over every trial of this run: FAIL when contradicted (a check: when it fails);
        SKIP when it cannot fail: no data, one trial (its value and side in the message), out
        of reach, or judged after a later trial; PASS with the verdict as the message."""
        found, why = self.site.claim_verdict(claim_id)
        if found is None:
            raise SkipExecution(why)   # Robot's console prints a SKIP's or a FAIL's message itself
        line = found.line()
        if not found.judged:
            raise SkipExecution(line)
        if not found.passes:
            raise AssertionError(line)
        logger.console(f"  {line}")
        BuiltIn().set_test_message(line)
        return found.verdict

    # --- parameters and rows ----------------------------------------------------------
    @keyword
    def experiment_parameters(self, name):
        """The experiment's parameters at the run's scale with its `--set` overrides (from the
        manifest), or under plain robot overridden by robot variables named like them
        (`robot --variable RTTS:0,20`); checked against its declaration."""
        if self.context:
            params = self.context.params_for(name)
        else:
            params = registry.get(name).parameters(self.scale, self._robot_overrides(name))
        logger.info(f"{name} at {self.scale} scale: {params}")
        return params

    def _robot_overrides(self, name):
        """Plain robot: robot variables named like the experiment's parameters."""
        given = {key: _var(key.upper()) for key in registry.get(name).params}
        return {k: v for k, v in given.items() if v is not None}

    @keyword
    def skip_unless_in_this_run(self, params, **point):
        """Skip the row (Robot `Skip`) when its point is not one of this run's: every value
        must be in the scale's list of that name (`profile`: among the profiles compared).
        `testbed run` leaves such rows out before robot starts (robot/modifiers/PointsOfThisRun.py);
        under plain robot they are skipped here."""
        why = points.outside_run(point, params, self.profiles_to_compare(), self.scale)
        if why:
            raise SkipExecution(why)

    # --- profiles compared -------------------------------------------------------------
    @keyword
    def profiles_to_compare(self):
        """The run's profiles (`testbed run --profile`, from the manifest); under plain robot
        ${PROFILES} (comma-separated), or the profile given to
        `robot --variablefile profiles/NAME.yaml`, or `default`."""
        if self.context:
            return list(self.context.profiles)
        given = _var("PROFILES", "")
        if given:
            return [p.strip() for p in str(given).split(",") if p.strip()]
        if isinstance(_var("roles"), dict) and _var("name"):
            return [str(_var("name"))]
        return ["default"]
