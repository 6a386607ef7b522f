"""`Measure Point`, the one keyword every generated point row calls: the Measured a point
returns (points.py), the registry's declaration of point kinds and the rows that use them,
the base library's keep-then-judge, and the points of E1 and E4 built from fake figures."""
import pytest
from robot.api import SkipExecution

from testbed.experiments.e1 import e1_points
from testbed.experiments.e2 import e2_points
from testbed.experiments.e3 import e3_points
from testbed.experiments.e4 import e4_points
from testbed.experiments.e5 import e5_points
from testbed.harness import points, registry
from testbed.harness.points import POINT_TEMPLATE, Measured
from testbed.harness.registry import Experiment, Param
from testbed.harness.rows import CLAIMS, Axis, Block, Case, Rows
from testbed.network import wan
from tests.test_e4_hpc import report, task
from tests.test_experiment_libraries import FakeTestbed, base, load

SCALES = {s: {"n": [1, 2]} for s in ("ci", "quick", "full")}


def test_measured_keeps_records_and_series_and_names_every_failed_check():
    m = Measured().record("x.a", 1.5, "s", n=1).record_series("x.s", "MB/s", [(0.04, 3.0, 9.0), (1.0, 4.0, 8.0)], 2)
    assert m.records == [("x.a", 1.5, "s", {"n": 1}), ("x.s", 9.0, "MB/s", {"t": 0.0}),
                         ("x.s", 8.0, "MB/s", {"t": 1.0})]
    assert m.verdict() is None
    m.check(True, "fine").check(False, "first wrong")
    assert m.verdict() == "first wrong"
    m.check(0, "second wrong")
    assert m.failures == ["first wrong", "second wrong"]
    assert m.verdict() == "2 checks failed: first wrong; second wrong"
    assert Measured.skip("not here").skipped == "not here" and not Measured().skipped


def test_in_run_arguments_map_the_row_to_the_run_parameters():
    declared = {"latency": {"profile": "profile", "rtt": "rtts", "label": None}}
    assert points.in_run_arguments(declared, "latency", {"profile": "p", "rtt": "80", "label": "x"}) == \
        {"profile": "p", "rtts": "80"}
    with pytest.raises(ValueError, match="no point kind 'other' \\(declared: latency\\)"):
        points.in_run_arguments(declared, "other", {})
    with pytest.raises(ValueError, match="not extra; missing label, rtt"):
        points.in_run_arguments(declared, "latency", {"profile": "p", "extra": 1})
    assert points.method_name("ramp-step") == "point_ramp_step"


def _exp(points_declared, *cases):
    return Experiment(name="x", title="t", seed=None, suite="robot/suites/x.robot", uses=("worker",),
                      params={"n": Param("ints", rows=True, minimum=1, maximum=10)}, scales=SCALES,
                      points=points_declared,
                      rows=(Block("b", Rows(*cases, axes=(Axis("n", param="n"),))),))


def test_the_registry_rejects_a_point_row_it_does_not_declare():
    ok = _exp({"one": {"n": "n"}}, Case("n{n}", POINT_TEMPLATE, args=("one", "n={n}")))
    assert "Measure Point\n    one    n=2" in ok.generated_rows()["b"]
    with pytest.raises(ValueError, match="needs a declared point kind first \\(declared: one\\)"):
        _exp({"one": {"n": "n"}}, Case("n{n}", POINT_TEMPLATE, args=("two", "n={n}")))
    with pytest.raises(ValueError, match="one takes n=, not m={n}"):
        _exp({"one": {"n": "n"}}, Case("n{n}", POINT_TEMPLATE, args=("one", "m={n}")))
    with pytest.raises(ValueError, match="one takes n=, not {n}"):
        _exp({"one": {"n": "n"}}, Case("n{n}", POINT_TEMPLATE, args=("one", "{n}")))
    with pytest.raises(ValueError, match="argument 'n': 'nn' is not a parameter"):
        _exp({"one": {"n": "nn"}}, Case("n{n}", POINT_TEMPLATE, args=("one", "n={n}")))


def _point_rows(exp):
    return [c.args for b in exp.rows for r in b.rows for c in r.cases if c.template == POINT_TEMPLATE]


