"""Ctrl-C and SIGTERM during `testbed run`: the runner lets robot's listener stop
the run gracefully, passes on a signal robot did not get, and marks the run interrupted;
the listener skips what is left with the reason "interrupted", asks once more, then
abandons the teardowns saying what was left. Robot itself is faked here; a real robot
run under a terminal-like SIGINT is in test_a_real_robot_run_interrupted_like_a_terminal."""
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from robot.errors import ExecutionFailed

from testbed import PROJECT_ROOT
from testbed.harness import registry, runner
from testbed.remote.site import Site
from testbed.results import runs as results
from tests.support import script_env


class FakeRobot:
    """A robot process: on its `signal_at`-th poll it signals `testbed run` (as a terminal
    would, or as `kill PID` would when `counts_it` is False), then exits after `exit_at` polls."""

    def __init__(self, ack, signal_at=2, exit_at=6, counts_it=True, signum=signal.SIGINT):
        self.ack, self.signal_at, self.exit_at, self.counts_it, self.signum = ack, signal_at, exit_at, counts_it, signum
        self.polls, self.sent, self.pid, self.returncode = 0, [], 4242, None

    def __call__(self, argv, cwd=None, **kwargs):
        self.argv, self.kwargs = argv, kwargs
        return self

    def poll(self):
        self.polls += 1
        if self.polls == self.signal_at:
            if self.counts_it:  # a service manager signalled every process: robot counted it too
                Path(self.ack).write_text(signal.Signals(self.signum).name + "\n")
            os.kill(os.getpid(), self.signum)
        if self.polls >= self.exit_at:
            self.returncode = 0
        return self.returncode

    def send_signal(self, signum):
        self.sent.append(signum)
        with open(self.ack, "a") as f:
            f.write(signal.Signals(signum).name + "\n")

    def kill(self):
        self.sent.append("KILL")
        self.returncode = -9

    def wait(self, timeout=None):
        return self.returncode


def test_a_signal_robot_got_by_itself_is_not_sent_to_it_a_second_time(tmp_path):
    ack = tmp_path / ".robot-signals"
    robot = FakeRobot(ack)
    before = signal.getsignal(signal.SIGINT)
    rc, signals = runner.supervise(["python", "-m", "robot", "x.robot"], ack, echo=print, popen=robot,
                                   forward_after=0)
    assert rc == 0 and signals == ["SIGINT"] and robot.sent == []
    assert signal.getsignal(signal.SIGINT) is before  # our handlers are gone again
    # a terminal's Ctrl-C must not reach robot's (or its ssh commands') process group
    assert robot.kwargs == {"process_group": 0, "stdin": subprocess.DEVNULL}


def test_a_ctrl_c_or_sigterm_to_testbed_run_is_passed_on_once(tmp_path):
    ack = tmp_path / ".robot-signals"
    robot = FakeRobot(ack, counts_it=False, signum=signal.SIGTERM, exit_at=8)
    rc, signals = runner.supervise(["python", "-m", "robot", "x.robot"], ack, popen=robot, forward_after=0)
    assert signals == ["SIGTERM"] and robot.sent == [signal.SIGTERM]


def test_the_listener_goes_to_robot_before_the_suite(tmp_path):
    argv = runner.with_listener([sys.executable, "-m", "robot", "--outputdir", "o", "s.robot"], tmp_path / "a")
    assert argv[3:5] == ["--listener", f"{runner.INTERRUPT_LISTENER};{tmp_path / 'a'}"] and argv[-1] == "s.robot"
    assert runner.INTERRUPT_LISTENER.is_file()


