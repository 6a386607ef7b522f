"""Robot listener (API v3) that turns Ctrl-C and SIGTERM into a graceful stop of a run.

`testbed run` passes it to robot (`--listener robot/listeners/Interrupted.py;ACK_FILE`).
Robot's own handling of a first SIGINT/SIGTERM fails the running test and every test not
reached ("Test execution stopped due to a fatal error"), and a second signal exits at
once, in the middle of the suite teardown that restores the site. With this listener:

- 1st signal: the running row stops at its next keyword boundary (or at once in a library
  keyword) and is reported SKIP "interrupted"; every row not reached is SKIP "interrupted"
  without running (no setup, no teardown); test and suite teardowns run as usual.
- 2nd signal: asks once more (the teardowns go on restoring the site).
- 3rd signal: the teardowns are abandoned (every keyword left fails at once, so Robot still
  writes output.xml), and the listener prints which teardown steps were done, which one was
  cut short and which were not run.

The suite teardown's duration is printed when it ends. `testbed run` starts robot in a
process group of its own (a terminal's Ctrl-C reaches `testbed run` only, not the commands
of a teardown) and passes each signal on; each signal received is counted in ACK_FILE (one
line a signal), so a signal robot got by itself as well is not passed on twice.
"""
import signal
import sys
import time

from robot.errors import ExecutionFailed
from robot.running.signalhandler import STOP_SIGNAL_MONITOR

REASON = "interrupted"
ABANDONED = "abandoned: a third Ctrl-C stopped the teardown"


class Interruption(ExecutionFailed):
    """Stops the running keyword of a row: the row ends SKIP with REASON."""
    ROBOT_SKIP_EXECUTION = True  # also when robot wraps it as a library keyword's error

    def __init__(self):
        super().__init__(REASON, skip=True)


def _console(message):
    if sys.__stderr__:
        sys.__stderr__.write(message + "\n")
        sys.__stderr__.flush()