# the library whose `Measure Point` the suite calls, then its point partners
LIBRARY = {"e1": ("TransferLibrary",), "e2": ("SiteInABoxLibrary",), "e3": ("FaxLibrary",), "e4": ("HpcLibrary",),
           "e5": ("ScaleLibrary", "CollectorLibrary")}


@pytest.mark.parametrize("name", sorted(e for e in registry.experiments() if registry.get(e).points))
def test_every_declared_kind_has_rows_and_a_library_method(name):
    exp = registry.get(name)
    used = {args[0] for args in _point_rows(exp)}
    assert used == set(exp.points), f"{name}: kinds declared {sorted(exp.points)}, used by rows {sorted(used)}"
    main, *partners = [load(n) for n in LIBRARY[name]]
    assert list(main.point_partners) == list(LIBRARY[name][1:])
    assert all(getattr(p, "measure_point", None) is None for p in partners)   # one `Measure Point` per suite
    for kind in exp.points:
        assert any(callable(getattr(lib, points.method_name(kind), None)) for lib in (main, *partners)), \
            f"{LIBRARY[name]} lack point_{kind}"
    templates = {line.split("[Template]")[1].strip() for name, text in exp.generated_rows().items()
                 if name != CLAIMS for line in text.splitlines() if "[Template]" in line}
    assert templates == {POINT_TEMPLATE}, f"{name}: generated point rows call {sorted(templates)}"


class PointTestbed(FakeTestbed):
    def __init__(self):
        super().__init__()
        self.recorded, self.skips = [], []

    def skip_unless_in_this_run(self, params, **point):
        self.skips.append(point)
        if point.get("rtts") == "999":
            raise SkipExecution("rtts 999 is not a point of this run")

    def record_metric(self, name, value, unit="", **params):
        self.recorded.append((name, value, params))


@pytest.fixture
def ptb(monkeypatch):
    fake = PointTestbed()

    class FakeBuiltIn:
        def get_library_instance(self, name):
            return fake
    monkeypatch.setattr(base(), "BuiltIn", FakeBuiltIn)
    return fake


def _library(result):
    class Lib(base().ExperimentLibrary):
        experiment = "e1"
        calls = []

        def point_latency(self, **point):
            self.calls.append(point)
            return result
    return Lib("ci")


def test_measure_point_keeps_every_record_before_it_judges(ptb):
    m = Measured().record("e1.efficiency_lost", 0.5, "ratio", rtt_ms=80.0).check(False, "3 of 4 jobs completed")
    lib = _library(m)
    with pytest.raises(AssertionError, match="^3 of 4 jobs completed$"):
        lib.measure_point("latency", profile="default", rtt="80", factor="2")
    assert ptb.skips == [{"profile": "default", "rtts": "80", "rate_factors": "2"}]
    assert lib.calls == [{"profile": "default", "rtt": "80", "factor": "2"}]
    assert ptb.recorded == [("e1.efficiency_lost", 0.5, {"rtt_ms": 80.0})]


def test_measure_point_skips_before_it_measures_and_names_a_wrong_row(ptb):
    lib = _library(Measured())
    with pytest.raises(SkipExecution):
        lib.measure_point("latency", profile="default", rtt="999", factor="2")
    assert lib.calls == []
    with pytest.raises(AssertionError, match="e1: no point kind 'ramp'"):
        lib.measure_point("ramp", n="1")
    with pytest.raises(AssertionError, match="e1: point 'latency' takes .*missing factor"):
        lib.measure_point("latency", profile="default", rtt="0")
    with pytest.raises(SkipExecution, match="nothing here"):
        _library(Measured.skip("nothing here")).measure_point("latency", profile="p", rtt="0", factor="1")
    assert ptb.recorded == []
    _library(Measured().record("e1.a", 1).check(True, "-")).measure_point("latency", profile="p", rtt="0", factor="1")
    assert ptb.recorded == [("e1.a", 1, {})]


def _latency(**over):
    r = {"jobs": 4, "completed": 4, "bad_outputs": [], "size_mb": 2, "efficiency_lost": 0.4,
         "slot_setup_teardown_over_execution": 1.2, "job_transfer_rate": None, "demand": 3.0,
         "window_over_demand": None, "params": {"rtt_ms": 80.0, "rate": "2W", "profile": "default"}}
    r.update(over)
    return e1_points.latency(r)


