"""The experiment suites and how `testbed run` drives them through Robot Framework.

`testbed run` resolves the run's context once (the topology *file*, the scale,
the profiles, the typed `--set` parameters) and writes it into the results
folder's manifest; robot gets the folder (RESULTS_DIR, and SCALE for the suites'
own text) and the library reads the context from the manifest. Around the trials the
runner pauses the guests the experiment does not use and pins the measured ones, and
undoes both however the run ends (harness/quiet.py). The runner alone
closes the manifest (complete, failed or interrupted); whoever asked for the run
writes its one report, `summary.html` (figures and the comparison with the paper):
`run` here, the CLI with the comparison it prints from the same reading. Plain
`robot robot/suites/X.robot` works too: the library then opens, closes and
reports its own folder.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.machines import accel, disks, plan, quiesce, snapshots
from testbed.model import hypervisors, scaled_profiles, site_history, site_lock
from testbed.results import compare, release_record, runs
from testbed.harness import points, quiet, registry
from testbed.model.errors import ConfigError, TestbedError
from testbed.network import wan
from testbed.remote import console, profile_record, repair_record
from testbed.remote.poll import wait_for
from testbed.services import health

SCALES = registry.SCALES
SET_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
REPORT = "summary.html"
DEFAULT_CONSOLE_WIDTH = 100   # robot's console when the output is not a terminal (a CI log)
MIN_CONSOLE_WIDTH = 40        # below this robot's status column leaves no room for a row's name


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


def console_width(size=None):
    """The width robot's console lines must fit: the terminal's (or $COLUMNS; 100 when the
    output is not a terminal), at least MIN_CONSOLE_WIDTH."""
    columns = (size or shutil.get_terminal_size((DEFAULT_CONSOLE_WIDTH, 24))).columns
    return max(MIN_CONSOLE_WIDTH, columns)


# leaves out the rows that are not points of the run (robot shows no SKIP for them)
POINTS_MODIFIER = PROJECT_ROOT / "robot" / "modifiers" / "PointsOfThisRun.py"
# prints a line as each point starts: which of how many, the time elapsed, an estimate of the rest
PROGRESS_LISTENER = PROJECT_ROOT / "robot" / "listeners" / "Progress.py"


def robot_argv(exp, scale, run_dir, select=(), trial=None, width=None):
    """robot's argv for one trial of the experiment `exp` (registry.Experiment). `select`:
    robot's own selection, e.g. ["--test", "rtt80-2W-wan-tuned", "--include", "RTT80"].
    The rest of the run's context is in `run_dir`'s manifest. `trial`: the trial of a repeated
    run, whose robot outputs are named after it (output-trial2.xml, log-trial2.html, ...).
    `width`: robot's console width (default: the terminal's, `console_width`)."""
    argv = [sys.executable, "-m", "robot", "--outputdir", str(run_dir),
            "--prerunmodifier", f"{POINTS_MODIFIER};{run_dir}",
            "--listener", f"{PROGRESS_LISTENER};{run_dir}",
            "--consolewidth", str(width or console_width()),
            "--variable", f"SCALE:{scale}", "--variable", f"RESULTS_DIR:{run_dir}"]
    if trial is not None:
        argv += ["--output", f"output-trial{trial}.xml", "--log", f"log-trial{trial}.html",
                 "--report", f"report-trial{trial}.html"]
    return argv + list(select) + [str(exp.suite_path)]


def trials_for(exp, scale, repeat=None):
    """How many times a run repeats its suite: `repeat` when given (>= 1), else the count the
    experiment `exp` declares for the scale (registry `trials`)."""
    if repeat is None:
        return exp.trials[scale]
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigError("testbed run", "--repeat", f"{repeat!r}: must be a whole number >= 1")
    return repeat


def sized_for_site(exp, scale, topo, accelerator, sets, label=None, echo=print):
    """The run's --set values plus what the experiment `exp` sizes for this site (E1 under
    TCG: the saturation jobs the submit host's emulated CPUs carry), one line each; a value
    the user set is kept as given. `testbed run`, the demo and the benchmarks size a run
    through here."""
    sized, why = exp.sized_for(scale, accelerator, topo)
    given = {key.lower() for key in sets}
    for (name, value), line in zip(sized.items(), why):
        if name in given:
            continue
        sets = {**sets, name: value}
        scale_line(label or scale, accelerator, line, echo)
    return sets


def scale_line(label, accelerator, line, echo=print):
    echo(f"{label} scale ({accelerator.upper()}, {os.cpu_count()} host cores): {line}")


def open_run(site, exp, profile_list, scale, sets):
    """The results folder with the run's context in its manifest: the site's topology
    (contents and absolute file), profiles, scale, typed `--set` overrides, the experiment
    `exp`'s parameters with them and each host's hypervisor."""
    params = exp.parameters(scale, sets)
    overrides = {str(k).lower(): params[str(k).lower()] for k in sets}   # the `--set` values, typed
    topo, state = site.topo, site.state
    run = runs.Run.create(
        exp.name, [p.name for p in profile_list],
        # the box as booted: `up --box` may have chosen another than the file's
        topology=topo.contents | {"file": str(Path(topo.source).resolve()), "box": str(topo.box_spec)},
        profile_contents={p.name: p.as_dict() for p in profile_list}, accel=accel.detect(),
        scale=scale, parameters=overrides, experiment_parameters=params,
        placement=hypervisors.placement(topo), disks=disks.describe(topo), site=site_history.for_run(state))
    site_history.add_run(state, run.path.name)
    return run


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
    whether the scale fits it. Returns (the Experiment, its parameters at `scale` with the
    sets): the one place a run's suite name is looked up and its parameters typed."""
    exp = registry.get(suite)
    params = exp.parameters(scale, sets)
    exp.check_profiles(profile_names)
    if topo is not None:
        exp.check_topology(scale, params, topo)
    return exp, params