def test_an_interrupted_run_says_interrupted_whatever_its_teardown_wrote(tmp_path, monkeypatch):
    run_ = results.Run.create("smoke", ["default"], topology={"name": "small"}, profile_contents={},
                              accel="tcg", root=tmp_path)
    monkeypatch.setattr(runner, "check", lambda *a, **k: (registry.get("smoke"), {}))
    monkeypatch.setattr(runner, "open_run", lambda *a, **k: run_)
    monkeypatch.setattr(runner, "robot_argv", lambda *a, **k: [sys.executable, "-m", "robot", "s.robot"])

    def robot_ran(argv, ack, echo):
        run_.finish("complete")  # what the suite teardown's Finish Experiment writes with every row SKIP
        return 0, ["SIGINT"]
    monkeypatch.setattr(runner, "supervise", robot_ran)
    lines = []
    with pytest.raises(KeyboardInterrupt):
        runner.run(Site(types.SimpleNamespace(name="small", wan=[], vm_hosts=[])), "smoke", ["default"], "ci",
                   echo=lines.append)
    assert run_.manifest()["status"] == "interrupted" and run_.manifest()["end"]
    assert "interrupted (SIGINT)" in lines[-1]


def fake_site(tmp_path, monkeypatch, rcs):
    """A small fake topology whose consoles live in tmp_path; robot returns `rcs` in turn and
    the first failing trial leaves submit's console with a kernel panic."""
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", str(tmp_path))
    for host in ("submit", "worker1"):
        (tmp_path / f"tb-small-{host}.log").write_text("tb-small-host login: \n")
    run_ = results.Run.create("e1", ["default"], topology={"name": "small"}, profile_contents={},
                              accel="tcg", root=tmp_path / "results")
    monkeypatch.setattr(runner, "check", lambda *a, **k: (registry.get("e1"), {}))
    monkeypatch.setattr(runner, "open_run", lambda *a, **k: run_)
    monkeypatch.setattr(runner, "write_report", lambda *a, **k: None)
    monkeypatch.setattr(runner, "sized_for_site", lambda exp, scale, topo, accelerator, sets, **k: sets)
    trials = []

    def robot_ran(argv, ack, echo):
        rc = rcs[len(trials)]
        trials.append(rc)
        if rc:
            (tmp_path / "tb-small-submit.log").write_text("tb-small-host login: \n[ 4304.6] traps: PANIC: "
                                                         "double fault, error_code: 0x0\n")
        return rc, []
    monkeypatch.setattr(runner, "supervise", robot_ran)
    topo = types.SimpleNamespace(name="small", wan=[], vm_hosts=[types.SimpleNamespace(name="submit"),
                                                                 types.SimpleNamespace(name="worker1")])
    return topo, run_, trials


def test_a_guest_whose_kernel_died_stops_the_remaining_trials(tmp_path, monkeypatch):
    topo, run_, trials = fake_site(tmp_path, monkeypatch, [0, 1, 0, 0, 0])
    lines = []
    rc, run = runner.run(Site(topo), "e1", ["default"], "quick", repeat=5, echo=lines.append, pause_unused=False, pin=False)
    assert trials == [0, 1] and rc == 1                   # trials 3-5 never started
    m = run.manifest()
    assert m["status"] == "failed" and m["trial"] == 2
    assert m["stopped"] == {"trial": 2, "dead_guests": {"submit": "traps: PANIC: double fault, error_code: 0x0"}}
    said = next(line for line in lines if line.startswith("trials 3-5 not run"))
    assert "the kernel of submit" in said and "./tb -t small down && ./tb -t small up" in said


def test_a_failed_trial_on_a_live_site_does_not_stop_the_run(tmp_path, monkeypatch):
    topo, run_, trials = fake_site(tmp_path, monkeypatch, [1, 0, 0])
    (tmp_path / "tb-small-submit.log").write_text("tb-small-host login: \n")
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: {})   # the failure was the suite's, not a guest's
    rc, run = runner.run(Site(topo), "e1", ["default"], "quick", repeat=3, echo=lambda *_: None, pause_unused=False,
                             pin=False)
    assert trials == [1, 0, 0] and rc == 1 and "stopped" not in run.manifest()


