"""The experiment libraries' shared base (robot/libraries/_experiment_library.py): each
library derives from it, keeps its scope, constructor and keywords, and gets `tb`,
`params` and `exp` from it."""
import inspect
import sys

import pytest
from robot.api.deco import keyword
from robot.utils import Importer

from testbed import PROJECT_ROOT
from testbed.experiments import e1_transfer, e4_hpc, e5_scale, faults

LIBRARIES = PROJECT_ROOT / "robot" / "libraries"
# library: (constructor argument, registry name, experiment class)
EXPECTED = {"TransferLibrary": ("scale", "e1", e1_transfer.TransferExperiment),
            "SiteInABoxLibrary": ("scale", "e2", None),
            "FaxLibrary": (None, "e3", None),
            "HpcLibrary": ("scale_name", "e4", e4_hpc.HpcExperiment),
            "ScaleLibrary": ("scale_name", "e5", e5_scale.ScaleExperiment),
            "CollectorLibrary": ("scale_name", "e5", e5_scale.ScaleExperiment),
            "FaultLibrary": ("scale", "faults", faults.FaultSuite)}


def load(name):
    """A library class imported by path, as Robot imports it."""
    return Importer("test library").import_class_or_module_by_path(str(LIBRARIES / f"{name}.py"))


def base():
    load("TransferLibrary")  # puts _experiment_library into sys.modules
    import _experiment_library
    return _experiment_library


class FakeTestbed:
    topo, ssh, pool = "topo", "ssh", "pool"

    def __init__(self):
        self.asked = []

    def experiment_parameters(self, name):
        self.asked.append(name)
        return {"name": name}


@pytest.fixture
def tb(monkeypatch):
    fake = FakeTestbed()

    class FakeBuiltIn:
        def get_library_instance(self, name):
            assert name == "TestbedLibrary"
            return fake
    monkeypatch.setattr(base(), "BuiltIn", FakeBuiltIn)
    return fake


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_experiment_library_derives_from_the_base_and_keeps_its_scope(name):
    cls = load(name)
    arg, experiment, exp_class = EXPECTED[name]
    assert issubclass(cls, base().ExperimentLibrary)
    assert cls.ROBOT_LIBRARY_SCOPE == "SUITE" and cls.ROBOT_AUTO_KEYWORDS is False
    assert cls.experiment == experiment
    if exp_class is not None:
        assert cls.experiment_class is exp_class
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if arg is None:
        assert params == [] and cls().scale == "quick"
    else:
        assert [(p.name, p.default) for p in params] == [(arg, "quick")]
        assert cls().scale == "quick" and cls("ci").scale == "ci" and cls(**{arg: "full"}).scale == "full"


def test_site_in_a_box_keeps_its_seed():
    assert load("SiteInABoxLibrary")("ci").seed == 1


def test_the_base_reads_the_suites_testbed_library(tb):
    class Made:
        def __init__(self, *args):
            self.args = args

    class Lib(base().ExperimentLibrary):
        experiment, experiment_class = "e1", Made

        @keyword
        def kw(self):
            pass

    lib = Lib("ci")
    assert lib.scale == "ci" and lib.tb is tb
    assert lib.params() == {"name": "e1"} and tb.asked == ["e1"]
    assert lib.exp.args == ("topo", "ssh", "pool")


def test_libraries_build_their_experiment_from_the_base(tb, monkeypatch):
    fax = load("FaxLibrary")
    made = {}
    monkeypatch.setattr(sys.modules[fax.__module__].fax, "FaxExperiment",
                        lambda *args: made.setdefault("fax", args))
    fax().exp
    assert made["fax"] == ("topo", "ssh", {"name": "e3"}) and tb.asked == ["e3"]
    fault = load("FaultLibrary")
    monkeypatch.setattr(fault, "experiment_class", staticmethod(lambda *args: ("suite",) + args))
    assert fault().suite == ("suite", "topo", "ssh", "pool")