def check_run(suite, scale, profile_names, set_items, repeat=None, tests=(), tags=()):
    """What `testbed run` checks before the site is asked: the suite, the scale, the `--set`
    items (keys, types and bounds), the profiles, `--repeat` and the `--test`/`--include`
    selection. Returns (the Experiment, the typed sets, the experiment's parameters with them)."""
    sets = parse_sets(set_items)
    exp, params = check(suite, scale, profile_names, sets)
    trials_for(exp, scale, repeat)
    check_selection(exp, tests, tags, scale, params, profile_names or list(exp.profiles))
    return exp, sets, params


def check_selection(exp, tests=(), tags=(), scale="quick", params=None, profiles=()):
    """Refuse (ConfigError, one line) a `--test`/`--include` selection that picks no test of
    the suite, or only rows that are not points of this run (`params`: the experiment's at
    `scale` with the run's overrides; `profiles`: those compared), before a results folder is
    made or the site is asked: matched by robot's own rules (case, spaces and `*` patterns)
    on the suite file."""
    if not tests and not tags:
        return
    from robot.api import TestSuite
    path = exp.suite_path
    found = TestSuite.from_file_system(str(path))
    names = [t.name for t in found.all_tests]
    found.filter(included_tests=list(tests) or None, included_tags=list(tags) or None)
    asked = " ".join([*(f"--test {t}" for t in tests), *(f"--include {t}" for t in tags)])
    if found.test_count == 0:
        shown = ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")
        raise ConfigError(str(path.relative_to(PROJECT_ROOT)), asked, f"selects no test of the suite (its tests: {shown})")
    if params is not None:
        left_out = points.outside_rows(found, exp.points, params, list(profiles), scale)
        if len(left_out) == found.test_count:
            name, why = next(iter(left_out.items()))
            raise ConfigError(str(path.relative_to(PROJECT_ROOT)), asked,
                              f"selects only rows that are not points of this run ({name}: {why}; "
                              f"`--set` or another scale adds them)")


# --- interruptions: robot runs in a process group of its own; we pass each signal on once ---------
INTERRUPT_LISTENER = PROJECT_ROOT / "robot" / "listeners" / "Interrupted.py"
SIGNALS_FILE = ".robot-signals"  # in the results folder: one line for each signal robot received
FORWARD_AFTER_S = 0.5  # a signal robot has not counted by then did not reach it: pass it on
KILL_AFTER = 4  # the 4th signal to `testbed run` kills a robot that ignored three


