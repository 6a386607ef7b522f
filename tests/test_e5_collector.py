"""E5's Uber-glidein workers and collector ramp with fake command outputs: the
memory arithmetic that refuses startds before anything starts, where memory per startd
comes from, the startds fragment and when it restarts HTCondor, the parsers of the
collector's statistics, startd names, RSS and connections, the ramp's stop rule and its
limit, the ramp against a fake collector that holds only so many startds, the CCB layouts'
connection counts, the suite's rows and the paper's claim."""
import re
import subprocess

import pytest

from testbed.experiments.e5 import collector as ramp, config as cfg, e5_figures, e5_scale as e5, uber
from testbed.harness import session
from testbed.model import topology
from testbed.model.errors import ConfigError
from testbed.model.schema import load_yaml
from testbed.model.startd_memory import CONSTANT_SOURCE, StartdMemory
from testbed.remote.ssh import Result
from testbed.results import runs, verdict
from testbed.experiments.e5 import parsers
from testbed.services import gateway


# --- how many startds fit a worker -------------------------------------------------------------
def test_the_memory_arithmetic_and_its_refusal():
    m = StartdMemory(32, "the constant", base_mb=192, keep_free_mb=48)
    assert m.need_mb(16) == 16 * 32 + 192 + 48 and m.largest(768) == 16 and m.largest(200) == 0
    assert m.refusal("worker1", 768, 16) is None
    text = m.refusal("worker1", 768, 17)
    assert text == ("worker1: 17 startds x 32 MB (the constant) + 192 MB for the guest without them "
                    "(WORKER_BASE_MB) + 48 MB kept free = 784 MB, more than its 768 MB; at most 16 startds fit")
    with pytest.raises(ValueError):
        StartdMemory(0)


def test_a_topology_with_more_startds_than_its_worker_holds_is_refused_naming_the_field():
    data = load_yaml(topology.topology_path("default"))
    data["hosts"]["worker1"]["startds"] = 40
    with pytest.raises(ConfigError) as err:
        topology.parse(data, "topologies/default.yaml")
    text = str(err.value)
    assert text.startswith("topologies/default.yaml: hosts.worker1.startds: worker1: 40 startds x 32 MB")
    assert CONSTANT_SOURCE in text and "at most 26 startds fit" in text
    data["hosts"]["worker1"].update(startds=18, slots_per_startd=1)  # Uber glidein: one slot each
    assert topology.parse(data, "x.yaml").hosts["worker1"].startds == 18


def _e5_run(root, name, rss_values, suite="e5"):
    run = runs.Run.create(suite, ["default"], "small", {"default": {}}, "tcg", root=root, path=root / name)
    for v in rss_values:
        run.record("e5.startd_rss", v, "MB", step=8, host="worker1")
    return run


def test_memory_per_startd_is_the_latest_runs_largest_measurement_else_the_constant(tmp_path):
    assert uber.measured_startd_memory(tmp_path).source == CONSTANT_SOURCE
    _e5_run(tmp_path, "20260101T000000Z-e5-default", [20.0])
    _e5_run(tmp_path, "20260102T000000Z-e5-default", [14.5, 16.25])
    _e5_run(tmp_path, "20260103T000000Z-e1-default", [99.0], suite="e1")   # not an E5 run
    _e5_run(tmp_path, "20260104T000000Z-e5-default", [])                   # measured nothing
    m = uber.measured_startd_memory(tmp_path)
    assert m.per_startd_mb == 16.2 and "20260102T000000Z-e5-default" in m.source


def test_e5_refuses_startds_that_do_not_fit_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(uber, "RESULTS_ROOT", tmp_path)   # no run measured: the constant
    default = topology.load("default")
    params = e5.EXPERIMENT.parameters("quick", {"startds_per_worker": 40})
    with pytest.raises(ConfigError) as err:
        e5.EXPERIMENT.check_topology("quick", params, default)
    text = str(err.value)
    assert "startds_per_worker = 40: worker1: 40 startds x 32 MB" in text and "+ 48 MB kept free" in text
    assert "(--set startds_per_worker=24, or more memory_mb)" in text and CONSTANT_SOURCE in text
    # every scale fits the shipped topologies with the constant
    for scale in ("ci", "quick", "full"):
        for name in ("small", "default"):
            e5.EXPERIMENT.check_topology(scale, e5.EXPERIMENT.parameters(scale), topology.load(name))
    # a smaller measured startd lets more run
    _e5_run(tmp_path, "20260102T000000Z-e5-default", [12.0])
    e5.EXPERIMENT.check_topology("quick", params, default)


def test_the_collector_ramp_starts_at_or_above_the_topologys_startds():
    small = topology.load("small")
    assert "collector_ramp_start = 1 is below the 2 startds worker1 runs" in \
        uber.ramp_start_refused({"collector_ramp_start": 1, "collector_ramp_rtts": [0]}, small)
    assert uber.ramp_start_refused({"collector_ramp_start": 2, "collector_ramp_rtts": [0]}, small) is None


