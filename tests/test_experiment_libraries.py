"""The experiment libraries' shared base (robot/libraries/_experiment_library.py): each
library derives from it, keeps its scope, constructor and keywords, and gets `tb`,
`params` and `exp` from it."""
import inspect
import sys
import types

import pytest
from robot.api.deco import keyword
from robot.utils import Importer

from testbed import PROJECT_ROOT
from testbed.experiments.e1 import transfer
from testbed.experiments.e4 import hpc
from testbed.experiments.e5 import e5_scale
from testbed.experiments.faults import faults

LIBRARIES = PROJECT_ROOT / "robot" / "libraries"
# library: (constructor argument, registry name, experiment class)
EXPECTED = {"TransferLibrary": ("scale", "e1", transfer.TransferExperiment),
            "SiteInABoxLibrary": ("scale", "e2", None),
            "FaxLibrary": (None, "e3", None),
            "HpcLibrary": ("scale_name", "e4", hpc.HpcExperiment),
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
    def __init__(self):
        self.site = types.SimpleNamespace(topo="topo", ssh="ssh", pool="pool")
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


def test_e3_points_record_what_the_redirect_paid(tb, monkeypatch):
    from testbed.experiments.e3 import e3_site
    fax = load("FaxLibrary")
    sites = ["a", "b", "c"]

    class Exp:
        matrix = e3_site.rtt_matrix(sites, [5, 40, 80])
        p = {"files_per_site": 1, "events": 10, "extra_reader_rows": 1, "readers": ["uproot"], "read_every": 1}

        def __init__(self):
            self.sites = sites

        def redirect_rtt(self, compute):
            return e3_site.redirect_rtt(self.matrix, sites, compute)

        def measure_cell_rtts(self):
            return {(x, y): 1.0 + r for x, y, r in e3_site.cells(self.matrix)}, {"a": 1.0, "b": 6.0, "c": 41.0}

        def redirector_url(self, site, name):
            return f"root://dtn:1110//e3/{site}/{name}"

        def run_jobs(self, compute, urls, cache_mb, label="", reader="uproot", every=1, learn_entries=100):
            return [{"url": u, "events": 10, "digest": "d", "events_per_s": 5.0, "cpu_eff": 0.5,
                     "mb_per_s": 1.0, "startup_s": 1.0, "uid": 1, "label": label} for u in urls]
    monkeypatch.setattr(sys.modules[fax.__module__].fax, "FaxExperiment", lambda *args: Exp())
    lib = fax()
    rows = lib.measure_every_cell_rtt()
    assert [(r["compute"], r["configured"], r["measured"]) for r in rows if r["storage"] == "redirector"] == \
        [("a", 0, 1.0), ("b", 5, 6.0), ("c", 40, 41.0)]
    assert lib.read_cell("c", "c", 10, "uproot")["redirect_rtt_ms"] == 40   # the diagonal at c pays c-a on the open
    assert lib.read_cell("a", "b", 10, "uproot")["redirect_rtt_ms"] == 0


class FakeFaxExperiment:
    """The site side of E3 as FaxLibrary sees it: a matrix, the parameters, jobs that report."""

    def __init__(self, params):
        from testbed.experiments.e3 import e3_site
        self.p, self.sites = params, ["a", "b"]
        self.matrix = e3_site.rtt_matrix(self.sites, [20])
        self.jobs, self.every = [], []

    def redirector_url(self, site, filename):
        return f"root://dtn:1110//e3/{site}/{filename}"

    def redirect_rtt(self, compute):
        from testbed.experiments.e3 import e3_site
        return e3_site.redirect_rtt(self.matrix, self.sites, compute)

    def run_jobs(self, compute, urls, cache_mb, label="cell", reader="uproot", every=1, learn_entries=100):
        self.jobs.append((compute, urls, cache_mb, reader, learn_entries))
        self.every.append(every)
        return [{"url": u, "events": -(-self.p["events"] // every), "digest": "d", "events_per_s": 10.0, "cpu_eff": 0.5,
                 "mb_per_s": 1.0, "startup_s": 30.0, "read_calls": 4 if reader == "root" else None,
                 "cache_fills": 2 if reader == "root" else None, "bytes_read": 2e6 if reader == "root" else None,
                 "uid": 62001, "label": label, "reader": reader} for u in urls]


def test_fax_library_reads_a_cell_with_either_reader_and_refuses_a_bad_row(tb, monkeypatch):
    from robot.api.exceptions import SkipExecution

    from testbed.harness import registry
    from testbed.model.errors import ConfigError
    lib_class = load("FaxLibrary")
    fake = FakeFaxExperiment(registry.get("e3").parameters("ci"))
    monkeypatch.setattr(lib_class, "exp", property(lambda self: fake))
    lib = lib_class()
    root = lib.read_cell("a", "b", "10", "root", 0)
    assert root["at"] == {"storage": "b", "compute": "a", "rtt_ms": 20, "redirect_rtt_ms": 0,
                          "cache_mb": 10.0, "reader": "root", "learn_entries": 0}
    assert root["read_calls"] == 4 and root["bytes_read_mb"] == 2.0 and root["startup_s"] == 30.0
    up = lib.read_cell("a", "b", 10, "uproot")
    assert "learn_entries" not in up["at"] and up["read_calls"] is None
    assert fake.jobs[0] == ("a", ["root://dtn:1110//e3/b/data000.root"], 10.0, "root", 0)
    with pytest.raises(ConfigError, match=r"e3_fax_wan_reads.robot, row a<-b ten MB root: cache_mb: 'ten'"):
        lib.read_cell("a", "b", "ten", "root")
    lib.skip_unless_the_reader_reads_this_row("root", "a")
    with pytest.raises(SkipExecution, match="root reads the rows of compute sites a only at this scale"):
        lib.skip_unless_the_reader_reads_this_row("root", "b")


def test_fax_cells_read_every_nth_event_at_quick_and_check_that_many(tb, monkeypatch):
    """quick's cells read every 10th event (read_every): the job is asked for it, and the
    check expects a tenth of the events; a job that read every event is refused."""
    from testbed.harness import registry
    lib_class = load("FaxLibrary")
    params = registry.get("e3").parameters("quick")
    assert params["read_every"] == 10 and registry.get("e3").parameters("ci")["read_every"] == 1
    fake = FakeFaxExperiment(params)
    monkeypatch.setattr(lib_class, "exp", property(lambda self: fake))
    lib = lib_class()
    assert lib.read_cell("a", "b", 30, "root", 100)["reader"] == "root"
    assert fake.every == [10]
    monkeypatch.setattr(fake, "run_jobs", lambda *a, **k: FakeFaxExperiment.run_jobs(fake, *a, **{**k, "every": 1}))
    with pytest.raises(AssertionError, match="20000"):
        lib.read_cell("a", "b", 30, "root", 100)


def test_e2_times_the_pass_through_with_both_request_kinds_and_the_cache_miss(tb, monkeypatch):
    """direct-read-round-trips: the pass-through read with the run's request kind and with
    the other one, then a cache miss; each path's round trips per MB from 0 ms and the RTT."""
    lib_class = load("SiteInABoxLibrary")
    reads = []

    class Box:
        dtn, origin, pgread = type("H", (), {"name": "dtn"}), type("H", (), {"name": "origin"}), False

        def origin_files(self):
            return {"file-000": 8_000_000}

        def timed_read(self, port, name, files, pgread=None):
            kind = self.pgread if pgread is None else pgread
            reads.append((port, kind))
            rtt = tb.rtt
            return {(1097, False): 3.0 + 0.001 * rtt, (1097, True): 3.0 + 0.05 * rtt}.get((port, kind), 1.0), 8_000_000

        def clear_cache(self):
            reads.append("clear")

    tb.site.set_wan_latency = lambda a, b, rtt, echo: setattr(tb, "rtt", rtt)
    lib = lib_class("quick")
    monkeypatch.setattr(lib_class, "box", property(lambda self: Box()))
    monkeypatch.setattr(lib_class, "params", lambda self: {"latency_rows": 1, "client_pgread": 0})
    near, far = lib.time_one_read_each_way(0), lib.time_one_read_each_way(20)
    assert reads[:4] == [(1097, False), (1097, True), "clear", (1096, False)]
    assert far["direct_s"] == pytest.approx(3.02) and far["direct_other_s"] == pytest.approx(4.0)
    trips = lib.round_trips_per_mb(near, far)
    assert set(trips) == {"direct", "direct-pgread", "cache-miss"}
    assert trips["direct-pgread"] == pytest.approx(1.0 / 0.02 / 8) and trips["cache-miss"] == 0


def test_e2_array_bound_calibrates_the_members_then_reads_and_restores_the_run_limits(tb, monkeypatch):
    """cached-reads-array-bound: the network measured first, the members limited so that the
    array writes at the paper's fraction of it (a guess, then one correction), the first reads
    through the emptied cache, and the run's limits back even when a read fails."""
    lib_class = load("SiteInABoxLibrary")
    steps = []

    class Box:
        dtn = types.SimpleNamespace(name="dtn", disks=types.SimpleNamespace(data_disks=4))

        def apply_member_limits(self, limits, echo=None):
            steps.append(("limits", round(limits.mb_per_s, 4), limits.iops))

        def clear_cache(self):
            steps.append("clear")

        def wait_cache_closed(self, names):
            return {n: {"accesses": [{"B_miss": 8_000_000}]} for n in names}, []

    def read(self, clients, cached=False, label=None, reads_per_client=None):
        steps.append(("read", cached, reads_per_client))
        if tb.fail_read and cached:
            raise RuntimeError("xrdcp failed")
        rate = 0.5 if cached else 10.0
        return {"aggregate": rate, "per_client": rate / clients, "failed": 0, "reads": clients, "names": ["f1"],
                "net_series": [], "md_series": [], "phase": f"{label}-{clients}", "clients": clients,
                "profile": "default", "stripe_cache_size": 256}

    def write(self, limits=None, write_mb=None):
        steps.append(("write", write_mb))
        # the array writes at 3x its members' limit (4 data members, some parity lost)
        return {"rate": 3 * limits.mb_per_s, "writers": 10, "write_mb": write_mb}

    tb.fail_read = False
    tb.site.apply_profile_if_needed = lambda name, echo=None: None
    tb.site.profile_in_force = None
    lib = lib_class("quick")
    monkeypatch.setattr(lib_class, "box", property(lambda self: Box()))
    monkeypatch.setattr(lib_class, "_limits", lambda self: types.SimpleNamespace(mb_per_s=40.0, iops=150, label="emulated"))
    monkeypatch.setattr(lib_class, "params", lambda self: {"array_bound_rows": 1, "clients": [1, 2, 4],
                                                           "bound_reads_per_client": 1, "writers": 10,
                                                           "bound_write_seconds": 20})
    monkeypatch.setattr(lib_class, "read_origin_files_through_the_dtn", read)
    monkeypatch.setattr(lib_class, "write_to_raid6_in_parallel", write)
    m = lib.point_array_bound("default")
    target = 10.0 * 60 / 1300
    assert steps[0] == ("read", False, 1) and steps[1] == "clear"
    assert steps[2] == ("limits", round(target / 4, 4), 0)
    assert steps[4] == ("limits", round(target / 3, 4), 0)      # corrected: 3x the limit was measured
    assert steps[-2] == ("read", True, 1) and steps[-1] == ("limits", 40.0, 150)
    got = {r[0]: r[1] for r in m.records}
    assert got["e2.array_over_network"] == pytest.approx(target / 10.0)
    assert got["e2.cached_over_uncached"] == pytest.approx(0.05)
    assert m.verdict() is None
    steps.clear()
    tb.fail_read = True
    with pytest.raises(RuntimeError):
        lib.point_array_bound("default")
    assert steps[-1] == ("limits", 40.0, 150)
    monkeypatch.setattr(lib_class, "params", lambda self: {"array_bound_rows": 0})
    assert lib.point_array_bound("default").skipped == "array_bound_rows is 0 in this run"
