"""The base of the experiment libraries (TransferLibrary, SiteInABoxLibrary, FaxLibrary,
HpcLibrary, ScaleLibrary, FaultLibrary): the run's scale, the suite's TestbedLibrary
(`tb`), the experiment's parameters and the experiment object, and `Measure Point`, the
one keyword a suite's generated point rows call. Not a library itself (its name starts
with `_` and no suite imports it); the libraries import it from their own folder, which
Robot puts on sys.path while it imports a library by path."""
from robot.api import SkipExecution, logger
from robot.api.deco import keyword
from robot.libraries.BuiltIn import BuiltIn

from testbed.harness import points, registry, session
from testbed.network import wan


class ExperimentLibrary:
    """A subclass sets `experiment` (its registry name, for `params`) and, when its
    experiment object is built from the site's topology, SSH and pool, `experiment_class`
    (for `exp`); it keeps its own `@library(...)` decorator, so its scope and keywords. For
    each point kind its registry entry declares, it (or one of its `point_partners`, the
    suite's other libraries) has `point_<kind>(**row arguments)` returning a
    `points.Measured`."""

    experiment = None
    experiment_class = None
    point_partners = ()   # the suite's other libraries whose point_<kind> this one's keyword calls

    def __init__(self, scale="quick"):
        self.scale = scale

    @property
    def tb(self):
        return BuiltIn().get_library_instance("TestbedLibrary")

    @property
    def exp(self):
        return self.experiment_class(self.tb.site.topo, self.tb.site.ssh, self.tb.site.pool)

    def params(self):
        return self.tb.experiment_parameters(self.experiment)

    @keyword("Measure Point")
    def measure_point(self, kind, **point):
        """One point of the suite: skipped unless this run has it (the arguments the registry
        ties to run parameters), measured by `point_<kind>`, every record kept, then every
        check judged: FAIL naming each failed check."""
        try:
            in_run = points.in_run_arguments(registry.get(self.experiment).points, kind, point)
        except ValueError as e:
            raise AssertionError(f"{self.experiment}: {e}") from None
        self.tb.skip_unless_in_this_run(self.params(), **in_run)
        measured = self._point_method(kind)(**point)
        if measured.skipped:
            raise SkipExecution(measured.skipped)
        for name, value, unit, params in measured.records:
            self.tb.record_metric(name, value, unit, **params)
        for line in measured.lines:
            logger.console(line)
        failed = measured.verdict()
        if failed:
            raise AssertionError(failed)
        logger.info(f"{kind}: {len(measured.records)} records kept, {len(measured.checks)} checks passed")

    def set_checked_rtt(self, rtt, a, b, set_rtt):
        """`set_rtt(rtt)` (which returns the RTT it measured from a to b); above 0 ms, the
        measured RTT checked against the LAN's own between a and b, taken before; a miss is
        measured again after a pause (`wan.recheck`), each retry kept as `wan.rtt_rechecked`."""
        if float(rtt) > 0:
            base = self.tb.site.lan_rtt(a, b)
            # measured again as it is, emulation included (lan_rtt, the base, leaves it out)
            attempts = wan.recheck(float(rtt), set_rtt(rtt), base, lambda: self.tb.site.measure_rtt(a, b),
                                           say=logger.console)
            for n, ms in enumerate(attempts[1:], start=2):
                self.tb.record_metric("wan.rtt_rechecked", ms, "ms", link=f"{a}-{b}", rtt_ms=float(rtt), attempt=n)
            self.tb.site.check_measured_rtt(rtt, attempts[-1], base)
        else:
            set_rtt(0)

    def _point_method(self, kind):
        """point_<kind> of this library, else of the first partner library that has it."""
        name = points.method_name(kind)
        for lib in (self, *(BuiltIn().get_library_instance(p) for p in self.point_partners)):
            if callable(getattr(lib, name, None)):
                return getattr(lib, name)
        raise AssertionError(f"{type(self).__name__} and its partners {list(self.point_partners)} have no {name}")