def test_the_ramp_plan_doubles_to_its_max_or_to_what_memory_holds():
    small = topology.load("small")          # worker1: 1024 MB
    assert ramp.ramp_plan(3, 4, small, StartdMemory(32), 48) == [3, 4]
    assert ramp.ramp_plan(2, 0, small, StartdMemory(32), 48) == [2, 4, 8, 16, 24]   # (1024-192-48)/32 = 24
    assert ramp.ramp_plan(2, 0, small, StartdMemory(8), 48) == [2, 4, 8, 16, 32, 64, 98]


# --- the startds fragment --------------------------------------------------------------------------
def test_uber_startds_fragment_sets_one_slot_each_and_adds_the_startds_beyond_the_topologys():
    w = topology.load("default").hosts["worker1"]          # 2 startds x 50 slots
    text = cfg.extra_startds_conf(w, 4, 1)
    assert "NUM_SLOTS_TYPE_1 = 1\n" in text and "NUM_CPUS = 1\n" in text and "MEMORY = 64\n" in text
    assert "STARTD3 = $(STARTD)" in text and "STARTD4.EXECUTE = $(EXECUTE)/startd4" in text
    assert "STARTD2 = " not in text and "STARTD5" not in text
    assert "NUM_SLOTS" not in cfg.extra_startds_conf(w, 4, 50)           # the topology's slots: no layout
    assert cfg.extra_startds_conf(w, 2, 50) == "" and cfg.extra_startds_conf(w, 0) == ""
    only_layout = cfg.extra_startds_conf(w, 2, 1)
    assert "NUM_SLOTS_TYPE_1 = 1" in only_layout and "STARTD3" not in only_layout


def _run_fragment(tmp_path, monkeypatch, text, names=()):
    """Run the startds fragment script against fake condor tools; the calls it made."""
    bin_dir, conf, log = tmp_path / "bin", tmp_path / "70-e5.conf", tmp_path / "calls"
    bin_dir.mkdir(exist_ok=True)
    for name, body in {"condor_config_val": f"echo {tmp_path}/execute", "condor_reconfig": f"echo reconfig >> {log}",
                       "systemctl": f'echo "systemctl $*" >> {log}', "install": "true"}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(cfg, "E5_STARTDS_CONF", str(conf))
    log.write_text("")
    script = cfg.startds_script(text, names)
    assert subprocess.run(["bash", "-c", script], env={"PATH": f"{bin_dir}:/usr/bin:/bin"}).returncode == 0
    return log.read_text().split("\n")[:-1]


def test_a_new_slot_layout_restarts_htcondor_and_more_startds_of_it_only_reconfigure(tmp_path, monkeypatch):
    w = topology.load("default").hosts["worker1"]
    restart, reconfig = ["systemctl restart condor"], ["reconfig"]
    assert _run_fragment(tmp_path, monkeypatch, cfg.extra_startds_conf(w, 8, 1)) == restart    # 50 -> 1 slot
    assert _run_fragment(tmp_path, monkeypatch, cfg.extra_startds_conf(w, 16, 1)) == reconfig  # more of them
    assert _run_fragment(tmp_path, monkeypatch, cfg.extra_startds_conf(w, 16, 1)) == []        # unchanged
    assert _run_fragment(tmp_path, monkeypatch, "") == restart                                   # back to 50
    assert _run_fragment(tmp_path, monkeypatch, "") == []
    assert _run_fragment(tmp_path, monkeypatch, cfg.extra_startds_conf(w, 3)) == reconfig      # topology's slots
    assert _run_fragment(tmp_path, monkeypatch, "") == reconfig


def test_restart_on_takes_knob_names_only():
    with pytest.raises(ValueError):
        gateway.ConfigFragment(None, "w", "/x").script("A = 1\n", restart_on=("A; rm -rf /",))


def test_child_collectors_on_the_cms_can_be_the_workers_ccb_servers():
    topo = topology.load("default")
    assert cfg.child_collector_hosts(topo, "cm") == ["cm1", "cm2"] and cfg.dedicated_ccb_hosts(topo) == ["ccb1", "ccb2"]
    assert cfg.dedicated_ccb_hosts(topology.load("small")) == []
    child = cfg.child_collector_conf(topo, "cm2", "cm", ccb=True)
    assert "COLLECTOR2.ENABLE_CCB_SERVER = True\n" in child and "COLLECTOR2.CONDOR_VIEW_HOST = cm2:9618\n" in child
    assert "COLLECTOR2.COLLECTOR_NAME = child-cm2\n" in child
    worker = cfg.tree_worker_conf(topo, "worker1", 2, "cm", ccb=True)
    assert "COLLECTOR_HOST = cm1:9620, cm2:9620\n" in worker and "CCB_ADDRESS = cm1:9620, cm2:9620\n" in worker
    assert "CCB_ADDRESS" not in cfg.tree_worker_conf(topo, "worker1", 2, "cm")
    assert "USE_SHARED_PORT" not in worker
    assert "\nUSE_SHARED_PORT = False\n" in cfg.tree_worker_conf(topo, "worker1", 2, "cm", ccb=True, shared_port=False)
    with pytest.raises(ValueError):
        cfg.child_collector_hosts(topo, "dtn")


