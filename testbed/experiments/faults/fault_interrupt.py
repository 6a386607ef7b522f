"""The fault suite's interrupted-run rows (interrupted-run-sigint/-sigterm): `testbed run`
started in a subprocess as a user starts it, signalled as a terminal (Ctrl-C) or a scheduler
(`kill PID`) does, and its results folder judged - `interrupted`, an end time, the points
kept, the rows not reached SKIP "interrupted" - and whether the site it left is restored.
FaultLibrary calls `interrupt_run` and `restore_problems`.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.harness import runner
from testbed.model import profiles
from testbed.network import netem, wan
from testbed.remote.poll import wait_for
from testbed.results import robot_output, runs
from testbed.services import tuning


def run_argv(topo_name, suite="smoke", scale="ci"):
    """`testbed run` as a user types it, in a subprocess of its own."""
    return [sys.executable, "-m", "testbed", "-t", topo_name, "run", suite, "--scale", scale]


def new_run_folder(before, suite, root=None):
    """The results folder of `suite` that appeared since `before` (a set of folder names)."""
    root = Path(root or runs.RESULTS_ROOT)
    found = sorted(p.parent for p in root.glob("*/manifest.json") if p.parent.name not in before
                   and p.parent.name.split("-", 1)[-1].startswith(f"{suite}-"))
    return found[-1] if found else None


ROBOT_STOP_MESSAGES = ("Test execution stopped due to a fatal error", "Execution terminated by signal")


def robot_rows(folder):
    """[(row, status, message)] of a run folder's output.xml ([] when robot wrote none, or
    one it cannot read: a robot killed mid-write)."""
    rows, _unreadable = robot_output.read_rows(folder)
    return [(r.name, r.status, r.message) for r in rows if r.file == "output.xml"]


def judge_interrupted(manifest, metrics, rc, rows=None):
    """What is wrong with a run folder after an interruption: [] when it says `interrupted`,
    has an end time and keeps at least one finished point, the CLI exited non-zero, and
    (given robot's rows) the rows not reached are SKIP "interrupted", none FAIL because robot
    was stopped."""
    problems = []
    if manifest.get("status") != "interrupted":
        problems.append(f"manifest status is {manifest.get('status')!r}, not 'interrupted'")
    if not manifest.get("end"):
        problems.append("manifest has no end time")
    if not metrics:
        problems.append("no finished point was kept in metrics.jsonl")
    if rc == 0:
        problems.append("testbed run exited 0 after being interrupted")
    if rows is not None:
        if not rows:
            problems.append("robot wrote no readable output.xml (or no row in it)")
        stopped = [name for name, status, message in rows
                   if status == "FAIL" and any(m in (message or "") for m in ROBOT_STOP_MESSAGES)]
        if stopped:
            problems.append(f"{len(stopped)} rows FAIL because robot was stopped, not SKIP 'interrupted': "
                            + ", ".join(stopped[:5]))
        skipped = [name for name, status, message in rows if status == "SKIP" and message == "interrupted"]
        if rows and not skipped:
            problems.append("no row reported as not run (SKIP 'interrupted'): "
                            + ", ".join(f"{n} {st}" for n, st, _m in rows[-3:]))
    return problems


def interrupt_run(topo_name, signum, after_points=1, suite="smoke", scale="ci", start_timeout=900,
                  exit_timeout=1800, root=None, echo=print, settle_s=0.0):
    """Start `testbed run SUITE` as a terminal starts a job (a process group of its own),
    wait until it recorded `after_points` metrics, then signal it the way a user does:
    SIGINT to the whole process group (Ctrl-C in the terminal: robot gets it too), SIGTERM
    to the `testbed run` pid alone (`kill PID`, a scheduler). Waits for it to exit.
    Returns {folder, rc, exit_seconds, points, status, rows, problems, log}."""
    root = Path(root or runs.RESULTS_ROOT)
    before = {p.parent.name for p in root.glob("*/manifest.json")}
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"tb-interrupt-{os.getpid()}-{signum}.log", "w")
    proc = subprocess.Popen(run_argv(topo_name, suite, scale), cwd=PROJECT_ROOT, stdout=log,
                            stderr=subprocess.STDOUT, process_group=0)
    found = {"folder": None}

    def recorded():
        found["folder"] = found["folder"] or new_run_folder(before, suite, root)
        return found["folder"] is not None and len(runs.Run(found["folder"]).metrics()) >= after_points

    def ended():
        return (f"testbed run {suite} ended (rc {proc.returncode}) before it could be interrupted; log {log.name}"
                if proc.poll() is not None else None)
    try:
        wait_for(f"testbed run {suite} to record {after_points} point(s)", recorded, start_timeout, 2,
                 fail_fast=ended, state=lambda: f"folder {found['folder'] or 'not made yet'}; log {log.name}")
        folder = found["folder"]
        time.sleep(settle_s)  # (tests: let robot reach a row that is still running)
        how = (f"killpg({proc.pid}, SIGINT): Ctrl-C to the whole process group" if signum == signal.SIGINT
               else f"kill({proc.pid}, {signal.Signals(signum).name}) to testbed run alone")
        echo(f"  {how}, in {folder.name}")
        sent = time.monotonic()
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        rc = proc.wait(timeout=exit_timeout)
        exit_seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:  # more Ctrl-Cs: robot (a process group of its own) abandons, then is killed
            for _ in range(runner.KILL_AFTER):
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(1)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
    run = runs.Run(folder)
    manifest, metrics, rows = run.manifest(), run.metrics(), robot_rows(folder)
    return {"folder": str(folder), "rc": rc, "exit_seconds": exit_seconds, "points": len(metrics),
            "status": manifest.get("status"), "rows": rows,
            "problems": judge_interrupted(manifest, metrics, rc, rows), "log": log.name}


def restore_problems(topo, ssh):
    """What is not restored: hosts with netem beyond the topology's own links, and the
    first mismatches of the `default` profile's read-back."""
    want = {h for h, cmds in netem.host_plans(topo, wan.effective_links(topo, [])).items()
            if any("netem" in c for c in cmds)}
    extra = [h for h, text in wan.show(topo, ssh).items() if "netem" in text and h not in want]
    _got, bad = tuning.read_back(topo, ssh, profiles.load("default"))
    return [f"{h} still has netem" for h in extra] + [f"profile default: {b}" for b in bad[:3]]