def test_e1_latency_point_records_what_it_measured_and_checks_the_batch():
    m = _latency()
    assert [r[0] for r in m.records] == ["e1.efficiency_lost", "e1.job_output_mb",
                                         "e1.slot_setup_teardown_over_execution", "e1.sweep_demand"]
    assert all(r[3] == {"rtt_ms": 80.0, "rate": "2W", "profile": "default"} for r in m.records)
    assert m.verdict() is None
    bad = _latency(efficiency_lost=None, completed=3, bad_outputs=[2], window_over_demand=1.5, job_transfer_rate=2.0)
    assert "e1.efficiency_lost" not in [r[0] for r in bad.records]
    assert {"e1.window_capacity_over_demand", "e1.job_transfer_rate"} <= {r[0] for r in bad.records}
    assert bad.failures == ["no transfer times for the batch in XferStatsLog (efficiency lost None)",
                            "3 of 4 jobs completed", "jobs [2] did not return 2 MB of output"]


def test_e4_production_point_records_the_table_and_checks_the_nodes():
    nodes = [report([task(0, 10, 60, 50), task(1, 10, 110, 100)], host=f"w{i}", n=i, cpus=2) for i in range(2)]
    p = {"nodes": 2, "tasks_per_node": 2}
    m = e4_points.production(nodes, [], p, "colocated", False)
    names = {r[0] for r in m.records}
    assert {"e4.total_efficiency", "e4.job_start_efficiency", "e4.idle_tail_slots", "e4.lookups"} <= names
    assert "e4.backfill_overrun_seconds" not in names
    assert all(r[3]["layout"] == "colocated" and r[3]["backfill"] == 0 for r in m.records)
    assert [(r[1], r[3]["run"]) for r in m.records if r[0] == "e4.event_cpu_mean"] == [(7.5, "production")]
    assert m.verdict() is None, m.failures
    ded = e4_points.production(nodes, [{"errors": ["db down"]}], dict(p, nodes=3), "dedicated", True)
    assert "e4.backfill_overrun_seconds" in {r[0] for r in ded.records}
    assert ded.failures == ["node errors: ['db down']", "reports from 2 of 3 nodes"]
    short = e4_points.production(nodes[:1], [], dict(p, nodes=1, tasks_per_node=3), "colocated", False)
    assert short.failures == ["only 2 of 3 tasks reported"]


def _round(**over):
    r = {"clients": 4, "profile": "default", "aggregate": 40.0, "per_client": 10.0, "failed": 0, "reads": 8,
         "port": 1097, "phase": "uncached-4", "net_series": [(0.0, 1.0, 30.0), (1.0, 1.0, 50.0)],
         "md_series": [(0.0, 5.0, 7.0)], "stripe_cache_size": 256, "spindles": "emulated", "names": ["f1"]}
    r.update(over)
    return r


def test_e2_uncached_point_records_the_round_and_its_series():
    m = e2_points.uncached(_round())
    assert [(r[0], r[1]) for r in m.records] == [("e2.uncached_rate", 40.0), ("e2.uncached_per_client_rate", 10.0),
                                                 ("e2.dtn_tx_rate", 30.0), ("e2.dtn_tx_rate", 50.0)]
    assert m.verdict() is None
    assert e2_points.uncached(_round(failed=2, aggregate=0.0)).failures == \
        ["2 of 8 reads through port 1097 failed", "aggregate 0.0 MB/s"]


def test_e2_raid_points_record_rates_and_check_every_side_moved():
    w = {"rate": 0.0, "writers": 10, "series": [(0.0, 1.0, 20.0)], "stripe_cache_size": 32768,
         "profile": "raid-stripe-32768", "spindles": "off", "member_mb_per_s": 0, "member_iops": 0}
    m = e2_points.raid_write(w)
    assert m.records[0][3]["stripe_cache_size"] == 32768 and m.records[1] == \
        ("e2.raid_write_rate_over_time", 20.0, "MB/s", {"t": 0.0, "stripe_cache_size": 32768,
                                                         "profile": "raid-stripe-32768", "spindles": "off"})
    assert m.failures == ["RAID write rate 0.0 MB/s"]
    c = {"read_alone": 50.0, "read_both": 20.0, "write_alone": 30.0, "write_both": 0.0, "read_ratio": 0.4,
         "write_ratio": None, "errors": 1, "readers": 4, "writers": 10, "profile": "default",
         "stripe_cache_size": 256, "spindles": "emulated"}
    rw = e2_points.read_write(c)
    assert [r[0] for r in rw.records].count("e2.raid_read_under_writes") == 1
    assert "e2.raid_write_under_reads" not in [r[0] for r in rw.records]
    assert rw.failures == ["fio reported 1 I/O errors on the array", "write_both: no bytes moved (0.0 MB/s)"]