class Capture:
    """SSH that answers every command with `answer` and keeps what it was asked."""

    def __init__(self, answer=""):
        self.asked, self.answer = {}, answer

    def run_many(self, commands, check=False, timeout=None):
        self.asked.update(commands)
        return {h: Result(h, 0, self.answer, "") for h in commands}


def test_the_flat_shape_removes_children_from_every_host_that_may_hold_one():
    topo = topology.load("default")

    class Exp:
        pass
    exp = Exp()
    exp.topo, exp.ssh, exp.workers = topo, Capture(), topo.with_role("worker")
    tree = cfg.CollectorTree(exp, 4, placement="cm", ccb=True)
    tree.use("tree")
    assert "ENABLE_CCB_SERVER = True" in exp.ssh.asked["cm1"] and "condor_restart -subsystem had" in exp.ssh.asked["cm1"]
    assert exp.ssh.asked["ccb1"].startswith("if [ -e ")       # no child on the CCB hosts in this placement
    assert "CCB_ADDRESS" in exp.ssh.asked["worker1"] and "systemctl restart condor" in exp.ssh.asked["worker1"]
    assert "^(CCB_ADDRESS|USE_SHARED_PORT) *=" in exp.ssh.asked["worker1"]
    exp.ssh.asked.clear()
    cfg.CollectorTree(exp).use("flat")
    assert set(exp.ssh.asked) == {"cm1", "cm2", "ccb1", "ccb2", "worker1", "worker2"}
    assert all(c.startswith("if [ -e ") for c in exp.ssh.asked.values())


# --- parsers ----------------------------------------------------------------------------------------
COLLECTOR_ADS = """MyType = "Collector"
Machine = "cm1.default.testbed"
Name = "My Pool - cm1@cm1.default.testbed"
UpdatesTotal = 5000
UpdatesLost = 12
UpdatesLostRatio = 0.0024
ActiveQueryWorkers = 2
PendingQueries = 0
DroppedQueries = 1
StartdAds = 64
RecentDaemonCoreDutyCycle = 0.31
MyCurrentTime = 1700000000
CondorVersion = "$CondorVersion: 23.9.6 $"

MyType = "Collector"
Machine = "ccb1.default.testbed"
Name = "child-ccb1@ccb1.default.testbed"
UpdatesTotal = 900
UpdatesLost = 0
"""


def test_the_collectors_own_statistics_and_whose_ad_is_whose():
    ads = parsers.parse_long_ads(COLLECTOR_ADS)
    top = parsers.own_collector_ad(ads, "cm1")
    load = parsers.collector_load(top)
    assert load == {"UpdatesTotal": 5000, "UpdatesLost": 12, "UpdatesLostRatio": 0.0024, "ActiveQueryWorkers": 2,
                    "PendingQueries": 0, "DroppedQueries": 1, "StartdAds": 64, "RecentDaemonCoreDutyCycle": 0.31,
                    "MyCurrentTime": 1700000000}
    assert parsers.own_collector_ad(ads, "ccb1", cfg.child_name("ccb1"))["UpdatesTotal"] == 900
    assert parsers.own_collector_ad(ads, "ccb1") is None          # the child's ad is not the CCB's own
    assert parsers.own_collector_ad(ads, "cm2") is None


def test_startd_names_rss_and_connections_by_port():
    text = ("slot1@startd1@worker1.default.testbed\nslot2@startd1@worker1.default.testbed\n"
            "startd2@worker1.default.testbed\nslot1@dtn.default.testbed\n"
            "Warning: something\n\nslot1_3@startd1@worker2.default.testbed\n")
    assert parsers.startd_names(text, {"worker1"}) == {"startd1@worker1.default.testbed",
                                                       "startd2@worker1.default.testbed"}
    assert parsers.startd_names(text) == {"startd1@worker1.default.testbed", "startd2@worker1.default.testbed",
                                          "startd1@worker2.default.testbed"}    # the DTN's slot names no startd
    assert parsers.process_rss_mb(" 20480\n10240\nx\n") == [20.0, 10.0]
    ss = ("0 0 10.150.0.11:9618 10.150.0.15:40001\n0 0 10.150.0.11:9620 10.150.0.15:40002\n"
          "0 0 10.150.0.11:9620 10.150.0.16:40003\n0 0 10.150.0.11:9618 10.150.0.10:40004\n")
    assert parsers.inbound_by_port(ss, {"10.150.0.15", "10.150.0.16"}) == {9618: 1, 9620: 2}
    assert parsers.count_inbound(ss, 9620, {"10.150.0.15"}) == 1


