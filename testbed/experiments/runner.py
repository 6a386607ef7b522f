"""The experiment suites and how `testbed run` drives them through Robot Framework.

`testbed run` resolves the run's context once (the topology *file*, the scale,
the profiles, the typed `--set` parameters) and writes it into the results
folder's manifest; robot gets the folder (RESULTS_DIR, and SCALE for the suites'
own text) and the library reads the context from the manifest. The runner alone
closes the manifest (complete, failed or interrupted) and writes the run's one
report, `summary.html` (figures and the comparison with the paper). Plain
`robot robot/suites/X.robot` works too: the library then opens, closes and
reports its own folder.
"""
import re
import signal
import subprocess
import sys
import time

from testbed import PROJECT_ROOT
from testbed.machines import accel, disks
from testbed.model import profiles
from testbed.results import compare, runs as results
from testbed.experiments import registry, session
from testbed.model.errors import ConfigError
from testbed.model.schema import load_yaml

SCALES = registry.SCALES
SET_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
REPORT = "summary.html"


def suite_file(name):
    """The suite file of the registry's experiment `name` (ConfigError if there is none)."""
    return registry.get(name).suite_path


def parse_sets(items):
    """['rtts=0,20', 'jobs=8'] -> {'rtts': '0,20', 'jobs': '8'}."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not SET_KEY.match(key) or not value.strip():
            raise ConfigError("--set", item, "expected KEY=VALUE with a name like rtts and a value like 0,20,40")
        if key.upper() in {"TOPOLOGY", "SCALE", "PROFILES", "RESULTS_DIR"}:
            raise ConfigError("--set", item, f"{key} has its own option")
        out[key] = value.strip()
    return out


def robot_argv(suite, scale, run_dir, select=()):
    """`select`: robot's own selection, e.g. ["--test", "rtt80-2W-wan-tuned", "--include", "RTT80"].
    The rest of the run's context is in `run_dir`'s manifest."""
    argv = [sys.executable, "-m", "robot", "--outputdir", str(run_dir), "--consolewidth", "100",
            "--variable", f"SCALE:{scale}", "--variable", f"RESULTS_DIR:{run_dir}"]
    return argv + list(select) + [str(suite_file(suite))]


def open_run(topo, suite, profile_list, scale, sets):
    """The results folder with the run's context in its manifest: the topology (contents and
    absolute file), profiles, scale, typed `--set` overrides and the suite's parameters."""
    overrides, params = session.resolve(suite, scale, sets)
    return results.Run.create(
        suite, [p.name for p in profile_list],
        topology=load_yaml(topo.source) | {"file": session.topology_file(topo)},
        profile_contents={p.name: p.as_dict() for p in profile_list}, accel=accel.detect(),
        scale=scale, parameters=overrides, disks=disks.describe(topo), experiment_parameters=params)


def write_report(run, echo=print):
    """The run's one HTML report, `summary.html`: its figures and the comparison with the paper."""
    path, pngs = compare.render_html([run], run.path / REPORT, compare.load_paper(), title=run.label,
                                     axes=registry.plot_axes(), figure_makers=registry.figure_makers(),
                                     table_makers=registry.table_makers())
    echo(f"report: {path} ({len(pngs)} plots)")
    return path


def close_own_run(run, passed, echo=print):
    """For a run plain `robot` opened itself, what `run` does after robot: close the manifest
    (complete|failed) and, when it holds metrics, print the comparison and write the report."""
    if run.manifest().get("status") == "running":
        run.finish("complete" if passed else "failed")
    if run.metrics():
        echo("\n" + compare.render_text([run], compare.load_paper(), table_makers=registry.table_makers()))
        write_report(run, echo)


def check(suite, scale, profile_names, sets, topo=None):
    """Everything about a run that can be wrong before a VM is touched: the suite, the scale,
    `--set` keys and types, the profiles the suite has rows for and, given the topology,
    whether the scale fits it. Returns the Experiment."""
    exp = registry.get(suite)
    params = exp.parameters(scale, sets)
    exp.check_profiles(profile_names)
    if topo is not None:
        exp.check_topology(scale, params, topo)
    return exp


def run(topo, suite, profile_names, scale="quick", sets=None, echo=print, select=()):
    """Run one suite into a new results folder, close its manifest and write its report;
    returns (robot rc, Run). Without profile names, the experiment's own default profiles."""
    sets = parse_sets(sets) if isinstance(sets, list) else dict(sets or {})
    exp = registry.get(suite)
    profile_names = list(profile_names or exp.profiles)
    check(suite, scale, profile_names, sets, topo)
    profile_list = [profiles.load(n) for n in profile_names]
    run_ = open_run(topo, suite, profile_list, scale, sets)
    argv = robot_argv(suite, scale, run_.path, select)
    if select:
        run_.update(selection=list(select))
    echo(f"run {run_.label}: suite {suite}, {scale} scale, profiles {', '.join(p.name for p in profile_list)}")
    echo("$ " + " ".join(argv[2:]))
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=PROJECT_ROOT)

    def on_term(_signum, _frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, on_term)  # `kill` is an interruption too
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        try:
            # a terminal's Ctrl-C reaches robot too; a SIGINT sent to us alone must be passed on
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=120)  # robot stops gracefully: teardowns run, output is written
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            proc.kill()
            rc = proc.wait()
        run_.finish("interrupted")
        echo(f"interrupted: finished points kept in {run_.path}")
        try:
            write_report(run_, echo)
        except Exception as exc:  # the interruption is what the caller must see
            echo(f"no report: {exc}")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    status = run_.manifest().get("status")
    if status == "running":
        status = "complete" if rc == 0 else "failed"
        run_.finish(status)
    echo(f"run {run_.label}: {status} in {time.monotonic() - started:.0f} s (robot rc {rc}); {run_.path}")
    write_report(run_, echo)
    return rc, run_