def test_e2_cached_point_keeps_both_rounds_and_reports_what_the_cache_said():
    first, repeat = _round(aggregate=20.0, phase="first_read-4"), _round(aggregate=80.0, phase="repeat_read-4")
    m = e2_points.cached(first, repeat, None, None, 40.0, 100.0)
    got = {r[0]: r[1] for r in m.records}
    assert got["e2.cached_over_uncached"] == 0.5 and got["e2.hit_over_local_read"] == 0.8
    assert got["e2.first_read_rate"] == 20.0 and got["e2.repeat_read_rate"] == 80.0
    assert m.verdict() is None
    bad = e2_points.cached(first, repeat, None, "repeated reads of f1 still fetched from the origin", None, 100.0)
    assert "e2.cached_over_uncached" not in {r[0] for r in bad.records}
    assert bad.failures == ["repeated reads of f1 still fetched from the origin"]


def _bound(**over):
    b = {"network": _round(aggregate=4.0, clients=4), "first": _round(aggregate=0.4, phase="bound_first_read-4"),
         "write": {"rate": 0.2, "writers": 10, "write_mb": 1}, "profile": "default", "stripe_cache_size": 256,
         "target_ratio": 0.046, "member_mb_per_s": 0.05, "cache_problem": None}
    b.update(over)
    return b


def test_e2_array_bound_point_judges_the_cache_against_its_own_network_and_array():
    m = e2_points.array_bound(_bound())
    got = {r[0]: (r[1], r[3]) for r in m.records}
    assert got["e2.cached_over_uncached"][0] == pytest.approx(0.1)
    assert got["e2.cached_over_uncached"][1]["spindles"] == "array-bound"
    assert got["e2.array_over_network"] == (0.05, {"target": 0.046, "stripe_cache_size": 256,
                                                     "profile": "default", "spindles": "array-bound"})
    assert got["e2.raid_write_rate"][1]["member_mb_per_s"] == 0.05
    assert got["e2.first_read_rate"][1]["spindles"] == "array-bound"
    assert m.verdict() is None
    # an array that still outruns the paper's ratio by more than x2 is not the paper's regime
    fast = e2_points.array_bound(_bound(write={"rate": 1.0, "writers": 10, "write_mb": 1}))
    assert len(fast.failures) == 1 and "not within x2 of the paper's 0.046" in fast.failures[0]
    empty = e2_points.array_bound(_bound(cache_problem="the caching proxy has no .cinfo record of f1"))
    assert empty.failures == ["the caching proxy has no .cinfo record of f1"]


def test_e3_cell_records_every_number_of_the_job_it_has():
    at = {"compute": "a", "storage": "b", "rtt_ms": 40, "cache_mb": 10.0, "reader": "root", "learn_entries": 100}
    r = {"at": at, "events_per_s": 50.0, "cpu_eff": 0.5, "mb_per_s": 2.0, "startup_s": 1.0, "read_calls": 12,
         "cache_fills": None, "bytes_read_mb": 3.0}
    m = e3_points.cell(r)
    assert [x[0] for x in m.records] == ["e3.events_per_s", "e3.cpu_eff", "e3.mb_per_s", "e3.startup_s",
                                         "e3.read_calls", "e3.bytes_read_mb"]
    assert all(x[3] == at for x in m.records) and m.verdict() is None
    assert e3_points.cell(dict(r, events_per_s=0.0)).failures == ["no events read in cell a<-b"]
    conc = {"per_job": [300.0, 150.0], "cpu_wait": [0.1, None], "rtt_ms": 5, "reader": "root", "redirect_rtt_ms": 5}
    m = e3_points.concurrency(conc, 2)   # no host figure: the worker is not a VM of this machine
    assert [(n, v) for n, v, _u, _p in m.records] == [("e3.concurrency_events_per_s", 300.0),
                                                        ("e3.concurrency_events_per_s", 150.0),
                                                        ("e3.concurrency_cpu_wait", 0.1)]
    assert m.records[2][3] == {"jobs": 2, "rtt_ms": 5, "reader": "root", "redirect_rtt_ms": 5}
    assert e3_points.concurrency(dict(conc, per_job=[300.0]), 2).checks[0][0] is False
    # the host's wait counts on the part of the loop the guest thought it ran
    waits = {n: v for n, v, _u, _p in e3_points.concurrency(dict(conc, host_cpu_wait=0.5), 2).records
             if "wait" in n}
    assert waits == {"e3.concurrency_cpu_wait": pytest.approx(0.55), "e3.concurrency_host_cpu_wait": 0.5}
    assert e3_points.cpu_wait(None, 0.5) is None and e3_points.cpu_wait(0.2, None) == 0.2
    assert (e3_points.site_number("a"), e3_points.site_number("d")) == (1, 4)