def test_answers_tell_an_empty_list_from_a_collector_that_did_not_answer():
    class SSH:
        def run(self, host, command, check=False, timeout=None):
            assert command.count("&& echo '#ANSWERED#'") == 2 and "-pool cm2:9620 -af Name" in command
            return Result(host, 0, "#0\nstartd1@w\n#ANSWERED#\n#1\n", "")
    out = gateway.Schedd(SSH(), "submit").answers_by_pool(["cm1", "cm2:9620"], "-af Name")
    assert out == {"cm1": "startd1@w\n", "cm2:9620": None}


# --- the stop rule ------------------------------------------------------------------------------------
STEP = {"per_worker": 8, "running": {"worker1": 8}, "answered": {"cm1": True, "cm2": True},
        "missing": {"cm1": [], "cm2": []}, "lost": {"cm1": 0, "cm2": 0}, "available_mb": {"worker1": 200}}


@pytest.mark.parametrize("change,limit,words", [
    ({}, None, None),
    ({"answered": {"cm1": True, "cm2": False}}, "collector", "cm2 did not answer"),
    ({"running": {"worker1": 5}}, "start", "{'worker1': 5} of 8 startds"),
    ({"available_mb": {"worker1": 40}}, "memory", "worker1 40 MB available (below 48 MB)"),
    ({"available_mb": {"worker1": None}}, None, None),
    ({"missing": {"cm1": ["startd8@worker1"], "cm2": []}}, "missing", "cm1 lacks 1 (e.g. startd8@worker1)"),
    ({"lost": {"cm1": 0, "cm2": 3}}, "lost", "updates lost in the hold window: cm2 3"),
    ({"lost": {"cm1": 2}, "missing": {"cm1": ["x"]}}, "missing", None),     # a startd missing comes first
])
def test_the_ramp_stops_at_lost_updates_missing_startds_and_what_the_workers_cannot_hold(change, limit, words):
    step = dict(STEP, **change)
    assert ramp.judge_step(step, 48) == limit
    if words:
        assert words in ramp.describe(limit, step, 48)


def test_the_limit_is_the_last_step_that_held():
    steps = [{"per_worker": 8, "held": 16, "limit": None}, {"per_worker": 16, "held": 32, "limit": None},
             {"per_worker": 32, "held": 50, "limit": "missing"}]
    assert ramp.ramp_limit(steps) == (32, 16, True)
    assert ramp.ramp_limit(steps[:2]) == (32, 16, False)           # the ramp's max: a lower bound
    assert ramp.ramp_limit(steps[2:]) == (0, 0, True)              # the first step already failed
    assert "up to 16 startds per worker held" in ramp.describe("ramp_max", steps[1], 48)


def test_the_wan_goes_between_the_workers_and_every_central_host():
    assert ramp.central_groups(topology.load("default")) == ["cm", "ccb"]
    assert ramp.central_groups(topology.load("small")) == ["cm"]
    assert ramp.expected_startds(topology.load("small"), 2) == {"startd1@worker1.small.testbed",
                                                                "startd2@worker1.small.testbed"}


# --- the ramp against a fake site ---------------------------------------------------------------------
PS = "condor_collecto 40960 00:01:00\ncondor_startd 20480 00:00:10\n"