def test_a_run_on_a_site_with_a_dead_guest_is_refused_before_it_opens_a_folder(tmp_path, monkeypatch):
    topo, run_, trials = fake_site(tmp_path, monkeypatch, [0])
    (tmp_path / "tb-small-worker1.log").write_text("tb-small-host login: \nKernel panic - not syncing: Fatal\n")
    opened = []
    monkeypatch.setattr(runner, "open_run", lambda *a, **k: opened.append(1))
    with pytest.raises(runner.TestbedError, match="the kernel of worker1 .*died; bring the site back"):
        runner.run(Site(topo), "e1", ["default"], "quick", repeat=3, echo=lambda *_: None, pause_unused=False,
                             pin=False)
    assert trials == [] and opened == []


# --- the listener, on fake robot objects --------------------------------------------------------
def listener_module():
    from robot.utils import Importer
    return Importer("listener").import_class_or_module_by_path(str(runner.INTERRUPT_LISTENER))


class Body(list):
    def create_keyword(self, name, args=()):
        self.append((name, list(args)))


class Setting:
    def __init__(self, name):
        self.name = name

    def config(self, name):
        self.name = name


def test_rows_not_reached_run_nothing_but_a_skip_with_the_reason(tmp_path):
    lst = listener_module()(str(tmp_path / "ack"), console=lambda m: None)
    data = types.SimpleNamespace(setup=Setting("Set Up"), teardown=Setting("Tear Down"), body=Body([("Sleep", [1])]))
    lst.start_test(data, None)
    assert data.body == [("Sleep", [1])]  # no signal yet: untouched
    with pytest.raises(ExecutionFailed) as exc:
        lst.on_signal(signal.SIGINT, running_keyword=True, in_teardown=False)
    assert exc.value.skip and str(exc.value) == "interrupted"
    assert (tmp_path / "ack").read_text() == "SIGINT\n"
    lst.start_test(data, None)
    assert data.setup.name is None and data.teardown.name is None and data.body == [("BuiltIn.Skip", ["interrupted"])]
    result = types.SimpleNamespace(status="SKIP", message="Skipped in parent suite setup:\ninterrupted")
    lst.end_test(data, result)
    assert result.message == "interrupted"


def test_a_signal_during_a_teardown_does_not_stop_it_and_the_second_asks_once_more(tmp_path):
    said = []
    lst = listener_module()(None, console=said.append)
    lst.on_signal(signal.SIGINT, running_keyword=True, in_teardown=True)  # no exception: the teardown goes on
    lst.start_running_keyword(in_teardown=True)
    with pytest.raises(ExecutionFailed):
        lst.start_running_keyword(in_teardown=False)  # a row's keyword after the signal: skipped
    lst.on_signal(signal.SIGINT, running_keyword=True, in_teardown=True)
    assert "Ctrl-C once more to abandon" in said[-1] and not lst.abandoned


def test_the_third_signal_abandons_the_teardown_and_says_what_was_left(tmp_path):
    said, now = [], [100.0]
    lst = listener_module()(None, clock=lambda: now[0], console=said.append)
    suite = types.SimpleNamespace(name="E1", suites=[])

    def kw(name, *args, type="KEYWORD", status="PASS"):
        return (types.SimpleNamespace(args=args),
                types.SimpleNamespace(type=type, name=name, parent=suite, status=status, message=""))
    td = kw("Finish Experiment And Restore The Site", type="TEARDOWN")
    lst.start_keyword(*td)
    clear = kw("Run Keyword And Ignore Error", "Clear WAN")
    lst.start_keyword(*clear)
    lst.end_keyword(*clear)
    profile = kw("Run Keyword And Ignore Error", "Restore The Default Profile")
    lst.start_keyword(*profile)
    lst.on_signal(signal.SIGINT, running_keyword=False, in_teardown=True)
    lst.on_signal(signal.SIGINT, running_keyword=False, in_teardown=True)
    with pytest.raises(ExecutionFailed, match="abandoned"):
        lst.on_signal(signal.SIGINT, running_keyword=True, in_teardown=True)
    lst.end_keyword(*profile)
    finish = kw("Finish Experiment")
    lst.start_keyword(*finish)
    with pytest.raises(ExecutionFailed, match="abandoned"):
        lst.start_running_keyword(in_teardown=True)
    lst.end_keyword(*finish)
    now[0] = 130.0
    lst.end_keyword(*td)
    assert said[-1] == ("  suite teardown of E1 ABANDONED after 30 s; the site is left as these steps leave it - "
                        "done: Run Keyword And Ignore Error Clear WAN (done); cut short: Run Keyword And Ignore "
                        "Error Restore The Default Profile; not run: Finish Experiment")


