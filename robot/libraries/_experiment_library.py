"""The base of the experiment libraries (TransferLibrary, SiteInABoxLibrary, FaxLibrary,
HpcLibrary, ScaleLibrary, FaultLibrary): the run's scale, the suite's TestbedLibrary
(`tb`), the experiment's parameters and the experiment object. Not a library itself (its
name starts with `_` and no suite imports it); the libraries import it from their own
folder, which Robot puts on sys.path while it imports a library by path."""
from robot.libraries.BuiltIn import BuiltIn


class ExperimentLibrary:
    """A subclass sets `experiment` (its registry name, for `params`) and, when its
    experiment object is built from the site's topology, SSH and pool, `experiment_class`
    (for `exp`); it keeps its own `@library(...)` decorator, so its scope and keywords."""

    experiment = None
    experiment_class = None

    def __init__(self, scale="quick"):
        self.scale = scale

    @property
    def tb(self):
        return BuiltIn().get_library_instance("TestbedLibrary")

    @property
    def exp(self):
        return self.experiment_class(self.tb.topo, self.tb.ssh, self.tb.pool)

    def params(self):
        return self.tb.experiment_parameters(self.experiment)