class FakeCollectors:
    """A worker whose startds the fragment sets, and collectors that list at most `capacity`
    startds and lose one update per ad per reading once more than `lose_above` run."""

    def __init__(self, topo, capacity=1000, lose_above=1000, silent=(), startds_skip=False):
        self.topo, self.capacity, self.lose_above, self.silent = topo, capacity, lose_above, set(silent)
        self.per_worker, self.readings, self.fragments = 2, 0, []
        self.startds_skip, self.start_log = startds_skip, []     # the losses are the startds' own skips
        self.submit_host = "submit"

    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c) for h, c in commands.items()}

    def run(self, host, command, check=False, timeout=None):
        if "70-e5-startds.conf" in command:
            found = [int(n) for n in re.findall(r"STARTD(\d+) = \$\(STARTD\)", command)]
            self.per_worker = max(found) if found else 2
            self.fragments.append(self.per_worker)
            return Result(host, 0, "", "")
        if command.startswith("pgrep -c -x condor_startd"):
            return Result(host, 0, f"{self.per_worker}\n", "")
        if command == parsers.PS_SCRIPT:
            return Result(host, 0, PS, "")
        if command.startswith(parsers.STARTD_RSS_SCRIPT):
            return Result(host, 0, "20480\n" * self.per_worker + "#M\n300\n", "")
        if "condor_status -pool" in command:
            return Result(host, 0, self.status(command), "")
        if command == parsers.STARTD_COLLECTOR_LOG_SCRIPT:
            if self.startds_skip and self.per_worker > self.lose_above:
                for c, ip in (("cm1", "10.0.0.11"), ("cm2", "10.0.0.12")):
                    self.start_log.append(f"12:11:00 Will avoid querying collector {c} <{ip}:9618?alias={c}> for 31s")
                    self.start_log += [f"12:11:18 Skipping update to collector <{ip}:9618?alias={c}> which has "
                                       "timed out in the past"] * self.per_worker
            return Result(host, 0, "\n".join(self.start_log) + "\n", "")
        raise AssertionError(f"unexpected command {command[:80]}")

    def status(self, command):
        out = []
        if "-af UpdatesTotal UpdatesLost" in command:
            self.readings += 1                       # one reading of every pool at once
        for i, (pool, args) in enumerate(re.findall(r"condor_status -pool (\S+) (.*?) 2>/dev/null", command)):
            out.append(f"#{i}")
            if pool in self.silent:
                continue
            held = min(self.per_worker, self.capacity)
            if args == "-af Name":
                out += [f"slot1@startd{k}@worker1.small.testbed" for k in range(1, held + 1)]
                out.append("slot1@dtn.small.testbed")
            elif args == "-af UpdatesTotal UpdatesLost":
                lost = self.readings if self.per_worker > self.lose_above else 0
                out += [f"{10 * self.readings} {lost}"] * held
            elif args == "-collector -l":
                out += COLLECTOR_ADS.replace("cm1.default", f"{pool}.small").splitlines()
            out.append("#ANSWERED#")
        return "\n".join(out) + "\n"


def _collector_ramp(site, steps, **kw):
    exp = e5.ScaleExperiment(site.topo, site, site)
    r = ramp.CollectorRamp(exp, slots=1, join_s=0.05, hold_s=0, poll=0.01, echo=lambda *a: None, **kw)
    return r.run(steps)


def test_the_ramp_stops_where_startds_never_appear_and_the_step_before_is_the_limit():
    site = FakeCollectors(topology.load("small"), capacity=12)
    r = _collector_ramp(site, [4, 8, 16, 32])
    assert site.fragments == [4, 8, 16] and [s["per_worker"] for s in r["steps"]] == [4, 8, 16]
    assert r["limit"] == "missing" and (r["held"], r["per_worker"], r["found"]) == (8, 8, True)
    last = r["steps"][-1]
    assert last["listed"] == {"cm1": 12, "cm2": 12} and len(last["missing"]["cm1"]) == 4
    assert last["memory"]["worker1"] == {"rss_mb": 20.0, "startds": 16, "available_mb": 300}
    assert last["loads"]["cm1"]["UpdatesLost"] == 12 and last["cpu"]["cm1"]["collector"] >= 0
    assert r["series"] and r["series"][-1][1] == 12 and "never appeared" in r["reason"]


def test_the_ramp_stops_at_lost_updates_and_says_when_it_found_no_limit():
    r = _collector_ramp(FakeCollectors(topology.load("small"), lose_above=4), [4, 8, 16])
    assert r["limit"] == "lost" and (r["held"], r["per_worker"]) == (4, 4) and r["steps"][-1]["lost"]["cm1"] > 0
    r = _collector_ramp(FakeCollectors(topology.load("small")), [4, 8])
    assert r["limit"] == "ramp_max" and (r["held"], r["found"]) == (8, False)


def test_updates_the_startds_skipped_after_a_timeout_are_not_the_collectors_losses():
    r = _collector_ramp(FakeCollectors(topology.load("small"), lose_above=4, startds_skip=True), [4, 8, 16])
    assert r["limit"] == "ramp_max" and (r["held"], r["found"]) == (16, False)
    last = r["steps"][-1]
    assert last["updates"]["cm1"]["lost"] == 16 and last["skipped"] == {"cm1": 16, "cm2": 16}   # one gap per ad
    assert last["lost"] == {"cm1": 0, "cm2": 0} and last["timeouts"] == {"cm1": 1, "cm2": 1}
    assert ramp.collector_losses({"cm1": 5, "cm2": 1}, {"cm2": 3}) == {"cm1": 5, "cm2": 0}
    # two tiers: a startd's skip at a child is a gap at the child and at its top collector
    seen = ramp.skips_seen_at({"ccb2:9620": 2, "cm1": 1}, {"ccb1:9620": "cm1", "ccb2:9620": "cm2"})
    assert seen == {"ccb2:9620": 2, "cm1": 1, "cm2": 2}
    assert ramp.collector_losses({"cm2": 1, "ccb2:9620": 0, "cm1": 0}, seen) == {"cm2": 0, "ccb2:9620": 0, "cm1": 0}
    step = dict(STEP, lost={"cm1": 2, "cm2": 0}, skipped={"cm1": 1})
    assert "cm1 2 (besides 1 the startds skipped)" in ramp.describe("lost", step, 48)
    tops = dict(STEP, lost={"cm2": 1}, skipped={"ccb2:9620": 3}, skipped_seen={"ccb2:9620": 3, "cm2": 3})
    assert "cm2 1 (besides 3 the startds skipped)" in ramp.describe("lost", tops, 48)   # its child's skips