ROBOT_SUITE = """*** Settings ***
Suite Teardown    Restore

*** Test Cases ***
first
    Sleep    0.1
second
    Sleep    20
third
    Sleep    1

*** Keywords ***
Restore
    Log To Console    restoring
    Sleep    1
"""
PARENT = """import sys
from testbed.harness import runner
ack = {ack!r}
rc, signals = runner.supervise(runner.with_listener([sys.executable, "-m", "robot", "--outputdir", {out!r},
                               "--console", "dotted", {suite!r}], ack), ack)
print("SIGNALS", signals)
"""


def test_a_real_robot_run_interrupted_like_a_terminal(tmp_path):
    """A real robot child and its parent in a process group of their own, sent SIGINT as a
    terminal sends Ctrl-C: the row running and the one not reached are SKIP "interrupted",
    the suite teardown ran, the parent saw one SIGINT."""
    from robot.api import ExecutionResult
    suite, out, ack = tmp_path / "s.robot", tmp_path / "out", tmp_path / "ack"
    suite.write_text(ROBOT_SUITE)
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT.format(ack=str(ack), out=str(out), suite=str(suite)))
    proc = subprocess.Popen([sys.executable, str(parent)], process_group=0, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=script_env())
    try:
        time.sleep(3)  # robot's start-up and the first row (0.1 s): the second row sleeps 20 s
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    result = ExecutionResult(str(out / "output.xml"))
    got = {t.name: (t.status, t.message) for t in result.suite.tests}
    assert got == {"first": ("PASS", ""), "second": ("SKIP", "interrupted"), "third": ("SKIP", "interrupted")}, text
    assert result.suite.teardown.status == "PASS" and "restoring" in text
    assert "SIGNALS ['SIGINT']" in text and ack.read_text() == "SIGINT\n"


# --- the fault rows interrupted-run-sigint/-sigterm, on a fake `testbed run` ------------------
FAKE_TESTBED_RUN = """import signal, subprocess, sys
from testbed.harness import runner
from testbed.results import runs
run = runs.Run.create("smoke", ["default"], {{}}, {{}}, "tcg", root={results!r})
run.record("smoke.point", 1.0, "s")
argv = [sys.executable, "-m", "robot", "--outputdir", str(run.path), "--console", "dotted", {suite!r}]
if {old}:  # a runner without the listener, that passes a SIGINT on regardless
    proc = subprocess.Popen(argv)
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        proc.wait()
        run.finish("complete")
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        run.finish("interrupted")
    sys.exit(130)
ack = run.path / runner.SIGNALS_FILE
rc, signals = runner.supervise(runner.with_listener(argv, ack), ack)
run.finish("interrupted" if signals else "complete")
sys.exit(130 if signals else rc)
"""


