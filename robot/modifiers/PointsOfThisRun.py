"""Robot pre-run modifier: leaves out the suite's `Measure Point` rows that are not points of
this run (a value outside the scale's lists, a profile not compared), so the console shows the
rows the run measures and no SKIP for the rest. `testbed run` passes it with the run's results
folder (its manifest holds the scale, the `--set` overrides and the profiles); under plain
robot the rows skip themselves (TestbedLibrary.skip_unless_in_this_run).

    robot --prerunmodifier "robot/modifiers/PointsOfThisRun.py;RESULTS_DIR" ...
"""
from robot.api import SuiteVisitor

from testbed.harness import points, registry, session


class PointsOfThisRun(SuiteVisitor):

    def __init__(self, results_dir):
        context = session.RunContext.from_results(results_dir)
        exp = registry.get(context.suite)
        self.rule = (exp.points, context.params_for(context.suite), list(context.profiles), context.scale)

    def start_suite(self, suite):
        if suite.parent is not None:
            return
        left_out = points.outside_rows(suite, *self.rule)
        # a selection (--test, --include) is applied after this: a suite left with no row at
        # all keeps them, and each says why it skips
        if left_out and len(left_out) < suite.test_count:
            suite.visit(_Drop(set(left_out)))


class _Drop(SuiteVisitor):
    def __init__(self, names):
        self.names = names

    def start_suite(self, suite):
        suite.tests = [t for t in suite.tests if t.name not in self.names]