def test_with_two_tiers_the_ramp_knows_which_top_collector_each_child_forwards_to():
    site = FakeCollectors(topology.load("default"))
    exp = e5.ScaleExperiment(site.topo, site, site)
    tree = cfg.CollectorTree(exp, placement="ccb")
    assert ramp.CollectorRamp(exp, tree).forwards == {"ccb1:9620": "cm1", "ccb2:9620": "cm2"}
    assert ramp.CollectorRamp(exp).forwards == {}


def test_startd_logs_say_which_collector_a_startd_skipped_and_avoided():
    log = ("11/27/26 12:11:00 Will avoid querying collector cm2 <10.150.0.12:9618?alias=cm2> for 31s if ...\n"
           "11/27/26 12:11:18 Skipping update to collector <10.150.0.12:9618?alias=cm2> which has timed out\n"
           "11/27/26 12:11:19 Skipping update to collector <10.150.0.13:9620?addrs=10.150.0.13-9620&alias="
           "ccb1.default.testbed&noUDP> which has timed out in the past\n"
           "11/27/26 12:11:20 slot1: Changing state: Owner -> Unclaimed\n")
    assert parsers.startd_collector_skips(log, 9618) == {"skipped": {"cm2": 1, "ccb1:9620": 1},
                                                          "timeouts": {"cm2": 1}}
    assert parsers.startd_collector_skips("", 9618) == {"skipped": {}, "timeouts": {}}
    before = {"skipped": {"cm2": 1}, "timeouts": {"cm2": 3}}
    after = {"skipped": {"cm2": 4, "cm1": 2}, "timeouts": {"cm2": 1}}       # cm2's timeouts: a rotated log
    assert parsers.skips_between(before, after) == {"skipped": {"cm2": 3, "cm1": 2}, "timeouts": {"cm2": 0}}


def test_a_collector_that_never_answers_stops_the_ramp():
    r = _collector_ramp(FakeCollectors(topology.load("small"), silent={"cm2"}), [4, 8])
    assert r["limit"] == "collector" and r["held"] == 0 and "cm2 did not answer" in r["reason"]


# --- CCB layouts -------------------------------------------------------------------------------------
def test_ccb_layout_connections_are_the_steady_count_per_port(monkeypatch):
    topo = topology.load("default")
    w1, w2 = (h.site_ip for h in topo.with_role("worker"))
    readings = iter([f"0 0 a:9618 {w1}:1\n0 0 a:9620 {w1}:2\n0 0 a:9620 {w2}:3\n0 0 a:9620 {w2}:4\n",
                     f"0 0 a:9618 {w1}:1\n0 0 a:9620 {w1}:2\n0 0 a:9620 {w2}:3\n",
                     f"0 0 a:9618 {w1}:1\n0 0 a:9620 {w1}:2\n0 0 a:9620 {w2}:3\n"] * 2)

    class SSH:
        def run_many(self, commands, timeout=None):
            return {h: Result(h, 0, next(readings).replace("a:", "10.150.0.11:"), "") for h in commands}

    class Exp:
        pass
    exp = Exp()
    exp.topo, exp.ssh, exp.workers = topo, SSH(), topo.with_role("worker")
    monkeypatch.setattr(ramp.time, "sleep", lambda s: None)
    layouts = ramp.CcbLayouts(exp, 8)
    by_cm = layouts.connections()
    assert by_cm["cm1"] == {9618: 1, 9620: 2}      # the fewest over the readings: 4 was a passing one
    assert ramp.connection_total(by_cm) == 6 and ramp.child_port_share(by_cm) == 4
    assert layouts.tree("on-children").ccb and not layouts.tree("own-hosts").ccb
    assert layouts.tree("own-hosts").children == ["cm1", "cm2"]
    assert layouts.tree("own-hosts").shared_port and not layouts.tree("own-hosts", "per-daemon").shared_port
    with pytest.raises(ValueError):
        layouts.tree("both")
    with pytest.raises(ValueError):
        layouts.tree("own-hosts", "tcp-streams-before")