def interrupt_fake_run(tmp_path, monkeypatch, signum, old):
    """fault_interrupt.interrupt_run on a fake `testbed run` (the project's runner, or `old`: one
    without the interrupt listener) driving a real robot over ROBOT_SUITE."""
    from testbed.experiments.faults import fault_interrupt as fi
    suite, script = tmp_path / "s.robot", tmp_path / "fake_run.py"
    suite.write_text(ROBOT_SUITE)
    script.write_text(FAKE_TESTBED_RUN.format(results=str(tmp_path / "results"), suite=str(suite), old=old))
    monkeypatch.setattr(fi, "run_argv", lambda *a, **k: [sys.executable, str(script)])
    # interrupt_run starts it with this process's environment: this checkout first on its path
    monkeypatch.setenv("PYTHONPATH", script_env()["PYTHONPATH"])
    (tmp_path / "results").mkdir()
    return fi.interrupt_run("small", signum, root=tmp_path / "results", start_timeout=60, exit_timeout=60,
                            echo=lambda m: None, settle_s=2.5)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_fault_row_signals_like_a_terminal_and_a_service_manager(tmp_path, monkeypatch, signum):
    r = interrupt_fake_run(tmp_path, monkeypatch, signum, old=False)
    assert r["problems"] == [] and r["status"] == "interrupted" and r["rc"] == 130
    assert r["rows"][1:] == [("second", "SKIP", "interrupted"), ("third", "SKIP", "interrupted")]


def test_the_fault_row_fails_on_a_runner_without_the_interrupt_listener(tmp_path, monkeypatch):
    r = interrupt_fake_run(tmp_path, monkeypatch, signal.SIGINT, old=True)
    assert any("not SKIP 'interrupted'" in p or "output.xml" in p for p in r["problems"]), r


# --- ./tb demo and ./tb test: a Ctrl-C leaves no VM unaccounted for ------------------------------
def test_a_ctrl_c_during_the_demos_bring_up_says_which_vms_are_up_and_how_to_take_them_down(monkeypatch, capsys):
    from testbed.cli import experiment_commands
    from testbed.machines import domains, lifecycle
    states = {"submit": "running", "cm1": "shut off"}
    monkeypatch.setattr(domains, "state", lambda topo, host: states.get(host))

    def up(site, profile, health=None, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(lifecycle, "up", up)
    with pytest.raises(KeyboardInterrupt):
        experiment_commands.cmd_demo(types.SimpleNamespace(topology="small"))
    err = capsys.readouterr().err
    assert "testbed demo: interrupted" in err
    assert "topology small is (partly) up: 2 of 5 VMs: tb-small-cm1 (shut off), tb-small-submit (running)" in err
    assert "take it down with `./tb -t small down`" in err


def test_a_ctrl_c_during_tb_tests_tear_down_says_what_it_left(monkeypatch, capsys):
    from testbed.cli import experiment_commands
    from testbed.machines import domains, lifecycle
    from testbed.harness import registry
    monkeypatch.setattr(experiment_commands, "_run", lambda argv: 0)
    monkeypatch.setattr(experiment_commands, "browse_docs", lambda site_dir: [])   # no browser: the docs are not what this tests
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)
    monkeypatch.setattr(lifecycle, "claim_domains", lambda topo: None)
    monkeypatch.setattr(lifecycle, "up", lambda site, profile, health=None: 0)
    monkeypatch.setattr(registry, "experiments", lambda: {"smoke": types.SimpleNamespace(
        suite_path=PROJECT_ROOT / "robot" / "suites" / "smoke.robot", profiles=("default",), ci_profiles=())})

    def run(*a, **k):
        raise KeyboardInterrupt  # the run was interrupted (runner.run raises after marking it)

    def down(site):
        raise KeyboardInterrupt  # and a second Ctrl-C stopped the tear-down
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: {})   # not this host's console logs
    monkeypatch.setattr(lifecycle, "down", down)
    monkeypatch.setattr(domains, "state", lambda topo, host: "running" if host == "dtn" else None)
    with pytest.raises(KeyboardInterrupt):
        experiment_commands.cmd_test(types.SimpleNamespace(unit_only=False, keep=False))
    err = capsys.readouterr().err
    assert "interrupted; taking down small" in err and "1 of 5 VMs: tb-small-dtn (running)" in err

    monkeypatch.setattr(domains, "state", lambda topo, host: None)
    monkeypatch.setattr(lifecycle, "down", lambda site: 0)
    with pytest.raises(KeyboardInterrupt):
        experiment_commands.cmd_test(types.SimpleNamespace(unit_only=False, keep=True))
    assert "no VM of topology small is left" in capsys.readouterr().err


