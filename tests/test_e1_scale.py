"""E1's scale model (testbed/experiments/e1/e1_scale.py): k, the scaled demand and the
dimensionless R = concurrency x window / RTT / demand for the paper and this site."""
import pytest

from testbed.experiments.e1 import jobs as e1_jobs, e1_scale, transfer
from testbed.model import profiles, scaled_profiles as sp
from testbed.model.errors import ConfigError

RTTS = (10, 20, 40, 80)


def test_the_paper_numbers_come_from_its_file():
    assert e1_scale.paper_saturation_rate() == 555          # Table 3, expected throughput
    assert e1_scale.paper_demand(1) == 55 and e1_scale.paper_demand(2) == 110   # equation 1, W and 2W


def test_k_is_this_sites_rate_over_the_papers():
    assert e1_scale.scale_factor(5.55, 555) == 0.01
    assert e1_scale.scale_factor(4.79, 555) == 0.008631
    with pytest.raises(ValueError):
        e1_scale.scale_factor(0, 555)


def test_window_and_concurrency_of_table4s_columns():
    default, updated = profiles.load("table4-default"), profiles.load("table4-updated")
    assert e1_scale.stream_window(default) == 4194304      # tcp_wmem max (sender) < tcp_rmem max 6291456
    assert e1_scale.stream_window(updated) == 12582912
    assert e1_scale.transfer_concurrency(default) == e1_scale.transfer_concurrency(updated) == 10   # HTCondor 8.6
    assert e1_scale.transfer_concurrency(profiles.load("default")) == 100                          # HTCondor 23.9


def test_the_papers_ratio_at_80_ms():
    # 10 streams x 4 MiB / 80 ms = 524 MB/s against W = 55 MB/s
    assert e1_scale.paper_ratio("table4-default", 1, 80) == pytest.approx(10 * 4194304 / 0.08 / 1e6 / 55)
    at_w = e1_scale.paper_ratio("table4-default", 1, 80)
    assert e1_scale.paper_ratio("table4-default", 2, 80) == pytest.approx(at_w / 2)
    assert e1_scale.paper_ratio("table4-updated-scaled", 2, 80) == e1_scale.paper_ratio("table4-updated", 2, 80)
    assert e1_scale.paper_ratio("table4-default", 2, 0) is None          # no RTT, no window limit
    assert e1_scale.paper_ratio("wan-tuned", 2, 80) is None              # not one of the paper's columns


@pytest.mark.parametrize("column", ["table4-default", "table4-updated"])
@pytest.mark.parametrize("achieved", [3.4, 4.79, 7.06])
def test_the_scaled_model_keeps_the_papers_ratio_at_every_rtt(column, achieved):
    k = e1_scale.scale_factor(achieved, e1_scale.paper_saturation_rate())
    made = sp.scaled(profiles.load(column), k)
    for factor in (1, 2):
        demand = e1_scale.sweep_base_rate(made, 0.25, achieved) * factor   # k x 55 MB/s x factor
        for rtt in RTTS:
            paper = e1_scale.paper_ratio(column, factor, rtt)
            # with the paper's 10 transfers at once: the paper's R (to the rounding of the buffers)
            assert e1_scale.point_ratio(made, rtt, demand, jobs=10) == pytest.approx(paper, rel=1e-3)
            # with 8 jobs a point (quick) at most 8 transfers run at once
            assert e1_scale.point_ratio(made, rtt, demand, jobs=8) == pytest.approx(0.8 * paper, rel=1e-3)


def test_unscaled_the_windows_never_bind_here():
    column = profiles.load("table4-default")
    demand = e1_scale.sweep_base_rate(column, 0.25, 5.0) * 2          # 2W = 2 x 0.25 x 5 MB/s
    assert demand == 2.5
    ratio = e1_scale.point_ratio(column, 80, demand, jobs=8)
    assert ratio == pytest.approx(0.8 * 110 / 2.5 * e1_scale.paper_ratio("table4-default", 2, 80))
    assert ratio > 100 > e1_scale.paper_ratio("table4-default", 2, 80)


