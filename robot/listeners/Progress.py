"""Robot listener (API v3) that prints one progress line as each measured point starts:

    [point 3/15] rtt40-2W-wan-tuned (trial 2/3) · 4m12s elapsed · ~9m left (from the reference)

`testbed run` passes it with the run's results folder (`--listener
robot/listeners/Progress.py;RESULTS_DIR`); testbed/harness/progress.py counts and
estimates. The line goes where robot's console lines go (sys.__stdout__, which robot
shares with `testbed run`), as a whole line: no carriage return, the same in a CI log.

Robot calls a listener's start_test after its console has written the row's name, which
waits on that line for the row's status; a line printed then would split the row's line. So
the line is printed by a logger registered with robot's LOGGER, which robot calls before
its console on a start (and after it on an end).
"""
import time

from robot.api import logger
from robot.output import LOGGER
from robot.output.loggerapi import LoggerApi

from testbed.harness import progress


class _BeforeTheConsole(LoggerApi):
    def __init__(self, listener):
        self.listener = listener

    def start_test(self, data, result):
        self.listener.starting(result.name)


class Progress:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, results_dir=None, clock=time.monotonic):
        self.results_dir, self.clock = results_dir, clock
        self.state = None
        self.started = {}   # test name -> clock() at its start
        self.ahead = _BeforeTheConsole(self)

    def start_suite(self, data, result):
        if result.parent is None:
            self.state = progress.Progress(self.results_dir, progress.points_of(data.all_tests))
            LOGGER.register_logger(self.ahead)

    def end_suite(self, data, result):
        if result.parent is None:
            LOGGER.unregister_logger(self.ahead)

    def starting(self, name):
        if self.state is None or not self.state.is_point(name):
            return
        self.started[name] = self.clock()
        try:
            logger.console(self.state.starting(name))
        except Exception as exc:  # noqa: BLE001 - robot does not guard its loggers as it does listeners
            self.state = None     # no more lines: a progress line never stops a run
            logger.console(f"[ progress ] no more progress lines: {exc}", stream="stderr")

    def end_test(self, data, result):
        began = self.started.pop(result.name, None)
        if began is not None and self.state is not None:
            self.state.ended(result.name, result.status, self.clock() - began)