def test_after_an_interruption_the_runner_says_what_the_records_leave_in_force(tmp_path):
    from testbed.harness import runner
    from testbed.model import profiles
    from testbed.model.state import TestbedState
    from testbed.network import netem, wan
    from testbed.remote import profile_record
    topo = types.SimpleNamespace(name="small", wan=[])
    state = TestbedState("small", root=tmp_path)
    assert runner.site_left(Site(topo, root=tmp_path)) == []                     # nothing recorded: nothing left
    profile_record.record_profile(state, profiles.load("default"))
    wan.record(state, [netem.Link(a="submit", b="worker", rtt_ms=0)])
    assert runner.site_left(Site(topo, root=tmp_path)) == []                     # the site's normal state
    profile_record.record_profile(state, profiles.load("wan-tuned"))
    wan.record(state, [netem.Link(a="submit", b="worker", rtt_ms=80)])
    assert runner.site_left(Site(topo, root=tmp_path)) == [
        "left: profile wan-tuned in force (undo: ./tb -t small profile apply default)",
        "left: WAN submit<->worker 80 ms (undo: ./tb -t small wan clear)"]


def test_the_topologys_own_links_are_not_reported_as_left_after_an_interruption(tmp_path):
    """`default` keeps its origin 20 ms behind the DTN: that is its normal state, not
    something an interrupted suite left; a suite's other RTT on the same pair is."""
    from testbed.harness import runner
    from testbed.model import topology
    from testbed.model.state import TestbedState
    from testbed.network import netem, wan
    topo = topology.load("default")
    state = TestbedState("default", root=tmp_path)
    wan.record(state, wan.effective_links(topo, []))
    assert runner.site_left(Site(topo, root=tmp_path)) == []
    wan.record(state, wan.effective_links(topo, [netem.Link(a="origin", b="dtn", rtt_ms=40)]))
    assert runner.site_left(Site(topo, root=tmp_path)) == ["left: WAN origin<->dtn 40 ms (undo: ./tb -t default wan clear)"]


def test_tb_test_brings_the_site_back_once_when_a_guests_kernel_died_and_says_so(monkeypatch, capsys):
    from testbed.cli import experiment_commands
    from testbed.machines import lifecycle
    from testbed.harness import registry
    from testbed.results import robot_output
    calls = []
    monkeypatch.setattr(experiment_commands, "_run", lambda argv: 0)
    monkeypatch.setattr(experiment_commands, "build_docs", lambda: 0)
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)
    monkeypatch.setattr(lifecycle, "claim_domains", lambda topo: None)
    monkeypatch.setattr(lifecycle, "up", lambda site, profile, health=None: calls.append("up"))
    monkeypatch.setattr(lifecycle, "down", lambda site: calls.append("down"))
    monkeypatch.setattr(registry, "experiments", lambda: {"smoke": types.SimpleNamespace(
        suite_path=PROJECT_ROOT / "robot" / "suites" / "smoke.robot", profiles=("default",), ci_profiles=())})
    deaths = [{}, {"submit": "traps: PANIC: double fault, error_code: 0x0"}]
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: deaths.pop(0) if deaths else {})
    monkeypatch.setattr(robot_output, "failure_lines", lambda path: [])

    def run(site, suite, profiles, scale, echo=print):
        calls.append("run")
        rc = 1 if calls.count("run") == 1 else 0
        return rc, types.SimpleNamespace(path=PROJECT_ROOT / "results" / f"r{calls.count('run')}", label="r",
                                         manifest=lambda: {"suite": suite, "status": "failed" if rc else "complete"})
    monkeypatch.setattr(runner, "run", run)
    assert experiment_commands.cmd_test(types.SimpleNamespace(unit_only=False, keep=False)) == 0
    assert calls == ["up", "run", "down", "up", "run", "down"]
    out = capsys.readouterr().out
    assert "a guest's kernel died during smoke" in out and "double fault" in out
    assert "end to end: PASS" in out and "runs that met a dead guest:" in out and "r1" in out