# --- negotiation with jobs that match ----------------------------------------------------------------
def test_matchable_jobs_are_each_their_own_request_that_every_slot_meets():
    seen = {}

    class Pool:
        def submit(self, description, workdir, files=None, setup=None):
            seen["desc"] = description
            return 1

    exp = e5.ScaleExperiment(topology.load("small"), None, Pool())
    exp.host_clock = lambda cm: 1700000000.0
    exp.next_cycle = lambda cm, n, after, timeout: (cm, {"n": n, "after": after})
    assert exp.matched_cycle("cm1", 8, 60) == ("cm1", {"n": 8, "after": 1700000000.0})
    assert "requirements = (TARGET.Cpus >= 1) && ($(Process) >= 0)\n" in seen["desc"]
    assert '+E5Role = "matchable"' in seen["desc"] and "queue 8" in seen["desc"]


# --- WAN pairs in force ---------------------------------------------------------------------------------
def test_setting_wan_pairs_leaves_only_those_pairs_in_force(monkeypatch):
    site = session.Session(topology.load("default"), ssh=object())
    applied = []
    monkeypatch.setattr(session.wan, "set_links", lambda topo, ssh, state, links, count, skip=(): applied.append(links) or
                        [{"measured_ms": 103.5 + i, "min_ms": 100.5 + i, "samples": 10} for i, _ in enumerate(links)])
    site.set_wan_latency("submit", "cm", 100, echo=lambda *a: None)
    got = site.set_wan_latencies([("worker", "cm"), ("worker", "ccb")], 100, echo=lambda *a: None)
    assert got == [100.5, 101.5] and [(link.a, link.b) for link in applied[-1]] == [("worker", "cm"), ("worker", "ccb")]
    assert site.wan_in_force == {("worker", "cm"): (100.0, 100.5), ("worker", "ccb"): (100.0, 101.5)}


# --- the suite, the paper and the report -----------------------------------------------------------------
def test_a_row_for_every_ramp_point_ccb_layout_and_matchable_rtt():
    text, full = e5.EXPERIMENT.suite_path.read_text(), e5.EXPERIMENT.scales["full"]
    for rtt in full["collector_ramp_rtts"]:
        for tiers in full["collector_ramp_tiers"]:
            assert f"\ncollector-ramp-{rtt}ms-{tiers}tier{'s' if tiers > 1 else ''}\n" in text
    for rtt in full["negotiation_rtts"]:
        assert f"\nnegotiation-matchable-{rtt}ms\n" in text
    for layout, row in (("on-children", "ccb-on-child-collectors"), ("own-hosts", "ccb-on-own-hosts")):
        for config in ("shared-port", "per-daemon"):
            assert f"\n{row}-{config}\n" in text and f"    ccb    layout={layout}    config={config}\n" in text
    assert "\ne5-wan-collector-limit-below-lan\n" in text
    ci = e5.EXPERIMENT.parameters("ci")
    assert (ci["collector_ramp_rtts"], ci["collector_ramp_tiers"]) == ([0], [1])


def rec(name, value, unit="", **params):
    return {"name": name, "value": value, "unit": unit, "params": params}


LIMITS = [rec("e5.collector_limit", 32, "startds", rtt_ms=0, tiers=1, per_worker=16, found=0, limit="ramp_max"),
          rec("e5.collector_limit", 8, "startds", rtt_ms=100, tiers=1, per_worker=4, found=1, limit="lost")]


def test_the_claim_reads_the_wan_limit_over_the_lan_limit_and_is_out_of_reach_with_idle_collectors():
    claim = {c.id: c for c in verdict.load_file(e5.EXPERIMENT.paper_path)}["e5-wan-collector-limit-below-lan"]
    assert claim.value.per_trial(LIMITS) == [0.25] and claim.paper == 0.1
    duty = [rec("e5.collector_ramp_stat", x, "", stat="RecentDaemonCoreDutyCycle", collector="cm1", rtt_ms=100,
                tiers=1) for x in (0.04, 0.06)]
    got = verdict.evaluate(claim, LIMITS + duty)
    assert got.verdict == verdict.OUT_OF_REACH and not got.judged
    busy = [dict(d, value=0.9) for d in duty]
    assert verdict.evaluate(claim, LIMITS + busy).why.startswith("one trial has no interval; its value is on the "
                                                                 "paper's side")