def test_point_demand_is_what_the_jobs_write():
    assert e1_scale.point_demand(8, 1.2, 20) == pytest.approx(8 * 1.2 * 1048576 / 1e6 / 20)
    assert e1_scale.point_demand(8, 1.2, 20) == pytest.approx(e1_jobs.expected_rate(8, 1.2, 20) * 1.048576)


def test_manifest_entry_holds_k_the_rates_and_every_scaled_value():
    made = e1_scale.scaled_columns(["table4-default", "table4-default-scaled", "table4-updated-scaled"], 0.01)
    assert sorted(made) == ["table4-default-scaled", "table4-updated-scaled"]
    entry = e1_scale.manifest_entry(0.01, 5.55, 555.0, made, [1, 2])
    assert entry["k"] == 0.01 and entry["achieved_mb_s"] == 5.55 and entry["paper_mb_s"] == 555
    assert entry["sweep_demand_mb_s"] == {"W": pytest.approx(0.55), "2W": pytest.approx(1.1)}
    default = entry["profiles"]["table4-default-scaled"]
    assert default["spec"] == "table4-default@k=0.01" and default["base"] == "table4-default"
    values = {c["key"]: c["scaled"] for c in default["sysctl"]}
    assert values["net.ipv4.tcp_wmem"] == "4096 16384 41943" and values["net.core.netdev_max_backlog"] == 1000
    lines = e1_scale.describe(entry)
    assert "k = 5.55 MB/s / 555 MB/s = 0.01" in lines[0] and "2W = 1.1 MB/s" in lines[0]
    assert "net.ipv4.tcp_wmem (all) 4096 16384 4194304 -> 4096 16384 41943" in lines[1]
    assert "netdev_max_backlog" not in lines[1]


def test_plan_rows_size_the_points_as_the_run_does():
    named = {"table4-default": profiles.load("table4-default"),
             "table4-default-scaled": sp.scaled(profiles.load("table4-default"), 0.01)}
    rows = e1_scale.plan_rows(named, [0, 80], [2], jobs=10, length_s=20, cap_mb=16, sweep_load=0.25,
                              htcondor_rate=5.55)
    assert [r[:3] for r in rows] == [["table4-default", "2W", "80"], ["table4-default-scaled", "2W", "80"]]
    paper = e1_scale.paper_ratio("table4-default", 2, 80)
    assert rows[0][3] == rows[1][3] == f"{paper:.3g}"
    # scaled: 2W = 1.1 MB/s (10^6 bytes) -> 2.1 MB (2^20 bytes, in tenths) a job: the paper's R within the rounding
    assert float(rows[1][4]) == pytest.approx(paper, rel=0.01)
    assert float(rows[0][4]) > 20 * paper


def rec(name, value, **params):
    return {"name": name, "value": value, "unit": "ratio", "params": params}


def test_compares_table_puts_the_papers_ratio_beside_the_trials_median():
    paper = e1_scale.paper_ratio("table4-default", 2, 80)
    records = [rec(e1_scale.RATIO_METRIC, v, profile="table4-default-scaled", rate="2W", rtt_ms=80.0, trial=t)
               for t, v in ((1, 3.0), (2, 4.0), (3, 5.0))] + [rec("e1.scale_k", 0.01, trial=1)]
    text = e1_scale.tables_text({"table4-default-scaled": records})
    assert "k = 0.01" in text
    row = [line for line in text.splitlines() if line.startswith("table4-default-scaled")][0].split()
    assert row[:5] == ["table4-default-scaled", "2W", "80", f"{paper:.3g}", "4"] and "(3 trials)" in " ".join(row)
    assert e1_scale.tables_text({"default": [rec("e1.efficiency_lost", 0.3)]}) == ""
    assert transfer.EXPERIMENT.tables({"table4-default-scaled": records}) == text


def test_the_scaled_columns_tuning_gain_has_the_scaled_baseline():
    recs = [rec("e1.efficiency_lost", v, profile=p, rate="2W", rtt_ms=80.0)
            for p, v in (("table4-default-scaled", 0.6), ("table4-updated-scaled", 0.3),
                         ("table4-default", 0.4), ("table4-updated", 0.4))]
    gains = {p["profile"]: g for g, p in transfer.tuning_gains(recs, 80)}
    assert gains == {"table4-updated-scaled": pytest.approx(2.0), "table4-updated": pytest.approx(1.0)}