def test_e3_diagonal_and_concurrency_points():
    assert e3_points.diagonal({}, 10, "root").skipped == "needs diagonal and off-diagonal root cells at 10 MB in this run"
    m = e3_points.diagonal({5: 0.9, 80: 1.3}, 10, "root")
    assert [(x[1], x[3]["rtt_ms"]) for x in m.records] == [(0.9, 5), (1.3, 80)]
    assert m.failures == ["the 80 ms root cells read 1.3 x the diagonal's events/s: the diagonal is slower beyond noise"]
    assert e3_points.diagonal({5: 0.9, 80: 0.5}, 10, "root").verdict() is None
    # the far cells' reads could cost at most 10% of the loop in round trips: kept, not judged
    quiet = e3_points.diagonal({20: 1.27}, 10, "root", {20: 0.1})
    assert quiet.checks == [] and quiet.records[0][1] == 1.27 and "not judged" in quiet.lines[0]
    # where they could cost more than the band, the ratio is judged
    assert e3_points.diagonal({80: 1.3}, 10, "root", {80: 1.4}).failures
    r = {"per_job": [10.0, 11.0], "rtt_ms": 40, "reader": "uproot", "redirect_rtt_ms": 0}
    assert len(e3_points.concurrency(r, "2").records) == 2 and e3_points.concurrency(r, "2").verdict() is None
    assert e3_points.concurrency(r, 4).failures == ["2 of 4 jobs reported"]


def test_measure_point_finds_a_kind_in_a_partner_library(monkeypatch):
    fake, partner = PointTestbed(), type("Partner", (), {})()
    partner.point_ccb = lambda layout, config: Measured().record("e5.x", 1, layout=layout)

    class FakeBuiltIn:
        def get_library_instance(self, name):
            return partner if name == "CollectorLibrary" else fake
    monkeypatch.setattr(base(), "BuiltIn", FakeBuiltIn)

    class Lib(base().ExperimentLibrary):
        experiment, point_partners = "e5", ("CollectorLibrary",)
    Lib("ci").measure_point("ccb", layout="own-hosts", config="per-daemon")
    assert fake.recorded == [("e5.x", 1, {"layout": "own-hosts"})]
    with pytest.raises(AssertionError, match="Lib and its partners \\['CollectorLibrary'\\] have no point_ramp"):
        Lib("ci").measure_point("ramp", profile="default")