def test_the_report_shows_each_limit_beside_the_papers_and_draws_the_ramps(tmp_path):
    records = LIMITS + [rec("e5.startd_rss", 14.0, "MB", step=8, host="worker1"),
                        rec("e5.ccb_split_connections_ratio", 0.55, "ratio", config="per-daemon")]
    for rtt, listed in ((0, [8, 16, 32]), (100, [8, 14])):
        for step, n in zip((4, 8, 16), listed):
            at = dict(rtt_ms=rtt, tiers=1, step=step, expected=2 * step)
            records.append(rec("e5.collector_ramp_listed", n, "startds", collector="cm1", top=1, **at))
            records.append(rec("e5.collector_ramp_lost", 0 if n == 2 * step else 3, "updates", collector="cm1", **at))
    rows = {figure: (value, paper) for _, figure, value, _, paper in e5_figures.summary(records)}
    assert rows["startds per collector at the limit, 0 ms, 1 tier (ramp_max, ramp_max reached: a lower bound)"] == \
        (32, "2,000 (LAN)")
    assert rows["startds per collector at the limit, 100 ms, 1 tier (lost)"] == (8, "200 (WAN)")
    assert rows["memory per startd daemon (largest mean RSS)"][0] == 14.0
    assert rows["CM connections, CCB on own hosts / on the children (per-daemon)"] == (0.55, "0.5 (halved)")
    series = e5_figures.ramp_series(records)
    assert series[(100.0, 1)]["listed"] == [(8, 8.0), (16, 14.0)] and series[(100.0, 1)]["lost"][-1] == (16, 3.0)
    paths = e5_figures.figures({"run": records}, tmp_path)
    assert [p.name for p in paths] == ["e5-collector-ramps.png"] and paths[0].stat().st_size > 0
    assert e5_figures.figures({"run": LIMITS}, tmp_path) == []


def test_the_run_in_progress_is_not_read_for_its_own_memory_and_what_a_run_asks_for(tmp_path):
    _e5_run(tmp_path, "20260102T000000Z-e5-default", [12.0])
    current = _e5_run(tmp_path, "20260103T000000Z-e5-default", [30.0])
    assert uber.measured_startd_memory(tmp_path).per_startd_mb == 30.0
    assert uber.measured_startd_memory(tmp_path, exclude=current.path).per_startd_mb == 12.0
    quick = e5.EXPERIMENT.parameters("quick")
    assert uber.requested_counts(quick, topology.load("default")) == [("collector_ramp_start", 4),
                                                                         ("ccb_startds", 8)]
    assert uber.requested_counts(dict(quick, collector_ramp_max=16, startds_per_worker=3),
                                    topology.load("small")) == [("startds_per_worker", 3), ("collector_ramp_max", 16)]
    # a first step the memory cannot hold is refused even when the last is "what memory holds"
    assert "collector_ramp_start = 28" in uber.startds_refused(dict(quick, collector_ramp_start=28),
                                                                  topology.load("small"), StartdMemory(32))


def test_the_collector_library_records_every_figure_of_a_step_and_the_ccb_split(monkeypatch):
    from robot.utils import Importer
    from testbed import PROJECT_ROOT
    cls = Importer("test library").import_class_or_module_by_path(
        str(PROJECT_ROOT / "robot" / "libraries" / "CollectorLibrary.py"))
    import _experiment_library

    class FakeTb:
        records = []

        def experiment_parameters(self, name):
            return e5.EXPERIMENT.parameters("quick")

        def record_metric(self, name, value, unit="", **params):
            self.records.append(rec(name, value, unit, **params))

        def recorded_values(self, name, **params):
            return [r["value"] for r in runs.matching(self.records, name, **params)]

    fake = FakeTb()
    monkeypatch.setattr(_experiment_library, "BuiltIn", lambda: type("B", (), {
        "get_library_instance": lambda self, name: fake})())
    lib = cls("quick")
    step = _collector_ramp(FakeCollectors(topology.load("small"), capacity=6), [4, 8])["steps"][-1]
    lib._record_step(step, 1, {"rtt_ms": 100, "tiers": 1}, {"cm1", "cm2"})
    names = {r["name"] for r in fake.records}
    assert names == {"e5.collector_ramp_join_seconds", "e5.collector_ramp_listed", "e5.collector_ramp_missing",
                     "e5.collector_ramp_updates", "e5.collector_ramp_lost", "e5.collector_ramp_stat",
                     "e5.collector_ramp_cpu", "e5.startd_rss", "e5.guest_mem_available", "e5.collector_ramp_skipped",
                     "e5.collector_ramp_timeouts"}
    listed = runs.matching(fake.records, "e5.collector_ramp_listed", collector="cm1")[0]
    assert listed["value"] == 6 and listed["params"] == {"collector": "cm1", "top": 1, "expected": 8, "rtt_ms": 100,
                                                         "tiers": 1, "step": 8}
    assert runs.last_value(fake.records, "e5.collector_ramp_missing", collector="cm2") == 2
    assert runs.last_value(fake.records, "e5.collector_ramp_stat", stat="UpdatesLostRatio") == 0.0024
    assert runs.matching(fake.records, "e5.collector_ramp_join_seconds")[0]["params"]["phase"] == "started"
    fake.records.clear()
    for layout, n in (("on-children", 40), ("own-hosts", 22)):
        fake.record_metric("e5.central_connections", n, "connections", port="all", layout=layout, config="per-daemon")
    fake.record_metric("e5.central_connections", 30, "connections", port="all", layout="own-hosts",
                       config="shared-port")
    assert lib.record_the_ccb_split() == {"per-daemon": 0.55}
    assert runs.last_value(fake.records, "e5.ccb_split_connections_ratio", config="per-daemon") == 0.55