# --- the keywords over it (robot/libraries/TransferLibrary.py) ---------------------------------

class FakeSite:
    topo, ssh, pool = "topo", "ssh", "pool"

    def __init__(self, run, first=None):
        self.run, self.derived, self.first = run, {}, first or {}
        self.profile_in_force = None

    @property
    def profile_name(self):
        return self.profile_in_force.name if self.profile_in_force else "default"

    def first_trial_value(self, name, **params):
        return self.first.get(name)

    def add_profile(self, prof):
        self.derived[prof.name] = prof

    def load_profile(self, name):
        return self.derived.get(name) or profiles.load(name)


class FakeTestbed:
    def __init__(self, run, names, first=None):
        self.site, self.names = FakeSite(run, first), names

    def profiles_to_compare(self):
        return list(self.names)

    def experiment_parameters(self, name):
        from testbed.harness import registry
        return registry.get(name).parameters("quick")


@pytest.fixture
def library(tmp_path, monkeypatch):
    from robot.utils import Importer
    from testbed import PROJECT_ROOT
    from testbed.results import runs
    cls = Importer("test library").import_class_or_module_by_path(
        str(PROJECT_ROOT / "robot" / "libraries" / "TransferLibrary.py"))
    import _experiment_library

    def make(names, first=None):
        run = runs.Run.create("e1", names, topology={}, accel="tcg", root=tmp_path,
                              profile_contents={n: sp.for_run(n).as_dict() for n in names})
        tb = FakeTestbed(run, names, first)

        class FakeBuiltIn:
            def get_library_instance(self, name):
                return tb
        monkeypatch.setattr(_experiment_library, "BuiltIn", FakeBuiltIn)
        return cls("quick"), tb
    return make


def test_the_setup_scales_the_compared_columns_and_writes_them_into_the_manifest(library):
    names = ["table4-default", "table4-updated", "table4-default-scaled", "table4-updated-scaled"]
    lib, tb = library(names)
    assert tb.site.run.manifest()["profile_contents"]["table4-default-scaled"]["k"] is None   # before the saturation test
    assert lib.profile_for_the_ceilings(["table4-updated-scaled", "default"]) == "table4-updated"
    assert lib.profile_for_the_ceilings(names) == "table4-default"
    got = lib.scale_the_paper_profiles_to_this_site({"achieved": 5.55, "sustained": 6.0})
    assert got == {"k": 0.01, "achieved": 5.55, "paper": 555, "profiles": names[2:]}
    assert sorted(tb.site.derived) == names[2:]
    m = tb.site.run.manifest()
    assert m["scale_model"]["k"] == 0.01 and m["scale_model"]["k_from"] == "this trial's saturation test"
    assert m["scale_model"]["profiles"]["table4-updated-scaled"]["spec"] == "table4-updated@k=0.01"
    scaled = m["profile_contents"]["table4-default-scaled"]
    assert scaled["derived"]["k"] == 0.01
    assert scaled["roles"]["all"]["sysctl"]["net.ipv4.tcp_wmem"] == "4096 16384 41943"
    column = m["profile_contents"]["table4-default"]
    assert column["roles"]["all"]["sysctl"]["net.ipv4.tcp_wmem"] == "4096 16384 4194304"


def test_a_later_trial_scales_with_trial_ones_rate(library):
    lib, tb = library(["table4-default-scaled"], first={"e1.achieved_rate": 4.79})
    got = lib.scale_the_paper_profiles_to_this_site({"achieved": 9.0, "sustained": 9.0})
    assert got["k"] == 0.008631 and tb.site.derived["table4-default-scaled"].derived["k"] == 0.008631


def test_rates_given_with_set_size_the_points_and_make_k_in_every_trial(library, monkeypatch):
    lib, tb = library(["table4-default", "table4-default-scaled"], first={"e1.achieved_rate": 4.79,
                                                                           "e1.sustained_rx_rate": 4.0})
    given = dict(tb.experiment_parameters("e1"), sizing_rate_mb_s=6.0, scale_rate_mb_s=5.55)
    monkeypatch.setattr(tb, "experiment_parameters", lambda name: given)
    got = lib.scale_the_paper_profiles_to_this_site({"achieved": 9.0, "sustained": 9.0})
    assert got["k"] == 0.01 and tb.site.run.manifest()["scale_model"]["k_from"] == "--set scale_rate_mb_s"
    assert lib._sweep_rate(9.0) == 6.0