def test_e5_points_check_what_each_row_must_show():
    r = {"max_running": 40, "limit": "memory", "reason": "free memory", "profile": "default",
         "steps": 1, "slots": 50, "targets": [16]}
    m = e5_points.ramp(r)
    assert [x[0] for x in m.records] == ["e5.max_running"]
    assert m.failures == ["the ramp stopped at its first step (16 jobs): memory - free memory"]
    assert e5_points.ramp(dict(r, targets=[16, 32], steps=2)).verdict() is None
    c = {"duration": 1.2, "median": 1.3, "durations": [1.2, 1.4], "prefetch": None, "matches": 2, "considered": 8,
         "rejections": 8, "requests": 8, "rtt_ms": 100, "protocol": "batched", "in_force": {"cm1": "batched"}}
    assert e5_points.negotiation(c).failures == [
        "the NegotiatorLog shows no fetch of the schedd's request list in [1.2, 1.4]",
        "2 jobs that no slot can meet were matched"]
    assert "e5.negotiation_prefetch" in [x[0] for x in e5_points.negotiation(dict(c, prefetch=0.1, matches=0)).records]
    assert e5_points.matchable(dict(c, matches=0)).failures == \
        ["no job matched in the cycles [1.2, 1.4] though every free slot meets them"]
    tree = {"shape": "tree", "profile": "default", "visible": 30.0, "cycle": 2.0, "slots": 16, "window_s": 120,
            "children_ads": 16, "stats": {"cm1": {"total": 40, "lost": 0, "window": True},
                                          "ccb1:9620": {"total": 40, "lost": 1}}}
    t = e5_points.shape(tree, ["cm1", "cm2"])
    assert ("e5.tree_updates_lost", 1, "updates", {"shape": "tree", "profile": "default", "collector": "ccb1:9620",
                                                   "window": "ad-life"}) in t.records
    assert len(t.failures) == 1 and t.failures[0].startswith("tree: no slot update reached the collector on cm2")
    assert e5_points.shape(dict(tree, shape="flat"), ["cm1"]).failures == ["child collectors hold 16 ads in the flat shape"]
    held = {"held": 0, "per_worker": 0, "limit": "lost", "reason": "lost updates"}
    assert e5_points.collector_ramp(held, "100", 1).verdict() is None
    assert e5_points.collector_ramp(held, "0", 2).failures == ["the first step already failed on the LAN: lost - lost updates"]
    assert e5_points.ccb({"total": 4, "children": 0, "by_cm": {}}, "on-children").failures == \
        ["the workers hold no connection to the child collectors: {}"]
    assert e5_points.ccb({"total": 4, "children": 0, "by_cm": {}}, "own-hosts").verdict() is None


def test_record_known_keeps_only_a_figure_the_point_has():
    m = Measured().record_known("x.a", None, "s").record_known("x.b", 0.0, "s", n=1)
    assert m.records == [("x.b", 0.0, "s", {"n": 1})]


def test_set_checked_rtt_measures_the_lan_before_it_sets_the_wan(ptb):
    calls = []
    ptb.site.lan_rtt = lambda a, b: calls.append(("base", a, b)) or 0.5
    ptb.site.check_measured_rtt = lambda rtt, measured, base: calls.append(("match", rtt, measured, base))
    lib = _library(Measured())
    lib.set_checked_rtt("100", "submit", "cm", lambda ms: calls.append(("set", ms)) or 100.7)
    assert calls == [("base", "submit", "cm"), ("set", "100"), ("match", "100", 100.7, 0.5)]
    calls.clear()
    lib.set_checked_rtt("0", "worker", "cm", lambda ms: calls.append(("set", ms)) or 0.4)
    assert calls == [("set", 0)]


def test_set_checked_rtt_measures_a_missed_rtt_again_and_keeps_each_retry(ptb, monkeypatch):
    monkeypatch.setattr(wan.time, "sleep", lambda s: None)
    ptb.site.lan_rtt = lambda a, b: 0.5                      # the base: the LAN's own
    again = iter([150.2, 101.0])                              # measured again, emulation included
    ptb.site.measure_rtt = lambda a, b: next(again)
    ptb.site.check_measured_rtt = lambda rtt, measured, base: matched.append((measured, base))
    kept, matched = [], []
    ptb.record_metric = lambda name, value, unit, **p: kept.append((name, value, p["attempt"]))
    _library(Measured()).set_checked_rtt("100", "submit", "cm", lambda ms: 149.8)
    assert kept == [("wan.rtt_rechecked", 150.2, 2), ("wan.rtt_rechecked", 101.0, 3)]
    assert matched == [(101.0, 0.5)]


def test_recheck_stops_at_the_first_rtt_on_target_and_gives_up_after_its_pauses():
    slept, said = [], []
    again = iter([100.9, 99.0])
    assert wan.recheck(100.0, 150.0, 0.5, lambda: next(again), waits=(30, 60), sleep=slept.append,
                       say=said.append) == [150.0, 100.9]
    assert slept == [30] and "150.0 ms is not 100 ms" in said[0]
    assert wan.recheck(100.0, 100.4, 0.5, lambda: 1 / 0, sleep=slept.append) == [100.4]
    late = iter([149.0, 148.0])
    assert wan.recheck(100.0, 150.0, 0.5, lambda: next(late), waits=(1, 2), sleep=lambda s: None,
                       say=lambda s: None) == [150.0, 149.0, 148.0]