def with_listener(argv, ack_file):
    """robot's argv with the listener that stops a run gracefully on SIGINT/SIGTERM."""
    at = argv.index("robot") + 1 if "robot" in argv else 1
    return argv[:at] + ["--listener", f"{INTERRUPT_LISTENER};{ack_file}"] + argv[at:]


def signals_received(ack_file):
    """The signals robot counted (the listener's lines)."""
    try:
        return [line for line in open(ack_file).read().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def supervise(argv, ack_file, echo=print, popen=None, forward_after=FORWARD_AFTER_S):
    """Run robot until it exits; returns (rc, names of the signals `testbed run` or robot got).

    robot runs in a process group of its own, stdin /dev/null: a terminal's Ctrl-C (SIGINT to
    the foreground group) reaches us only, not robot nor the ssh, tc or virsh commands of the
    keyword running - a teardown's command is not killed half-way. SIGINT/SIGTERM/SIGHUP to us
    never stop us: each is passed on to robot once, whose listener runs the graceful stop
    (skip what is left, run the teardowns, ask once more, abandon). A signal robot counted
    by itself within `forward_after` s (a service manager signals every process of the
    unit) is not passed on again. The KILL_AFTER-th signal kills robot."""
    popen = popen or subprocess.Popen  # looked up now: tests replace the module's subprocess
    got, forwarded = [], set()

    def on_signal(signum, _frame):
        name = "SIGTERM" if signum == signal.SIGHUP else signal.Signals(signum).name  # the terminal closed
        got.append((name, time.monotonic()))
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    main = threading.current_thread() is threading.main_thread()  # signals can only be caught there
    # caught before robot starts: robot, in a group of its own, would outlive a KeyboardInterrupt here
    previous = {s: signal.signal(s, on_signal) for s in handled} if main else {}
    try:
        proc = popen(argv, cwd=PROJECT_ROOT, process_group=0, stdin=subprocess.DEVNULL)
    except BaseException:
        for s, h in previous.items():
            signal.signal(s, h)
        raise

    def ended():
        counted = len(signals_received(ack_file))
        for k, (name, at) in enumerate(got, 1):
            if k > counted and k not in forwarded and time.monotonic() - at >= forward_after \
                    and proc.poll() is None:
                proc.send_signal(getattr(signal, name))
                forwarded.add(k)
        if len(got) >= KILL_AFTER and proc.poll() is None:
            echo(f"robot (pid {proc.pid}) still runs after {len(got) - 1} signals: killed; "
                 f"output.xml may be incomplete")
            proc.kill()
        return proc.poll() is not None
    try:
        wait_for("robot to exit", ended, float("inf"), 0.2)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return proc.wait(), [name for name, _at in got] or signals_received(ack_file)


def _link_key(link):
    """A link record as comparable data: its pair (either order) and its impairments."""
    return (frozenset((link.get("a"), link.get("b"))),) + tuple(
        float(link.get(k) or 0) for k in ("rtt_ms", "jitter_ms", "loss_pct", "rate_mbit"))


def site_left(site):
    """After an interruption, what the site's records say is left in force beyond its normal
    state (a profile other than `default`, emulated WAN links), with how to undo each; []
    when nothing is. The records are what the suite's steps wrote last: a teardown abandoned
    half-way may have left a change it had not recorded yet."""
    topo, state = site.topo, site.state
    lines = []
    prof = profile_record.recorded_profile(state)
    if prof is not None and prof.name != "default":
        lines.append(f"left: profile {prof.name} in force (undo: ./tb -t {topo.name} profile apply default)")
    try:
        links = wan.in_force(state).get("links") or []
    except (OSError, ValueError):
        links = []
    own = {_link_key(vars(link)) for link in topo.wan}  # the topology's links: its normal state
    delayed = [f"{link.get('a')}<->{link.get('b')} {link.get('rtt_ms'):g} ms" for link in links
               if isinstance(link, dict) and float(link.get("rtt_ms") or 0) > 0 and _link_key(link) not in own]
    if delayed:
        lines.append(f"left: WAN {', '.join(delayed)} (undo: ./tb -t {topo.name} wan clear)")
    return lines


def run(site, suite, profile_names, scale="quick", sets=None, echo=print, select=(), repeat=None,
        pause_unused=None, pin=None):
    """`run_checked` for the suite named `suite`, checked first (`check`) against the site's
    topology, as `testbed test`, the demo and the benchmarks ask for it, and its report
    written, interrupted or not; `sets`: --set items or the typed sets."""
    sets = parse_sets(sets) if isinstance(sets, list) else dict(sets or {})
    exp, _params = check(suite, scale, list(profile_names or []), sets, site.topo)
    rc, run_ = run_reporting_interruption(site, exp, scale, sets, profile_names, echo=echo, select=select,
                                          repeat=repeat, pause_unused=pause_unused, pin=pin)
    write_report(run_, echo)
    return rc, run_


def run_reporting_interruption(site, exp, scale, sets, profile_names=None, echo=print, **how):
    """`run_checked`; a run a signal stopped gets its report (`report_interrupted`) before the
    interruption goes on."""
    try:
        return run_checked(site, exp, scale, sets, profile_names, echo=echo, **how)
    except runs.RunInterrupted as stop:
        report_interrupted(stop, echo)
        raise


def run_checked(site, exp, scale, sets, profile_names=None, echo=print, select=(), repeat=None,
                pause_unused=None, pin=None, from_snapshot=None):
    """Run the experiment `exp` (registry.Experiment; the scale, the typed `sets` and the
    profiles already checked for it: `check`) on the site (testbed.remote.site.Site) `repeat`
    times (default: the trials it declares at the scale) into one new results folder and close
    its manifest, leaving its report to the caller; returns (robot rc, Run): the first non-zero
    rc of the trials, else 0; runs.RunInterrupted when a signal stopped it. Without profile
    names, the experiment's own defaults.
    `pause_unused`, `pin` (None: the topology's or the scale's choice, harness/quiet.py):
    the guests the experiment does not use are paused and the measured ones pinned for all
    the trials, and resumed and unpinned after them, however the run ends.
    `from_snapshot`: the site is reverted to that snapshot first, so repeated runs start from
    the same state. The `--set` values are sized for the site (`sized_for_site`)."""
    topo, state = site.topo, site.state
    suite = exp.name
    profile_names = list(profile_names or exp.profiles)
    trials = trials_for(exp, scale, repeat)
    sets = sized_for_site(exp, scale, topo, plan.recorded_accel(state), sets, echo=echo)
    site_lock.hold(state, f"run {suite}")
    if from_snapshot:
        snapshots.restore(site, from_snapshot, site.ssh(), health=health)
    unfit = site_unfit(site)
    if unfit:
        raise TestbedError(f"testbed run {suite}: {unfit[1]}")
    profile_list = [scaled_profiles.for_run(n) for n in profile_names]  # a scaled one gets its k in the run
    release_record.refuse_unknown_knobs(profile_list, site)
    quiesce.undo_left(site, echo=echo)  # a run killed outright left guests paused or pinned
    site_quiet, entry = quiet.prepare(site, exp, scale, pause_unused, pin, echo=echo)
    run_ = open_run(site, exp, profile_list, scale, sets)
    run_.update(trials=trials, trials_declared=exp.trials[scale], quiet=entry, **({"selection": list(select)} if select else {}))
    echo(f"run {run_.label}: suite {suite}, {scale} scale, profiles {', '.join(p.name for p in profile_list)}"
         + (f", {trials} trials" if trials > 1 else ""))
    echo(quiet.summary(entry))
    return _trials(site, exp, scale, select, trials, run_, site_quiet, entry, echo)


def site_unfit(site, guests_may_have_died=True):
    """Why no trial can run on the site now, as (the manifest's record, one line), or None:
    a guest whose kernel died (looked for only when `guests_may_have_died`), else a
    teardown that could not restore the site and left it needing repair."""
    topo, state = site.topo, site.state
    died = console.dead_guests(topo) if guests_may_have_died else {}
    if died:
        return {"dead_guests": died}, console.dead_text(topo, died)
    unrepaired = repair_record.refusal(topo, state)
    if unrepaired:
        return {"needs_repair": repair_record.needed(state)}, unrepaired
    return None


def _trials(site, exp, scale, select, trials, run_, site_quiet, entry, echo):
    """The trials of `run_checked`, each one robot process, with the unused guests paused and
    the measured ones pinned (`site_quiet`, its manifest `entry`), until the last, an
    interruption or a site no later trial could run on; then closes the manifest, with what
    pausing and resuming did. Pausing or pinning that fails (undone) fails the run before a
    trial; an interruption raises runs.RunInterrupted once the guests are resumed."""
    started, rcs, signals, left, trial = time.monotonic(), [], [], [], 0
    ack = run_.path / SIGNALS_FILE
    ended = "failed"   # until the loop is done: pausing or pinning failed (undone), or a step raised
    try:
        with site_quiet:
            for trial in range(1, trials + 1):
                run_.update(trial=trial)
                argv = robot_argv(exp, scale, run_.path, select, trial if trials > 1 else None)
                if trials > 1:
                    echo(f"trial {trial} of {trials}")
                echo("$ " + shlex.join(argv[2:]))   # as a shell would take it: the modifier's `;` quoted
                rc, signals = supervise(with_listener(argv, ack), ack, echo)
                rcs.append(rc)
                if signals:  # whatever the suite teardown wrote: the rows not reached did not run
                    left = site_left(site)   # as the teardown left the site's records
                    break
                if trial == trials:
                    break
                # a dead guest fails every later trial in its set-up; a teardown that could not
                # restore the site leaves it for the next trial to measure
                unfit = site_unfit(site, guests_may_have_died=rc != 0)
                if unfit:
                    run_.update(stopped={"trial": trial, **unfit[0]})
                    echo(f"trials {trial + 1}-{trials} not run: {unfit[1]}")
                    break
            ended = None   # the trials are over: resuming that fails after them leaves their status
    except KeyboardInterrupt:
        ended = "interrupted"
        raise
    finally:
        rc = next((r for r in rcs if r != 0), 0)
        status = ended or ("interrupted" if signals else "complete" if rc == 0 else "failed")
        run_.finish(status, quiet=entry | {"changed": site_quiet.changed, "outcome": site_quiet.outcome})
    seconds = time.monotonic() - started
    if signals:
        raise runs.RunInterrupted(run_, left + [
            f"run {run_.label}: interrupted ({signals[0]}) after {seconds:.0f} s (robot rc {rcs[-1]}"
            f"{f', trial {trial} of {trials}' if trials > 1 else ''}); finished points kept, rows not "
            f"reached skipped; {run_.path}"])
    echo(f"run {run_.label}: {status} in {seconds:.0f} s (robot rc {', '.join(str(r) for r in rcs)}); {run_.path}")
    return rc, run_


def report_interrupted(stop, echo=print):
    """For a runs.RunInterrupted: the run's report, then what the site was left with and how the
    run ended, so the interruption is the last thing said."""
    try:
        write_report(stop.run, echo)
    except Exception as exc:
        echo(f"no report: {exc}")
    for line in stop.lines:
        echo(line)


def run_on_live_guests(site, suite, profile_names, scale, bring_back, may_recover=True, echo=print, **run_args):
    """One suite run on the site as `testbed test` and the demo run it (`run_args`: `run`'s sets,
    repeat, ...): (rc, runs, recovered). TCG guests now and
    then panic under load; a kernel death on a guest's console is the emulator's fault, not
    the suite's. When a guest's kernel died before the run, or during a run that failed,
    and `may_recover`, the site is brought back (`bring_back()`: down and up) and the suite
    runs once more; a run that met the dead guest stays in `runs` with its status, and
    `recovered` says what died (None when nothing did). Without `may_recover` a dead guest
    fails the suite as in `run`."""
    topo = site.topo
    done, recovered = [], None
    died = console.dead_guests(topo)
    if died and may_recover:
        recovered = f"before {suite}: {console.dead_text(topo, died)}"
        echo(f"testbed: {recovered}; bringing {topo.name} back before {suite}")
        bring_back()
    rc, run_ = run(site, suite, profile_names, scale, echo=echo, **run_args)
    done.append(run_)
    died = console.dead_guests(topo) if rc != 0 else {}
    if died and may_recover and recovered is None:
        recovered = f"during {suite} (run {run_.label}, kept as {run_.manifest().get('status')}): " \
                    f"{console.dead_text(topo, died)}"
        echo(f"testbed: {recovered}; bringing {topo.name} back and running {suite} once more")
        bring_back()
        rc, run_ = run(site, suite, profile_names, scale, echo=echo, **run_args)
        done.append(run_)
    return rc, done, recovered