def test_a_point_sizes_scaled_rows_from_k_and_the_others_from_the_saturation_rate(library, monkeypatch):
    lib, tb = library(["table4-default", "table4-default-scaled"])
    lib.scale_the_paper_profiles_to_this_site({"achieved": 5.55, "sustained": 6.0})
    sizes = []

    class Exp:
        def __init__(self, *args):
            pass

        def run_batch(self, n, length, size, input_mb, tag):
            sizes.append(size)
            return transfer.Batch(1, [], 1.0, {})

        def xfer_stats(self, cluster):
            return []
    monkeypatch.setattr(type(lib), "experiment_class", Exp)
    p = tb.experiment_parameters("e1")
    n, length = p["sweep_jobs"], p["sweep_compute_s"]
    tb.site.profile_in_force = tb.site.load_profile("table4-default-scaled")
    r = lib.run_latency_point("80", "2", 6.0, measured_rtt_ms="82.0")
    assert sizes[-1] == e1_jobs.size_for_rate(2 * 0.01 * 55 / 1.048576, n, length)     # k x 2W of the paper
    assert r["demand"] == pytest.approx(e1_scale.point_demand(n, sizes[-1], length))
    assert r["window_over_demand"] == pytest.approx(e1_scale.point_ratio(tb.site.profile_in_force, 82.0, r["demand"], n))
    assert r["params"] == {"rtt_ms": 80.0, "rate": "2W", "profile": "table4-default-scaled"}
    tb.site.profile_in_force = profiles.load("table4-default")
    r = lib.run_latency_point("0", "2", 6.0)
    assert sizes[-1] == e1_jobs.size_for_rate(2 * p["sweep_load"] * 6.0, n, length, p["max_output_mb"])
    assert r["window_over_demand"] is None and r["params"]["profile"] == "table4-default"


def test_a_set_rate_sizes_the_run_before_trial_1_and_this_trial():
    assert e1_scale.rate_to_size_from(53.5, 56.0, 50.0, "sizing_rate_mb_s") == (53.5, "--set sizing_rate_mb_s")
    assert e1_scale.rate_to_size_from(None, 56.0, 50.0, "x") == (56.0, "trial 1's saturation test")
    assert e1_scale.rate_to_size_from(None, None, 50.0, "x") == (50.0, "this trial's saturation test")


def test_sizing_sets_repeat_trial_1s_rates_or_the_values_the_run_was_given():
    records = [{"name": "e1.sustained_rx_rate", "params": {"profile": "p"}, "value": 56.5},
               {"name": "e1.sustained_rx_rate", "params": {"profile": "p", "trial": 2}, "value": 40.0},
               {"name": "e1.achieved_rate", "params": {"trial": 1, "jobs": 8}, "value": 55.25},
               {"name": "e1.achieved_rate", "params": {"trial": 2, "jobs": 8}, "value": 41.0}]
    assert e1_scale.sizing_sets({}, records) == {"sizing_rate_mb_s": "56.5", "scale_rate_mb_s": "55.25"}
    given = e1_scale.sizing_sets({"sizing_rate_mb_s": 50.0, "scale_rate_mb_s": None}, records)
    assert given == {"sizing_rate_mb_s": "50.0", "scale_rate_mb_s": "55.25"}
    assert e1_scale.sizing_sets(None, []) == {}


def test_the_sizing_rates_are_parameters_every_scale_leaves_unset():
    params = transfer.EXPERIMENT.params
    for name in e1_scale.SIZING_METRICS:
        assert params[name].optional and params[name].parse(name, "53.5") == 53.5
        assert all(sc[name] is None for sc in transfer.EXPERIMENT.scales.values())
    with pytest.raises(ConfigError):
        params["sizing_rate_mb_s"].parse("sizing_rate_mb_s", "0")
