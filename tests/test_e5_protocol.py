"""E5's negotiation protocol axis (seed 004, 4.5): the CMs' fragment per protocol, the rows
per protocol and RTT, the point's records labelled with the protocol and its restore, the
summary's per-protocol arithmetic, and the claims and paper figures pinned to a protocol."""
import sys
import types

import pytest

from testbed.experiments.e5 import config as cfg, e5_points
from testbed.harness import points, registry, runner
from testbed.experiments.e5.e5_scale import EXPERIMENT
from testbed.model import topology
from testbed.model.constants import E5_NEGOTIATION_PROTOCOL_CONF
from testbed.remote.ssh import Result
from testbed.results import compare, verdict
from tests.test_experiment_libraries import load

NEGOTIATION_METRICS = ("e5.negotiation_cycle", "e5.negotiation_cycle_median", "e5.negotiation_prefetch",
                       "e5.negotiation_wan_over_lan", "e5.negotiation_round_trips_per_request",
                       "e5.negotiation_prefetch_round_trips")


# --- the fragment ---------------------------------------------------------------------------------
def test_the_per_request_fragment_turns_request_counts_off_and_lifts_the_time_limits():
    text = cfg.negotiation_protocol_conf("per-request")
    knobs = dict(line.split(" = ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert knobs == {"USE_RESOURCE_REQUEST_COUNTS": "False",
                     "NEGOTIATOR_MAX_TIME_PER_SUBMITTER": "31536000", "NEGOTIATOR_MAX_TIME_PER_SCHEDD": "31536000",
                     "NEGOTIATOR_MAX_TIME_PER_PIESPIN": "31536000", "NEGOTIATOR_MAX_TIME_PER_CYCLE": "31536000"}
    assert cfg.negotiation_protocol_conf("batched") == ""   # the release's own configuration
    with pytest.raises(ValueError, match="protocol must be one of batched, per-request, not 'lists'"):
        cfg.negotiation_protocol_conf("lists")


def test_the_fragment_goes_on_every_cm_and_batched_removes_it():
    per_request = cfg.negotiation_protocol_scripts(["cm1", "cm2"], "per-request")
    assert sorted(per_request) == ["cm1", "cm2"]
    for script in per_request.values():
        assert f"> {E5_NEGOTIATION_PROTOCOL_CONF}.new" in script and "USE_RESOURCE_REQUEST_COUNTS = False" in script
        assert "condor_reconfig" in script and "condor_restart -subsystem had" in script  # HAD restarts with it
    batched = cfg.negotiation_protocol_scripts(["cm1"], "batched")["cm1"]
    assert batched.startswith(f"if [ -e {E5_NEGOTIATION_PROTOCOL_CONF} ]; then rm -f {E5_NEGOTIATION_PROTOCOL_CONF};")


def test_the_protocol_in_force_is_read_from_the_masters_knob():
    assert cfg.PROTOCOL_READBACK.startswith("condor_config_val -master USE_RESOURCE_REQUEST_COUNTS")
    assert cfg.protocol_in_force("False\n") == "per-request"
    assert cfg.protocol_in_force("true\n") == "batched"      # the param table's default
    assert cfg.protocol_in_force("") is None and cfg.protocol_in_force("Not defined: X\n") is None


# --- the rows -------------------------------------------------------------------------------------
def test_one_negotiation_row_per_protocol_and_rtt_the_batched_rows_keeping_their_names():
    assert tuple(EXPERIMENT.scales["full"]["negotiation_protocols"]) == cfg.NEGOTIATION_PROTOCOLS
    assert EXPERIMENT.parameters("ci")["negotiation_protocols"] == ["batched"]          # CI's time budget
    assert EXPERIMENT.parameters("quick")["negotiation_protocols"] == ["batched", "per-request"]
    text = EXPERIMENT.generated_rows()["negotiation"]
    names = [line for line in text.splitlines() if line and not line[0].isspace()]
    assert names == ["negotiation-0ms", "negotiation-100ms", "negotiation-per-request-0ms",
                     "negotiation-per-request-100ms"]
    assert ("negotiation-per-request-100ms\n" in text
            and "    [Tags]    negotiation    protocol:per-request    rtt:100\n" in text
            and "    negotiation    protocol=per-request    rtt=100\n" in text)
    assert "    negotiation    protocol=batched    rtt=0\n" in text
    suite = EXPERIMENT.suite_path.read_text()
    assert all(f"\n{name}\n" in suite for name in names)


def test_a_per_request_row_is_not_a_point_of_a_ci_run():
    row = {"protocol": "per-request", "rtt": "100"}
    in_run = points.in_run_arguments(EXPERIMENT.points, "negotiation", row)
    assert in_run == {"negotiation_protocols": "per-request", "negotiation_rtts": "100"}
    ci, quick = EXPERIMENT.parameters("ci"), EXPERIMENT.parameters("quick")
    assert not any(points.same_value("per-request", v) for v in ci["negotiation_protocols"])
    assert any(points.same_value("per-request", v) for v in quick["negotiation_protocols"])
    assert EXPERIMENT.parameters("ci", {"negotiation_protocols": "batched,per-request"})["negotiation_protocols"] == \
        ["batched", "per-request"]
    with pytest.raises(Exception, match="has rows for negotiation_protocols batched, per-request only"):
        EXPERIMENT.parameters("ci", {"negotiation_protocols": "lists"})


def test_the_per_request_tag_selects_its_rows_and_the_summary():
    from robot.api import TestSuite
    runner.check_selection(registry.get("e5"), [], ["protocol:per-request"])
    suite = TestSuite.from_file_system(str(EXPERIMENT.suite_path))
    suite.filter(included_tags=["protocol:per-request"])
    assert [t.name for t in suite.all_tests] == ["negotiation-per-request-0ms", "negotiation-per-request-100ms",
                                                 "negotiation-wan-over-lan"]


# --- the point ------------------------------------------------------------------------------------
CYCLE = {"duration": 21.4, "median": 22.0, "durations": [21.4, 22.6], "prefetch": 0.31, "matches": 0,
         "considered": 200, "rejections": 200, "requests": 200, "rtt_ms": 100, "protocol": "per-request"}


def test_the_points_records_carry_the_protocol_and_the_cms_must_be_in_it():
    m = e5_points.negotiation(dict(CYCLE, in_force={"cm1": "per-request", "cm2": "per-request"}))
    assert m.verdict() is None
    assert [(name, params["protocol"], params["rtt_ms"]) for name, _v, _u, params in m.records] == \
        [("e5.negotiation_cycle", "per-request", 100), ("e5.negotiation_cycle_median", "per-request", 100),
         ("e5.negotiation_prefetch", "per-request", 100)]
    off = e5_points.negotiation(dict(CYCLE, in_force={"cm1": "per-request", "cm2": "batched"}))
    assert off.failures == ["not every CM gives the negotiator the per-request protocol: cm2 batched"]
    unread = e5_points.negotiation(dict(CYCLE, in_force={"cm1": None}))
    assert unread.failures == ["not every CM gives the negotiator the per-request protocol: "
                               "cm1 unknown (USE_RESOURCE_REQUEST_COUNTS unreadable)"]
    assert e5_points.negotiation(dict(CYCLE, in_force={})).failures == \
        ["not every CM gives the negotiator the per-request protocol: no CM answered"]


class FakeSSH:
    def __init__(self, readback):
        self.readback, self.scripts = readback, []

    def run_many(self, cmds, timeout=None):
        self.scripts.append(cmds)
        return {h: Result(h, 0, self.readback.get(h, "") if c == cfg.PROTOCOL_READBACK else "", "")
                for h, c in cmds.items()}


def scale_library(monkeypatch, ssh=None, params=None):
    lib = load("ScaleLibrary")
    tb = types.SimpleNamespace(site=types.SimpleNamespace(ssh=ssh, topo=topology.load("small")))
    monkeypatch.setattr(lib, "tb", property(lambda self: tb))
    monkeypatch.setattr(lib, "params", lambda self: params or {"failover_timeout_s": 60})
    return lib


def test_using_a_protocol_installs_it_on_every_cm_then_reads_it_back(monkeypatch):
    ssh = FakeSSH({"cm1": "False\n", "cm2": "False\n"})
    lib = scale_library(monkeypatch, ssh)
    waited = []
    monkeypatch.setattr(lib, "_wait_single_negotiator", lambda self, timeout: waited.append(timeout))
    assert lib().use_negotiation_protocol("per-request") == {"cm1": "per-request", "cm2": "per-request"}
    installed, readback = ssh.scripts
    assert sorted(installed) == ["cm1", "cm2"] and all("USE_RESOURCE_REQUEST_COUNTS = False" in s
                                                       for s in installed.values())
    assert set(readback.values()) == {cfg.PROTOCOL_READBACK} and waited == [60.0]


def test_a_negotiation_point_restores_the_batched_protocol_however_it_ends(monkeypatch):
    lib = scale_library(monkeypatch)
    used = []
    monkeypatch.setattr(lib, "remove_the_suites_jobs", lambda self, role: None)
    monkeypatch.setattr(lib, "_schedd_behind", lambda self, rtt: None)
    monkeypatch.setattr(lib, "use_negotiation_protocol",
                        lambda self, protocol: used.append(protocol) or {"cm1": protocol, "cm2": protocol})
    monkeypatch.setattr(lib, "negotiation_cycle_with_idle_requests", lambda self, rtt, protocol: dict(CYCLE))
    m = lib().point_negotiation("per-request", "100")
    assert used == ["per-request", "batched"] and m.verdict() is None
    assert {params["protocol"] for _n, _v, _u, params in m.records} == {"per-request"}

    def fails(self, rtt, protocol):
        raise AssertionError("no negotiation cycle considered 200 jobs")
    monkeypatch.setattr(lib, "negotiation_cycle_with_idle_requests", fails)
    used.clear()
    with pytest.raises(AssertionError, match="^no negotiation cycle considered 200 jobs$"):
        lib().point_negotiation("per-request", "100")
    assert used == ["per-request", "batched"]
    # a restore that fails after the point failed does not hide the point's own failure
    warned = []
    module = sys.modules[lib.__module__]
    monkeypatch.setattr(module.logger, "warn", warned.append)

    def restore_fails(self, protocol):
        used.append(protocol)
        if protocol == "batched":
            raise AssertionError("negotiation protocol batched: cm2: ssh gone")
        return {"cm1": protocol, "cm2": protocol}
    monkeypatch.setattr(lib, "use_negotiation_protocol", restore_fails)
    with pytest.raises(AssertionError, match="^no negotiation cycle considered 200 jobs$"):
        lib().point_negotiation("per-request", "100")
    assert warned == ["restoring the batched negotiation protocol failed: negotiation protocol batched: cm2: ssh gone"]
    # after a measured point, a failed restore fails the row but its cycles are still kept
    monkeypatch.setattr(lib, "negotiation_cycle_with_idle_requests", lambda self, rtt, protocol: dict(CYCLE))
    m = lib().point_negotiation("per-request", "100")
    assert [r[0] for r in m.records][0] == "e5.negotiation_cycle"
    assert m.failures == ["restoring the batched negotiation protocol failed: negotiation protocol batched: "
                          "cm2: ssh gone"]


# --- the summary ----------------------------------------------------------------------------------
def test_the_summary_of_one_protocol():
    m = e5_points.negotiation_summary("per-request", 200, lan=3.0, wan=23.0, lan_fetch=0.15, wan_fetch=0.35)
    got = {name: (round(value, 9), params) for name, value, _u, params in m.records}
    at = {"protocol": "per-request", "requests": 200}
    assert got == {"e5.negotiation_wan_over_lan": (round(23.0 / 3.0, 9), at),
                   "e5.negotiation_round_trips_per_request": (1.0, at),     # (23 - 3) s / 200 / 0.1 s
                   "e5.negotiation_prefetch_round_trips": (2.0, at)}        # (0.35 - 0.15) s / 0.1 s
    assert m.verdict() is None
    batched = e5_points.negotiation_summary("batched", 200, 1.4, 1.3, 0.4, 0.3)   # within the CM's noise
    assert batched.verdict() is None
    flat = e5_points.negotiation_summary("per-request", 200, 3.0, 2.9, 0.15, 0.35)
    assert flat.failures == ["per-request: the fastest cycle at 100 ms (2.9 s) is not longer than on the LAN "
                             "(3.0 s), though every request crossed the link"]
    no_lan = e5_points.negotiation_summary("batched", 200, 0.0, 1.8, 0.1, 0.3)
    assert "e5.negotiation_wan_over_lan" not in [r[0] for r in no_lan.records] and no_lan.lines[0].endswith("no ratio")


class RecordingTestbed:
    """The run's records so far, as TestbedLibrary keeps them: recorded_values matches as text."""

    def __init__(self, records):
        self.records = list(records)

    def recorded_values(self, name, **params):
        return [r["value"] for r in self.records if r["name"] == name
                and all(str(r["params"].get(k)) == str(v) for k, v in params.items())]

    def record_metric(self, name, value, unit="", **params):
        self.records.append({"name": name, "value": value, "unit": unit, "params": params})


def rec(name, value, **params):
    return {"name": name, "value": value, "unit": "s", "params": params}


def test_the_summary_row_computes_each_protocol_from_its_own_points(monkeypatch):
    points_run = [rec(name, value, protocol=protocol, rtt_ms=rtt, requests=200)
                  for protocol, name, rtt, value in (
                      ("batched", "e5.negotiation_cycle", 0, 1.4), ("batched", "e5.negotiation_cycle", 100, 1.8),
                      ("batched", "e5.negotiation_prefetch", 0, 0.15), ("batched", "e5.negotiation_prefetch", 100, 0.43),
                      ("per-request", "e5.negotiation_cycle", 0, 3.0),
                      ("per-request", "e5.negotiation_cycle", 100, 23.0),
                      ("per-request", "e5.negotiation_prefetch", 0, 0.15))]   # its 100 ms fetch is missing
    tb = RecordingTestbed(points_run)
    lib = load("ScaleLibrary")
    monkeypatch.setattr(lib, "tb", property(lambda self: tb))
    monkeypatch.setattr(lib, "params", lambda self: {"negotiation_requests": 200,
                                                     "negotiation_protocols": ["batched", "per-request"]})
    assert lib().record_the_negotiation_summary() == {"batched": ""}
    summary = {r["name"]: (round(r["value"], 6), r["params"]) for r in tb.records[len(points_run):]}
    at = {"protocol": "batched", "requests": 200}
    assert summary == {"e5.negotiation_wan_over_lan": (round(1.8 / 1.4, 6), at),
                       "e5.negotiation_round_trips_per_request": (0.02, at),
                       "e5.negotiation_prefetch_round_trips": (2.8, at)}
    tb.records.append(rec("e5.negotiation_prefetch", 0.1, protocol="per-request", rtt_ms=100, requests=200))
    assert lib().record_the_negotiation_summary() == {"batched": "", "per-request": ""}


# --- the claims and the paper's figures ------------------------------------------------------------
def trial_records(trial, per_request_wan, batched_wan, per_request_lan=10.0):
    """One trial of a full-scale run: both protocols' points and their summaries, as recorded."""
    n, out = 1000, []
    for protocol, lan, wan in (("per-request", per_request_lan, per_request_wan), ("batched", 2.0, batched_wan)):
        at = dict(protocol=protocol, requests=n, trial=trial)
        out += [rec("e5.negotiation_cycle", lan, rtt_ms=0, considered=n, **at),
                rec("e5.negotiation_cycle", wan, rtt_ms=100, considered=n, **at)]
        m = e5_points.negotiation_summary(protocol, n, lan, wan, 0.1, 0.3)
        out += [{"name": name, "value": value, "unit": unit, "params": dict(params, trial=trial)}
                for name, value, unit, params in m.records]
    return out


def claims():
    return {c.id: c for c in EXPERIMENT.claims()}


def test_the_claims_read_their_own_protocol():
    records = [r for t, (pr, b) in enumerate(((300.0, 90.0), (330.0, 110.0), (320.0, 100.0)), start=1)
               for r in trial_records(t, pr, b)]
    wan_over_lan, batching = claims()["e5-negotiation-slower-over-wan"], claims()["e5-batching-cuts-wan-negotiation"]
    assert wan_over_lan.value.per_trial(records) == [30.0, 33.0, 32.0]      # per-request 300 / 10, not batched
    assert wan_over_lan.reach.value.per_trial(records) == pytest.approx([2.9, 3.2, 3.1])   # (300 - 10) / 1000 / 0.1
    assert [round(x, 6) for x in batching.value.per_trial(records)] == [0.3, round(110 / 330, 6), 0.3125]
    assert (wan_over_lan.paper, batching.paper) == (38.4, 0.3)
    assert verdict.evaluate(wan_over_lan, records).verdict == verdict.REPRODUCED
    assert verdict.evaluate(batching, records).verdict == verdict.REPRODUCED
    # one round trip per request, as the release's one-by-one protocol pays: in reach, the size below the band
    slow = [r for t, wan in enumerate((105.0, 112.0, 108.0), start=1) for r in trial_records(t, wan, 3.0)]
    assert verdict.evaluate(wan_over_lan, slow).verdict == verdict.DIRECTION_ONLY
    # a cycle that paid no round trip per request did not run one by one over the WAN
    flat = [r for t, wan in enumerate((11.0, 12.0, 11.5), start=1) for r in trial_records(t, wan, 3.0)]
    assert verdict.evaluate(wan_over_lan, flat).verdict == verdict.OUT_OF_REACH
    assert verdict.evaluate(batching, flat).verdict == verdict.OUT_OF_REACH


def test_records_without_a_protocol_or_at_another_count_are_no_data():
    unlabelled = [dict(r, params={k: v for k, v in r["params"].items() if k != "protocol"})
                  for r in trial_records(1, 300.0, 90.0)]
    quick = [dict(r, params=dict(r["params"], requests=200)) for r in trial_records(1, 300.0, 90.0)]
    for c in (claims()["e5-negotiation-slower-over-wan"], claims()["e5-batching-cuts-wan-negotiation"]):
        assert verdict.evaluate(c, unlabelled).verdict == verdict.NO_DATA
        assert verdict.evaluate(c, quick).verdict == verdict.NO_DATA


def test_every_claim_and_paper_figure_on_the_negotiation_pins_a_protocol():
    read = [(c.id, s) for c in EXPERIMENT.claims()
            for s in c.value.selectors() + (c.reach.value.selectors() if c.reach else [])
            if s.metric in NEGOTIATION_METRICS]
    assert {cid for cid, _s in read} == {"e5-negotiation-slower-over-wan", "e5-batching-cuts-wan-negotiation"}
    assert all(s.params.get("protocol") in cfg.NEGOTIATION_PROTOCOLS for _cid, s in read), read
    figures = [f for f in compare.load_paper(EXPERIMENT.paper_path) if f["metric"] in NEGOTIATION_METRICS]
    assert figures and all(f["params"].get("protocol") in cfg.NEGOTIATION_PROTOCOLS for f in figures), figures