class Interrupted:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, ack_file=None, clock=time.monotonic, console=_console):
        self.ack_file, self.clock, self.console = ack_file, clock, console
        self.signals = []          # names of the signals received, in order
        self.abandoned = False
        self.installed = None      # (previous handlers, previous monitor methods)
        self.teardowns = []        # [{name, started, steps: [[name, state]]}] of teardowns running now
        self.depth = 0             # keyword depth inside the innermost teardown

    # --- signals --------------------------------------------------------------------------------
    def install(self):
        if self.installed is not None:
            return
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        methods = {"start_running_keyword": STOP_SIGNAL_MONITOR.__dict__.get("start_running_keyword")}
        for s in handlers:
            signal.signal(s, self.on_signal)
        STOP_SIGNAL_MONITOR.start_running_keyword = self.start_running_keyword
        self.installed = (handlers, methods)

    def uninstall(self):
        if self.installed is None:
            return
        handlers, methods = self.installed
        for s, h in handlers.items():
            signal.signal(s, h)
        if methods["start_running_keyword"] is None:
            del STOP_SIGNAL_MONITOR.start_running_keyword
        else:
            STOP_SIGNAL_MONITOR.start_running_keyword = methods["start_running_keyword"]
        self.installed = None

    @staticmethod
    def in_teardown():
        from robot.running.context import EXECUTION_CONTEXTS
        ctx = EXECUTION_CONTEXTS.current
        return bool(ctx is not None and ctx.in_teardown)

    def on_signal(self, signum, _frame=None, running_keyword=None, in_teardown=None):
        name = signal.Signals(signum).name
        self.signals.append(name)
        if self.ack_file:
            with open(self.ack_file, "a") as f:
                f.write(name + "\n")
        n = len(self.signals)
        running = STOP_SIGNAL_MONITOR._running_keyword if running_keyword is None else running_keyword
        teardown = self.in_teardown() if in_teardown is None else in_teardown
        if n == 1:
            self.console(f"[ {name} ] interrupted: the row running now stops, rows not reached are "
                         "skipped; the teardowns still restore the site. Ctrl-C twice more abandons them.")
            if running and not teardown:
                raise Interruption()
        elif n == 2:
            self.console(f"[ {name} ] the teardowns are restoring the site{self._now()}: "
                         "Ctrl-C once more to abandon them and leave the site as it is.")
        elif not self.abandoned:
            self.abandoned = True
            for td in self.teardowns:
                for step in td["steps"]:
                    if step[1] == "running":
                        step[1] = "cut short"
            self.console(f"[ {name} ] abandoning the teardowns{self._now()}.")
            if running:
                raise ExecutionFailed(ABANDONED)

    def start_running_keyword(self, in_teardown):
        """Robot calls this before every library keyword (its stop-signal monitor)."""
        STOP_SIGNAL_MONITOR._running_keyword = True
        if self.abandoned:
            raise ExecutionFailed(ABANDONED)
        if self.signals and not in_teardown:
            raise Interruption()

    def _now(self):
        if not self.teardowns:
            return ""
        td = self.teardowns[-1]
        step = next((s for s, state in reversed(td["steps"]) if state == "running"), None)
        return f" ({td['name']}{': ' + step if step else ''})"

    # --- listener methods ---------------------------------------------------------------------
    def start_suite(self, data, result):
        if result.parent is None:
            self.install()

    def end_suite(self, data, result):
        if result.parent is None:
            self.uninstall()

    def start_test(self, data, result):
        if self.signals:  # not reached: reported as not run, nothing of it runs
            data.setup.config(name=None)
            data.teardown.config(name=None)
            data.template = None  # a templated row's body would be the template's arguments
            data.body.clear()
            data.body.create_keyword("BuiltIn.Skip", args=[REASON])

    def start_keyword(self, data, result):
        if result.type == "TEARDOWN":
            owner = result.parent
            what = "suite teardown" if owner is not None and hasattr(owner, "suites") else "teardown"
            self.teardowns.append({"name": f"{what} of {owner.name}" if owner is not None else what,
                                   "suite": what == "suite teardown", "started": self.clock(),
                                   "steps": [], "depth": self.depth})
            self.depth = 0
        elif self.teardowns:
            self.depth += 1
            if self.depth == 1:
                self.teardowns[-1]["steps"].append([self._step_name(data, result),
                                                    "not run" if self.abandoned else "running"])

    def end_keyword(self, data, result):
        if result.type == "TEARDOWN" and self.teardowns:
            td = self.teardowns.pop()
            self.depth = td["depth"]
            seconds = self.clock() - td["started"]
            if self.abandoned:
                self.console(self.left_over(td))
            elif td["suite"] and (self.signals or seconds >= 1):
                self.console(f"  {td['name']}: {result.status} in {seconds:.0f} s")
        elif self.teardowns:
            if self.depth == 1 and self.teardowns[-1]["steps"]:
                step = self.teardowns[-1]["steps"][-1]
                if step[1] == "running":
                    step[1] = "done" if result.status == "PASS" else f"done, {result.status}"
            self.depth -= 1

    def end_test(self, data, result):
        # a row cut short or never reached says only why ("Skipped in parent suite setup:
        # interrupted" too); a row whose teardown was abandoned keeps its FAIL
        if self.signals and result.status == "SKIP" and REASON in (result.message or ""):
            result.message = REASON

    @staticmethod
    def _step_name(data, result):
        args = [str(a) for a in (getattr(data, "args", None) or ())]
        return " ".join([result.name] + args[:2])

    # --- reporting ------------------------------------------------------------------------------
    def left_over(self, td):
        """What an abandoned teardown left: each of its steps done, cut short or not run."""
        cut = [s for s, state in td["steps"] if state in ("cut short", "running")]
        done = [f"{s} ({state})" for s, state in td["steps"] if state.startswith("done")]
        not_run = [s for s, state in td["steps"] if state == "not run"]
        return (f"  {td['name']} ABANDONED after {self.clock() - td['started']:.0f} s; the site is left as "
                f"these steps leave it - done: {', '.join(done) or 'none'}; cut short: {', '.join(cut) or 'none'}; "
                f"not run: {', '.join(not_run) or 'none'}")
