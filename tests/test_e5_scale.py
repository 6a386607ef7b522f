"""E5 (seed 004) logic with fake command outputs: ramp steps and limits, the pool
observation, ps, ClassAds (collector update statistics, negotiator cycles), ss,
the paper's stream model, restarted jobs, CCB choice, extra startds, and the ramp
itself against a fake site."""
import dataclasses
import subprocess

import pytest

from testbed.experiments.e5 import config as cfg, failover as fo, e5_scale as e5
from testbed.model import profiles, topology
from testbed.experiments.e5 import parsers
from testbed.services import condor, gateway
from testbed.remote.ssh import Result

ADDR = ("<10.160.0.13:9618?CCBID=10.160.0.11:9618%3faddrs%3d10.160.0.11-9618%26alias%3dcm1.small.testbed"
        "%26noUDP%26sock%3dcollector#1%2010.160.0.12:9618%3faddrs%3d10.160.0.12-9618%26sock%3dcollector#1"
        "&PrivNet=worker1.workers.small.testbed&addrs=10.160.0.13-9618&noUDP&sock=startd1_887_fc98>")
ADDR_ONE_CCB = ("<10.160.0.13:9618?CCBID=10.160.0.11:9618%3faddrs%3d10.160.0.11-9618%26sock%3dcollector#1"
                "&addrs=10.160.0.13-9618&noUDP&sock=startd2_887_fc98>")


# --- steps and limits ------------------------------------------------------------------
@pytest.mark.parametrize("start,maximum,slots,steps,capped", [
    (4, 16, None, [4, 8, 16], False),
    (4, 16, 16, [4, 8, 16], True),          # ci on `small`: the last step fills every slot
    (4, 16, 100, [4, 8, 16], False),
    (16, 512, 200, [16, 32, 64, 128, 200], True),
    (100, 1000, None, [100, 200, 400, 800, 1000], False),
    (16, 16, None, [16], False),
    (16, 64, 10, [10], True),
])
def test_ramp_steps_double_and_stop_at_the_slots(start, maximum, slots, steps, capped):
    assert e5.ramp_steps(start, maximum, slots) == (steps, capped)


def test_ramp_steps_refuse_a_backwards_range():
    with pytest.raises(ValueError):
        e5.ramp_steps(8, 4)
    with pytest.raises(ValueError):
        e5.ramp_steps(0, 4)


OK = {"schedd_ok": True, "collector_ok": True, "held": 0, "running": 8, "slots": 16,
      "mem_free_mb": {"submit": 300, "worker1": 200}}


@pytest.mark.parametrize("change,elapsed,limit", [
    ({}, 10, None),                                       # reached
    ({"running": 5}, 10, None),                           # still climbing
    ({"running": 5}, 301, "jobs"),                        # too slow
    ({"schedd_ok": False}, 10, "schedd"),
    ({"collector_ok": False}, 10, "collector"),
    ({"held": 2}, 10, "held"),
    ({"mem_free_mb": {"submit": 300, "worker1": 40}}, 10, "memory"),
    ({"mem_free_mb": {"submit": None, "worker1": 200}}, 10, None),  # unanswered is not low
])
def test_first_limit(change, elapsed, limit):
    obs = dict(OK, **change)
    assert e5.first_limit(8, obs, elapsed, 300, 48) == limit
    if limit:
        assert e5.describe_limit(limit, 8, obs, 300, 48)


def test_describe_limit_names_the_host_and_the_numbers():
    obs = dict(OK, mem_free_mb={"worker1": 40, "submit": 300}, running=5)
    assert "worker1 40 MB" in e5.describe_limit("memory", 8, obs, 300, 48)
    assert "5 of 8 jobs running after 300 s" == e5.describe_limit("jobs", 8, obs, 300, 48)
    assert "(16)" in e5.describe_limit("slots", 16, OK, 300, 48)


# --- observation, ps, ClassAds ------------------------------------------------------------
OBS = ("#Q\n2\n2\n2\n1\n5\n#QOK\n#S\nWarning: something on stderr\nslot1@startd1@worker1.small.testbed Claimed\n"
       "slot2@startd1@worker1.small.testbed Unclaimed\nslot1@startd2@worker1.small.testbed Claimed\n"
       "slot1@dtn.small.testbed Unclaimed\n#SOK\n")


def test_parse_observation_counts_jobs_slots_and_startds():
    obs = parsers.parse_observation(OBS)
    assert obs["schedd_ok"] and obs["collector_ok"]
    assert (obs["running"], obs["idle"], obs["held"]) == (3, 1, 1)
    assert (obs["slots"], obs["claimed"], obs["startds"]) == (4, 2, 3)


def test_parse_observation_sees_a_schedd_that_did_not_answer():
    text = "#Q\nError: communication error\nSCHEDD:2:Failed to connect\n#S\nslot1@w Claimed\n#SOK\n"
    obs = parsers.parse_observation(text)
    assert not obs["schedd_ok"] and obs["running"] == 0 and "Failed to connect" in obs["schedd_error"]
    assert obs["collector_ok"] and obs["slots"] == 1
    assert e5.first_limit(1, dict(obs, mem_free_mb={}), 0, 10, 48) == "schedd"


def test_startd_of_slot():
    assert parsers.startd_of_slot("slot3@startd2@worker1.small.testbed") == "startd2@worker1.small.testbed"
    assert parsers.startd_of_slot("slot1_4@worker1") == "worker1"
    assert parsers.startd_of_slot("worker1.small.testbed") == "worker1.small.testbed"


PS = """condor_master      5120 00:00:03
condor_shared_p    3000 00:00:01
condor_startd     32768 00:01:10
condor_startd     30720 00:00:50
condor_starter     2048 00:00:00
condor_starter     2048 1-00:00:01
sshd               4000 00:00:00
condor_collecto   40960 01:00:00
"""


def test_parse_ps_sums_rss_and_cpu_per_daemon():
    d = parsers.parse_ps(PS)
    assert d["startd"] == {"count": 2, "rss_mb": pytest.approx(62.0), "cpu_s": 120}
    assert d["starter"]["count"] == 2 and d["starter"]["cpu_s"] == 86401
    assert d["collector"]["cpu_s"] == 3600 and "sshd" not in d
    assert parsers.parse_cpu_time("03:07") == 187


COLLECTORS = """MyType = "Collector"
Machine = "cm1.small.testbed"
Name = "My Pool - cm1.small.testbed@cm1.small.testbed"
UpdatesTotal = 1200
UpdatesLost = 3
UpdatesInitial = 40
UpdatesTotal_Machine = 900
UpdatesLost_Machine = 3
UpdatesInitial_Machine = 32
UpdatesTotal_DaemonMaster = 100
UpdatesLost_DaemonMaster = 0
UpdatesLostRatio = 0.0025
StartdAds = 2
CondorVersion = "$CondorVersion: 23.9.6 2024-08-08 $"

MyType = "Collector"
Machine = "cm2.small.testbed"
UpdatesTotal = 1100
UpdatesLost = 0
"""


def test_collector_update_statistics_per_ad_type():
    ads = parsers.parse_long_ads(COLLECTORS)
    assert len(ads) == 2 and ads[0]["CondorVersion"].startswith("$CondorVersion")
    stats = parsers.update_stats(ads[0])
    assert stats["all"] == {"total": 1200, "lost": 3, "initial": 40}
    assert stats["Machine"] == {"total": 900, "lost": 3, "initial": 32}
    assert stats["DaemonMaster"]["lost"] == 0 and "LostRatio" not in str(stats)
    assert parsers.collector_name(ads[1]) == "cm2" and parsers.update_stats(ads[1])["all"]["total"] == 1100


NEGOTIATORS = """MyType = "Negotiator"
Machine = "cm2.small.testbed"
LastNegotiationCycleTime0 = 1700000000
LastNegotiationCycleDuration0 = 3

MyType = "Negotiator"
Machine = "cm1.small.testbed"
LastNegotiationCycleTime0 = 1700000500
LastNegotiationCycleDuration0 = 12
LastNegotiationCycleNumJobsConsidered0 = 50
LastNegotiationCycleNumIdleJobs0 = 50
LastNegotiationCycleMatches0 = 0
LastNegotiationCycleRejections0 = 50
LastNegotiationCycleDuration1 = 2
"""


def test_the_latest_negotiation_cycle_of_the_live_negotiator():
    ad = parsers.latest_negotiator(parsers.parse_long_ads(NEGOTIATORS))
    c = parsers.negotiation_cycle(ad)
    assert c["duration"] == 12 and c["considered"] == 50 and c["rejections"] == 50 and c["matches"] == 0
    assert parsers.negotiation_cycle(ad, 1)["duration"] == 2
    assert parsers.cycle_saw_requests(c, 1700000400, 50) and not parsers.cycle_saw_requests(c, 1700000500, 50)
    assert not parsers.cycle_saw_requests(c, 0, 51)
    assert parsers.latest_negotiator([{"Machine": "x"}]) is None


# --- TCP streams --------------------------------------------------------------------------
SS = """0 0 10.160.0.13:40001 10.160.0.11:9618 users:(("condor_startd",pid=900,fd=7))
0 0 10.160.0.13:40002 10.160.0.12:9618 users:(("condor_startd",pid=900,fd=8))
0 0 10.160.0.13:40003 10.160.0.11:9618 users:(("condor_shared_p",pid=880,fd=5))
0 0 10.160.0.13:40004 10.160.0.10:9618 users:(("condor_starter",pid=990,fd=3))
0 0 10.160.0.13:22 192.168.160.1:51234 users:(("sshd",pid=700,fd=4))
0 0 127.0.0.1:40010 127.0.0.1:9618 users:(("condor_startd",pid=900,fd=9))
0 0 [::ffff:10.160.0.13]:40011 [::ffff:10.160.0.12]:9618 users:(("condor_master",pid=870,fd=6))
0 0 10.160.0.13:40012 10.9.9.9:9618
"""


def test_parse_ss_counts_streams_to_other_testbed_hosts_only():
    topo = topology.load("small")
    hosts_by_ip = {h.site_ip: h.name for h in topo.hosts.values()}
    w = topo.hosts["worker1"]
    streams = parsers.parse_ss(SS.replace("10.160.0.13", w.site_ip), w.site_ip, hosts_by_ip)
    assert len(streams) == 5  # not ssh, not loopback, not a peer outside the testbed
    s = e5.summarise_streams(streams)
    assert s["by_process"] == {"startd": 2, "shared_port": 1, "starter": 1, "master": 1}
    assert sum(s["by_peer"].values()) == 5


def test_stream_model_gives_the_papers_11_and_5():
    assert e5.stream_model(1, 2, 2, 1, shared_port=False, master_tcp=True) == 11
    assert e5.stream_model(1, 2, 2, 1, shared_port=True, master_tcp=False) == 5
    # `small`: two startds on the worker
    assert e5.stream_model(2, 2, 2, 1, False, True) > e5.stream_model(2, 2, 2, 1, True, False)


def test_shared_port_is_seen_in_the_address():
    assert parsers.address_uses_shared_port(ADDR)
    assert not parsers.address_uses_shared_port("<10.160.0.13:40111?CCBID=10.160.0.11:9618%3faddrs>")


def test_the_streams_profiles_differ_from_default_on_the_workers_only():
    before, after = profiles.load("tcp-streams-before"), profiles.load("tcp-streams-after")
    assert before.for_host(["worker"], "condor")["USE_SHARED_PORT"] == "False"
    assert after.for_host(["worker"], "condor")["MASTER.UPDATE_COLLECTOR_WITH_TCP"] == "False"
    default = profiles.load("default")
    for p in (before, after):
        assert {row[0] for row in profiles.diff(default, p)} == {"worker"}


# --- failover -------------------------------------------------------------------------------
def test_restarted_jobs_finds_stopped_vanished_and_restarted_ones():
    before = {"1.0": (2, 1, 1), "1.1": (2, 1, 1), "1.2": (2, 1, 1), "1.3": (2, 1, 1), "1.4": (1, 0, 0)}
    after = {"1.0": (2, 1, 1), "1.1": (2, 2, 2), "1.2": (1, 1, 1), "1.4": (2, 1, 1)}
    bad = dict(fo.restarted_jobs(before, after))
    assert set(bad) == {"1.1", "1.2", "1.3"}
    assert "NumJobStarts 1->2" in bad["1.1"] and bad["1.2"] == "is idle" and bad["1.3"] == "left the queue"
    assert fo.restarted_jobs(before, before) == []


def test_job_starts_from_ads():
    ads = [{"ClusterId": 5, "ProcId": 0, "JobStatus": 2, "NumJobStarts": 1, "NumShadowStarts": 1},
           {"ClusterId": 5, "ProcId": 1, "JobStatus": 1}]
    assert fo.job_starts(ads) == {"5.0": (2, 1, 1), "5.1": (1, 0, 0)}


def test_pick_ccb_is_never_the_active_cm():
    small, default = topology.load("small"), topology.load("default")
    assert fo.pick_ccb(small, "cm1") == "cm2" and fo.pick_ccb(small, "cm2") == "cm1"
    assert fo.pick_ccb(default, "cm1") == "ccb1"


def test_startds_registered_with_a_ccb():
    lines = [f"slot1@startd1@worker1.small.testbed {ADDR}", f"slot2@startd1@worker1.small.testbed {ADDR}",
             f"slot1@startd2@worker1.small.testbed {ADDR_ONE_CCB}"]
    registered, every = parsers.startds_registered_with(lines, "10.160.0.12")
    assert every == {"startd1@worker1.small.testbed", "startd2@worker1.small.testbed"}
    assert registered == {"startd1@worker1.small.testbed"}
    assert parsers.startds_registered_with(lines, "10.160.0.11")[0] == every


# --- extra startds ---------------------------------------------------------------------------
def test_extra_startds_follow_the_rendered_worker_config():
    w = topology.load("small").hosts["worker1"]
    assert cfg.extra_startds_conf(w, 0) == "" and cfg.extra_startds_conf(w, w.startds) == ""
    text = cfg.extra_startds_conf(w, 4)
    assert "STARTD3 = $(STARTD)" in text and "STARTD4.STARTD_NAME = startd4" in text
    assert "STARTD2 " not in text and "DC_DAEMON_LIST = + STARTD4" in text
    assert cfg.E5_STARTDS_CONF in cfg.startds_script(text) and "condor_reconfig" in cfg.startds_script(text)
    assert cfg.startds_script("").startswith("if [ -e ")
    assert cfg.extra_startd_names(w, 4) == ["startd3", "startd4"] and cfg.extra_startd_names(w, 2) == []


def test_added_startds_get_their_execute_directories_before_the_reconfig(tmp_path, monkeypatch):
    """Seen on `default` with 4 startds per worker: without $(EXECUTE)/startd3 the startd
    exits with status 4 at every start and its slots never reach the collector."""
    bin_dir, conf = tmp_path / "bin", tmp_path / "70-e5.conf"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    for name, body in {"condor_config_val": f"echo {tmp_path}/execute",
                       "condor_reconfig": f"echo reconfig >> {log}",
                       "install": f'echo "install $*" >> {log}'}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(cfg, "E5_STARTDS_CONF", str(conf))
    w = topology.load("small").hosts["worker1"]
    script = cfg.startds_script(cfg.extra_startds_conf(w, 4), cfg.extra_startd_names(w, 4))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert subprocess.run(["bash", "-c", script], env=env).returncode == 0
    calls = log.read_text().splitlines()
    assert calls == [f"install -d -m 0755 -o condor -g condor {tmp_path}/execute/startd3",
                     f"install -d -m 0755 -o condor -g condor {tmp_path}/execute/startd4", "reconfig"]
    assert "STARTD4.EXECUTE" in conf.read_text()


# --- the ramp against a fake site -------------------------------------------------------------
class FakeSite:
    """A pool whose jobs start at once on free slots; each running job costs `mb_per_job`
    of the workers' memory."""

    def __init__(self, topo, slots=16, free_mb=400, mb_per_job=0, stall_after=None):
        self.topo, self.slots, self.free_mb, self.mb_per_job = topo, slots, free_mb, mb_per_job
        self.stall_after, self.jobs, self.submit_host = stall_after, 0, "submit"
        self.submits = []

    # Pool
    def submit(self, description, workdir, files=None, setup=None):
        n = int(description.strip().splitlines()[-1].split()[1])
        assert '+E5Role = "ramp"' in description
        self.submits.append(n)
        self.jobs += n
        return len(self.submits)

    def running(self):
        cap = self.slots if self.stall_after is None else min(self.slots, self.stall_after)
        return min(self.jobs, cap)

    # SSH
    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c) for h, c in commands.items()}

    def run(self, host, command, check=False, timeout=None):
        if command == parsers.PS_SCRIPT:
            return Result(host, 0, PS, "")
        if command.startswith("condor_status -collector"):
            return Result(host, 0, COLLECTORS, "")
        if "UpdatesTotal UpdatesLost" in command:
            return Result(host, 0, "#0\n10 0\n12 1\n#1\n9 0\nundefined undefined\n", "")
        mem = self.free_mb - (self.mb_per_job * self.running() if host == "worker1" else 0)
        if "#Q" in command:
            r = self.running()
            q = "\n".join(["2"] * r + ["1"] * (self.jobs - r))
            s = "\n".join(f"slot{i % 8 + 1}@startd{i // 8 + 1}@worker1.small.testbed "
                          f"{'Claimed' if i < r else 'Unclaimed'}" for i in range(self.slots))
            return Result(host, 0, f"#Q\n{q}\n#QOK\n#S\n{s}\n#SOK\n#M\n{mem}\n", "")
        if command == e5.MEM_AVAILABLE_CMD:
            return Result(host, 0, f"{mem}\n", "")
        raise AssertionError(f"unexpected command {command[:60]}")


def _ramp(site, **kw):
    exp = e5.ScaleExperiment(site.topo, site, site)
    args = dict(start=4, maximum=16, timeout=0.05, min_free_mb=48, poll=0.01, echo=lambda *a: None)
    args.update(kw)
    return exp.ramp(**args)


def test_the_ramp_fills_every_slot_and_names_the_slots_as_its_limit():
    site = FakeSite(topology.load("small"))
    r = _ramp(site)
    assert [s["step"] for s in r["steps"]] == [4, 8, 16] and site.submits == [4, 4, 8]
    assert r["limit"] == "slots" and r["max_running"] == 16
    s = r["steps"][-1]
    assert s["startds"] == 2 and s["slots"] == 16 and s["collectors"]["cm1"]["Machine"]["lost"] == 3
    assert s["collectors"]["cm1"]["slot_ads"]["total"] == 22 and s["collectors"]["cm1"]["slot_ads"]["lost"] == 1
    assert s["collectors"]["cm2"]["slot_ads"] == {"total": 9, "lost": 0, "initial": 1, "ad_time": 0}
    assert s["daemons"]["worker1"]["startd"]["count"] == 2 and s["mem_free_mb"]["worker1"] == 400
    assert r["series"] and all(len(p) == 3 for p in r["series"])


def test_the_ramp_stops_at_guest_memory():
    site = FakeSite(topology.load("small"), mb_per_job=25)  # 0 MB left at 16 jobs
    r = _ramp(site)
    assert r["limit"] == "memory" and "worker1" in r["reason"]
    assert [s["step"] for s in r["steps"]] == [4, 8, 16] and r["max_running"] == 16


def test_the_ramp_stops_when_jobs_do_not_reach_the_step():
    site = FakeSite(topology.load("small"), stall_after=10)
    r = _ramp(site)
    assert r["limit"] == "jobs" and r["max_running"] == 10 and "10 of 16" in r["reason"]


def test_the_ramp_says_when_ramp_max_came_first():
    site = FakeSite(topology.load("small"), slots=64)
    r = _ramp(site, maximum=8)
    assert r["limit"] == "ramp_max" and [s["step"] for s in r["steps"]] == [4, 8]


# --- declaration -------------------------------------------------------------------------------
def test_scales_and_rows():
    exp = e5.EXPERIMENT
    assert exp.parameters("ci")["ramp_max"] == 8 and exp.parameters("ci")["negotiation_requests"] == 50
    assert exp.parameters("quick")["negotiation_requests"] == 200
    assert exp.parameters("full")["negotiation_requests"] == 1000
    assert exp.parameters("ci", {"STARTDS_PER_WORKER": "4"})["startds_per_worker"] == 4
    text = exp.suite_path.read_text()
    for rtt in exp.scales["full"]["negotiation_rtts"]:
        assert f"\nnegotiation-{rtt}ms\n" in text
    for prof in exp.row_profiles:
        assert f"\nramp-{prof}\n" in text
        for shape in ("flat", "tree"):
            assert f"\ncollectors-{shape}-{prof}\n" in text
        profiles.load(prof)
    assert exp.parameters("ci")["tree_settle_s"] == 0 and exp.parameters("quick")["tree_settle_s"] > 0


# --- two-tier collectors ------------------------------------------------------------------------
def test_child_collectors_go_on_dedicated_ccb_hosts_else_on_the_cms():
    assert cfg.child_collector_hosts(topology.load("default")) == ["ccb1", "ccb2"]
    assert cfg.child_collector_hosts(topology.load("small")) == ["cm1", "cm2"]


def test_child_collector_and_worker_fragments():
    topo = topology.load("default")
    text = cfg.child_collector_conf(topo, "ccb1")
    assert "COLLECTOR2_ARGS = -f -p 9620\n" in text
    assert "COLLECTOR2.CONDOR_VIEW_HOST = cm1:9618\n" in text  # one top per child
    assert "COLLECTOR2.CONDOR_VIEW_HOST = cm2:9618\n" in cfg.child_collector_conf(topo, "ccb2")
    assert "COLLECTOR2.USE_SHARED_PORT = False" in text and "COLLECTOR2.ENABLE_CCB_SERVER = False" in text
    conf = cfg.tree_worker_conf(topo, topo.with_role("worker")[0].name, 2)
    # every daemon updates one child per CM (ccb1 -> cm1, ccb2 -> cm2), so each CM hears it once
    assert "COLLECTOR_HOST = ccb1:9620, ccb2:9620\n" in conf
    assert "STARTD1.COLLECTOR_HOST = ccb1:9620, ccb2:9620\n" in conf
    small = topology.load("small")
    assert "COLLECTOR2.CONDOR_VIEW_HOST = cm2:9618\n" in cfg.child_collector_conf(small, "cm2")
    script = gateway.ConfigFragment(None, "w", cfg.E5_TREE_WORKER_CONF).script("X = 1\n", restart_had=True)
    assert "condor_reconfig" in script and "condor_restart -subsystem had" in script
    assert gateway.ConfigFragment(None, "w", cfg.E5_TREE_WORKER_CONF).script("").startswith(f"if [ -e {cfg.E5_TREE_WORKER_CONF} ]")


def test_fresh_slots_counts_startds_started_after_the_restart():
    lines = ["slot1@startd1@w 1700000100", "slot2@startd1@w 1700000100", "slot1@startd2@w 1699999000",
             "slot3@startd1@w undefined"]
    assert parsers.fresh_slots(lines, 1700000000) == 2


def test_count_inbound_sees_the_workers_connected_to_a_ccb():
    text = ("0 0 10.160.0.12:9618 10.160.0.13:40001\n0 0 10.160.0.12:9618 10.160.0.13:40002\n"
            "0 0 10.160.0.12:9618 10.160.0.10:40003\n0 0 10.160.0.12:40100 10.160.0.13:9618\n"
            "0 0 [::ffff:10.160.0.12]:9618 [::ffff:10.160.0.13]:40004\n")
    assert parsers.count_inbound(text, 9618, {"10.160.0.13"}) == 3
    assert parsers.count_inbound(text, 9618, set()) == 0


def test_sum_ad_updates_over_the_slot_ads():
    assert parsers.sum_ad_updates("10 0\n12 1\nundefined undefined\n\n") == {"total": 22, "lost": 1, "ads": 2}


def test_the_paper_file_matches_what_the_suite_records():
    from testbed.results import compare
    figures = compare.load_paper(e5.EXPERIMENT.paper_path)
    at = {"requests": 1000, "considered": 1000}
    assert compare.paper_match(figures, "e5.negotiation_cycle", dict(at, protocol="per-request", rtt_ms=100))["value"] == 1153
    assert compare.paper_match(figures, "e5.negotiation_cycle", dict(at, protocol="per-request", rtt_ms=0))["value"] == 30
    assert compare.paper_match(figures, "e5.negotiation_cycle", dict(at, protocol="batched", rtt_ms=100))["value"] == 346
    assert compare.paper_match(figures, "e5.negotiation_cycle", dict(at, protocol="batched", rtt_ms=0)) is None
    assert compare.paper_match(figures, "e5.negotiation_cycle", dict(at, rtt_ms=100)) is None  # no protocol: no figure
    for metric, per_request, batched in (("e5.negotiation_wan_over_lan", 38.4, 11.5),
                                         ("e5.negotiation_round_trips_per_request", 11.2, 3.2)):
        assert compare.paper_match(figures, metric, {"protocol": "per-request", "requests": 1000})["value"] == per_request
        assert compare.paper_match(figures, metric, {"protocol": "batched", "requests": 1000})["value"] == batched
    assert compare.paper_match(figures, "e5.tcp_streams", {"config": "after", "startds": 2})["value"] == 5
    assert {f["metric"] for f in figures} <= set(e5.EXPERIMENT.metrics)


def test_cpu_percent_between_samples():
    before = {"worker1": {"startd": {"cpu_s": 10}}}
    after = {"worker1": {"startd": {"cpu_s": 15}, "shadow": {"cpu_s": 2}}, "submit": {"schedd": {"cpu_s": 1}}}
    pct = parsers.cpu_percent(before, after, 10.0)
    assert pct["worker1"]["startd"] == pytest.approx(50.0) and pct["worker1"]["shadow"] == pytest.approx(20.0)
    assert pct["submit"]["schedd"] == pytest.approx(10.0)
    assert parsers.cpu_percent(after, before, 10.0)["worker1"]["startd"] == 0.0  # a restarted daemon


class ScriptedSSH:
    """Answers commands by the first matching substring; records what ran where."""

    def __init__(self, answers):
        self.answers, self.ran = answers, []

    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c) for h, c in commands.items()}

    def run(self, host, command, check=False, timeout=None):
        self.ran.append((host, command))
        for key, out in self.answers:
            if key in command and (not isinstance(out, dict) or host in out):
                text = out[host] if isinstance(out, dict) else out
                return Result(host, 0, text, "")
        return Result(host, 0, "", "")


class NoPool:
    submit_host = "submit"


def test_tree_update_stats_read_every_collector_and_running_child():
    topo = topology.load("small")
    ssh = ScriptedSSH([("sport = :9620", {"cm1": "1\n", "cm2": "0\n"}),
                       ("UpdatesTotal UpdatesLost", "#0\n10 1\n#1\n20 0\n#2\n7 0\n7 2\n")])
    tree = cfg.CollectorTree(e5.ScaleExperiment(topo, ssh, NoPool()))
    stats = tree.update_stats()
    assert stats == {"cm1": {"total": 10, "lost": 1, "ads": 1}, "cm2": {"total": 20, "lost": 0, "ads": 1},
                     "cm1:9620": {"total": 14, "lost": 2, "ads": 2}}
    assert any("-pool cm1:9620" in c for _h, c in ssh.ran)


def test_reregistration_waits_for_addresses_and_connections():
    topo = topology.load("small")
    w = topo.hosts["worker1"].site_ip
    cm2 = topo.hosts["cm2"].site_ip
    addr = ADDR.replace("10.160.0.12", cm2)
    ss = "".join(f"0 0 {cm2}:9618 {w}:4000{i}\n" for i in range(4))
    ssh = ScriptedSSH([("-af Name MyAddress", f"slot1@startd1@worker1.small.testbed {addr}\n"),
                       ("ss -Htn state established", ss)])
    exp = e5.ScaleExperiment(topo, ssh, NoPool())
    assert exp.worker_connections("cm2") == 4
    assert exp.wait_reregistered("cm2", 4, timeout=1, poll=0.01) < 1
    with pytest.raises(e5.RemoteError, match="hold 4 of 5 connections"):
        exp.wait_reregistered("cm2", 5, timeout=0.05, poll=0.01)


def test_a_failover_probe_and_the_new_job_wait():
    topo = topology.load("small")
    ssh = ScriptedSSH([("#Q", "#Q\n2\n#QOK\n#S\nslot1@startd1@worker1 Claimed\n#SOK\n#M\n300\n"),
                       ("MemAvailable", "300\n")])
    exp = e5.ScaleExperiment(topo, ssh, NoPool())
    assert exp.wait_running("probe", 1, timeout=1, poll=0.01) < 1
    with pytest.raises(e5.RemoteError, match="1 of 2 probe jobs running") as err:
        exp.wait_running("probe", 2, timeout=0.05, poll=0.01)
    # the failed wait carries the schedd's view of the probe (the diagnosis ran on the submit host)
    assert "why the probe jobs do not run" in str(err.value)
    assert any("-better-analyze" in command and host == "submit" for host, command in ssh.ran)


def test_why_a_probe_does_not_run_asks_the_schedd_and_its_log():
    topo = topology.load("small")
    ssh = ScriptedSSH([("-better-analyze", "The Requirements expression for job 12.000 reduces to ...\n"
                                           "--- /var/log/condor/SchedLog\nFailed to send CCB_REQUEST to collector\n")])
    text = e5.ScaleExperiment(topo, ssh, NoPool()).why_not_running("probe")
    assert "Failed to send CCB_REQUEST" in text and "reduces to" in text
    host, command = ssh.ran[0]
    assert host == "submit" and "E5Role =?= \"probe\"" in command and "/var/log/condor/SchedLog" in command


def test_collector_wait_counts_startds_not_slots():
    topo = topology.load("small")
    slots = "".join(f"slot{i}@startd1@worker1.small.testbed\n" for i in range(1, 5)) + \
        "slot1@startd2@worker1.small.testbed\n"
    ssh = ScriptedSSH([("condor_status -pool cm2 -af Name", slots)])
    exp = e5.ScaleExperiment(topo, ssh, NoPool())
    assert exp.wait_collector_sees_startds("cm2", 2, timeout=1, poll=0.01) < 1
    with pytest.raises(e5.RemoteError, match="collector on cm2 sees 2 of 3 startds"):
        exp.wait_collector_sees_startds("cm2", 3, timeout=0.05, poll=0.01)


def test_a_held_probe_stops_the_wait_at_once():
    topo = topology.load("small")
    exp = e5.ScaleExperiment(topo, ScriptedSSH([]), NoPool())
    exp.observe = lambda role: {"running": 0, "held": 1, "idle": 0, "slots": 4, "claimed": 0}
    exp.why_not_running = lambda role: "Hold reason: no such file"
    with pytest.raises(e5.RemoteError, match="1 probe job\\(s\\) held") as err:
        exp.wait_running("probe", 1, timeout=60, poll=30)
    assert "Hold reason: no such file" in str(err.value)


def test_a_diagnosis_that_fails_does_not_hide_the_wait_s_error():
    topo = topology.load("small")
    exp = e5.ScaleExperiment(topo, ScriptedSSH([]), NoPool())
    exp.observe = lambda role: {"running": 0, "held": 0, "idle": 1, "slots": 4, "claimed": 4}

    def unreachable(role):
        raise e5.RemoteError("submit: Connection timed out")
    exp.why_not_running = unreachable
    with pytest.raises(e5.RemoteError, match="0 of 1 probe jobs running") as err:
        exp.wait_running("probe", 1, timeout=0.05, poll=0.01)
    assert "(not available: submit: Connection timed out)" in str(err.value)


def test_negotiator_ad_asks_the_negotiator_first_then_the_collector():
    topo = topology.load("small")
    ssh = ScriptedSSH([("-direct cm1.small.testbed", ""), ("condor_status -negotiator -l", NEGOTIATORS)])
    ad = e5.ScaleExperiment(topo, ssh, NoPool()).negotiator_ad("cm1")
    assert ad["LastNegotiationCycleDuration0"] == 12 and len(ssh.ran) == 2
    ssh = ScriptedSSH([("-direct cm1.small.testbed", NEGOTIATORS)])
    assert e5.ScaleExperiment(topo, ssh, NoPool()).negotiator_ad("cm1") and len(ssh.ran) == 1


def test_profiles_the_suite_has_rows_for():
    from testbed.harness import runner
    from testbed.model.errors import ConfigError
    runner.check("e5", "ci", ["default", "collector-tuned"], {"startds_per_worker": "4"})
    with pytest.raises(ConfigError, match="has rows for profiles default, collector-tuned only"):
        runner.check("e5", "ci", ["wan-tuned"], {})
    with pytest.raises(ConfigError, match="negotiation_rtts"):
        runner.check("e5", "ci", ["default"], {"negotiation_rtts": "0,50"})


def test_the_failover_baseline_waits_until_every_running_job_counts_its_start():
    from testbed.experiments.e5 import e5_scale as scale
    assert not fo.baseline_ready({"9.0": (2, 0, 1), "9.1": (2, 1, 1)})
    assert fo.baseline_ready({"9.0": (2, 1, 1), "9.1": (1, 0, 0)})  # idle jobs have not started
    assert not fo.baseline_ready({})
    # seen on `default` with 199 sleepers: running, NumJobStarts 0, no shadow counted yet
    assert not fo.baseline_ready({"14.117": (2, 0, 0), "14.1": (2, 1, 1)})
    assert not fo.baseline_ready({"14.101": (2, 0, 1)})
    assert fo.not_yet_started({"14.117": (2, 0, 0), "14.101": (2, 0, 1), "14.1": (2, 1, 1),
                                  "14.2": (1, 0, 0)}) == ["14.101", "14.117"]


def test_the_failover_baseline_is_taken_once_ready_and_refused_when_never_ready():
    from testbed.experiments.e5 import e5_scale as scale
    topo = topology.load("small")
    exp = scale.ScaleExperiment(topo, ScriptedSSH([]), NoPool())
    ads = iter([[{"ClusterId": 14, "ProcId": 0, "JobStatus": 2}],
                [{"ClusterId": 14, "ProcId": 0, "JobStatus": 2, "NumJobStarts": 1, "NumShadowStarts": 1}]])
    exp.job_ads = lambda role: next(ads)
    assert exp.running_baseline("background", timeout=1, poll=0.01) == {"14.0": (2, 1, 1)}
    exp.job_ads = lambda role: [{"ClusterId": 14, "ProcId": 1, "JobStatus": 2, "NumShadowStarts": 1}]
    with pytest.raises(scale.RemoteError, match=r"1 of 1 running background jobs show no start yet .* 14\.1"):
        exp.running_baseline("background", timeout=0.05, poll=0.01)


NEGOTIATOR_LOG_TEXT = """\
11/23/26 10:00:01.250 ---------- Started Negotiation Cycle ----------
11/23/26 10:00:01.900 ---------- Finished Negotiation Cycle ----------
11/23/26 10:00:21.950 ---------- Started Negotiation Cycle ----------
11/23/26 10:00:22.000 Phase 3:  Sorting submitter ads by priority ...
11/23/26 10:00:22.001 Starting prefetch round; 2 potential prefetches to do.
11/23/26 10:00:22.002 Starting prefetch negotiation for vagrant@small.testbed.
11/23/26 10:00:22.150     Got NO_MORE_JOBS;  schedd has no more requests
11/23/26 10:00:22.151 Starting prefetch negotiation for other@small.testbed.
11/23/26 10:00:22.267 Prefetch summary: 2 attempted, 2 successful.
11/23/26 10:00:22.270 Phase 4.1:  Negotiating with schedds ...
11/23/26 10:00:22.400 ---------- Finished Negotiation Cycle ----------
11/23/26 10:00:42.000 ---------- Started Negotiation Cycle ----------
11/23/26 10:00:42.100 Starting prefetch negotiation for vagrant@small.testbed.
"""


def test_negotiation_cycles_timed_to_the_millisecond_from_the_log():
    cycles = parsers.logged_cycles(NEGOTIATOR_LOG_TEXT)
    assert [c.duration for c in cycles] == [0.65, 0.45]   # the unfinished third cycle is left out
    t = 1795428021.95                                       # 2026-11-23 10:00:21.95 UTC
    assert cycles[1].start == pytest.approx(t)
    # the ad said 1 s (start 10:00:21, end 10:00:22): the log's cycle that started then
    assert parsers.matching_logged_cycle(cycles, 1795428021, 1) == cycles[1]
    # a cycle the log does not hold, or one whose length disagrees with the ad's
    assert parsers.matching_logged_cycle(cycles, 1795428100, 0) is None
    assert parsers.matching_logged_cycle(cycles, 1795428021, 3) is None
    # a CM whose clock is an hour east of UTC writes local times
    shifted = parsers.logged_cycles(NEGOTIATOR_LOG_TEXT, parsers.utc_offset_seconds("+0100"))
    assert shifted[1].start == pytest.approx(t - 3600)
    assert parsers.utc_offset_seconds("-0530") == -19800 and parsers.utc_offset_seconds("junk") == 0


def test_the_request_list_prefetch_is_timed_from_the_first_schedd_to_the_summary():
    cycles = parsers.logged_cycles(NEGOTIATOR_LOG_TEXT)
    # from the first "Starting prefetch negotiation" (22.002) to "Prefetch summary" (22.267)
    assert cycles[1].prefetch == 0.265
    assert cycles[0].prefetch is None                       # a cycle that fetched no list


def test_a_negotiation_point_is_its_fastest_cycle_with_the_median_beside_it():
    assert e5.fastest_and_median([0.6, 0.07, 2.7, 0.15, 0.3]) == (0.07, 0.3)
    assert e5.fastest_and_median([0.4, 0.2]) == (0.2, 0.3)
    with pytest.raises(ValueError):
        e5.fastest_and_median([])


def test_tree_deals_startds_round_robin_over_each_cms_children_across_workers():
    topo = topology.load("default")
    for h in ("ccb3", "ccb4"):  # two children per CM: ccb1, ccb3 -> cm1; ccb2, ccb4 -> cm2
        topo.hosts[h] = dataclasses.replace(topo.hosts["ccb1"], name=h)
    assert [cfg.child_collector_top(topo, c) for c in cfg.child_collector_hosts(topo)] == ["cm1", "cm2", "cm1", "cm2"]
    seen = []
    for w in [h.name for h in topo.with_role("worker")]:
        conf = cfg.tree_worker_conf(topo, w, 2)
        seen += [line.split(" = ")[1] for line in conf.splitlines() if line.startswith("STARTD")]
        assert conf.count("COLLECTOR_HOST = ") == 3  # the master and two startds
    assert set(seen) == {"ccb1:9620, ccb2:9620", "ccb3:9620, ccb4:9620"}
    assert abs(seen.count("ccb1:9620, ccb2:9620") - seen.count("ccb3:9620, ccb4:9620")) <= 1


def test_children_on_the_cms_when_the_ccb_hosts_are_fewer_than_the_cms():
    topo = topology.load("default")
    del topo.hosts["ccb2"]
    assert cfg.child_collector_hosts(topo) == ["cm1", "cm2"]


def test_a_cm_that_heard_no_update_in_the_window_is_named():
    stats = {"cm1": {"total": 40, "lost": 0, "ads": 16, "window": True},
             "cm2": {"total": 0, "lost": 0, "ads": 16, "window": True},
             "cm1:9620": {"total": 20, "lost": 0, "ads": 8, "window": True}}
    assert cfg.tops_without_updates(stats, ["cm1", "cm2"]) == ["cm2"]
    assert cfg.tops_without_updates({"cm1": stats["cm1"]}, ["cm1", "cm2"]) == ["cm2"]
    stats["cm2"]["total"] = 36
    assert cfg.tops_without_updates(stats, ["cm1", "cm2"]) == []


class QueueSSH:
    """condor_rm / condor_q on a fake submit host: the removed jobs leave the queue after
    `leave_after` condor_q calls; records every command."""

    def __init__(self, leave_after):
        self.leave_after, self.queries, self.commands = leave_after, 0, []

    def run(self, host, command, check=False, timeout=None):
        self.commands.append(command)
        if command.startswith("condor_q"):
            self.queries += 1
            jobs = "" if self.queries > self.leave_after else "7\n"
            return Result(host, 0, jobs + condor.Pool.QUEUED_OK + "\n", "")
        return Result(host, 0, "", "")


def scale_on(ssh):
    topo = topology.load("small")
    return e5.ScaleExperiment(topo, ssh, condor.Pool(topo, ssh))


def test_removing_a_roles_jobs_waits_for_the_shadows_before_forcing_them_out():
    ssh = QueueSSH(leave_after=3)
    assert scale_on(ssh).remove("probe", poll=0) == 0
    removes = [c for c in ssh.commands if c.startswith("condor_rm")]
    # a running job removed with -forcex at once loses its shadow before the starter hears
    # of it: the slot then sits in Preempting for the job lease
    assert len(removes) == 1 and "-forcex" not in removes[0] and "probe" in removes[0]
    assert all("E5Role =?= " in c for c in ssh.commands)  # only the role's jobs, counted and removed


def test_jobs_that_stay_in_the_queue_are_forced_out_and_then_reported():
    ssh = QueueSSH(leave_after=10**9)
    assert scale_on(ssh).remove("probe", timeout=0.05, force_after=0.0, poll=0.01) == 1
    assert any("-forcex" in c for c in ssh.commands if c.startswith("condor_rm"))


def test_collector_updates_are_counted_over_the_busy_window():
    before = {"cm1": {"total": 300, "lost": 8, "ads": 16}, "cm1:9620": {"total": 20, "lost": 0, "ads": 8},
              "cm2": {"total": 100, "lost": 0, "ads": 16}}
    after = {"cm1": {"total": 570, "lost": 8, "ads": 16}, "cm1:9620": {"total": 70, "lost": 1, "ads": 8},
             "cm2": {"total": 90, "lost": 0, "ads": 16}, "cm2:9620": {"total": 5, "lost": 0, "ads": 8}}
    w = parsers.update_window(before, after)
    # the lost updates came before the window (the restart), not in it
    assert w["cm1"] == {"total": 270, "lost": 0, "ads": 16, "window": True}
    assert w["cm1:9620"] == {"total": 50, "lost": 1, "ads": 8, "window": True}
    # an ad replaced in the window (a count went down), or a collector not read before
    assert w["cm2"] == {"total": 90, "lost": 0, "ads": 16, "window": False}
    assert w["cm2:9620"]["window"] is False and w["cm2:9620"]["total"] == 5


def test_limit_watch_forgives_a_query_missed_now_and_then():
    watch = e5.LimitWatch(needed=3)
    miss = {"collector_error": "condor_status exit 1"}
    assert watch.judge("collector", miss) is None
    assert watch.judge("collector", miss) is None
    assert watch.judge(None, {}) is None            # an answer resets the count
    assert watch.judge("collector", miss) is None
    assert watch.judge("schedd", {"schedd_error": "x"}) is None
    assert watch.judge("collector", miss) == "collector"   # three misses in a row
    assert watch.misses[0] == "condor_status exit 1" and len(watch.misses) == 5


def test_limit_watch_counts_other_limits_at_once():
    watch = e5.LimitWatch(needed=3)
    assert watch.judge("memory", {}) == "memory"
    assert watch.judge("jobs", {}) == "jobs"


def test_observation_names_condor_status_exit_code():
    script = e5.observe_script("ramp")
    assert "condor_status exit $?" in script
    obs = parsers.parse_observation("#Q\n2\n#QOK\n#S\ncondor_status exit 1\n")
    assert not obs["collector_ok"] and obs["collector_error"] == "condor_status exit 1"


class CycleSSH:
    """Negotiators on cm1 and cm2: cm1's shows an old cycle only (HAD moved the negotiator
    away); cm2's has a cycle that saw every request. Counts condor_reschedule calls."""

    def __init__(self, cm2_ad):
        self.cm2_ad, self.ran = cm2_ad, []

    def run(self, host, command, check=False, timeout=None):
        self.ran.append((host, command))
        if "-direct cm1." in command:
            return Result(host, 0, NEGOTIATORS.split("\n\n")[0].replace("cm2", "cm1") + "\n", "")
        if "-direct cm2." in command:
            return Result(host, 0, self.cm2_ad, "")
        return Result(host, 0, "", "")


class MovedPool:
    """HAD has moved the negotiator to cm2; the schedd holds 50 idle negotiation jobs."""
    def __init__(self):
        self.asked = []

    def active_cm(self):
        return "cm2"

    def queued(self, constraint=None):
        self.asked.append(constraint)
        return 50


def test_a_cycle_wait_asks_again_and_follows_the_negotiator_to_the_other_cm(monkeypatch):
    import time
    topo = topology.load("small")
    # the cycle's idle count reads 1 (another schedd's stale ad for the same user), yet it
    # considered all 50 requests: that is the cycle waited for
    cm2_ad = NEGOTIATORS.split("\n\n")[1].replace("cm1", "cm2").replace("NumIdleJobs0 = 50", "NumIdleJobs0 = 1")
    ssh = CycleSSH(cm2_ad)
    t = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: t[0])    # the clock wait_for reads
    monkeypatch.setattr(time, "sleep", lambda s: t.__setitem__(0, t[0] + s))
    exp = e5.ScaleExperiment(topo, ssh, MovedPool())
    cm, cycle = exp.next_cycle("cm1", 50, after=1700000100, timeout=600, poll=10, reschedule_every=30,
                               stale_after=90)
    assert cm == "cm2" and cycle["considered"] == 50 and cycle["start"] == 1700000500
    assert sum("condor_reschedule" in c for _h, c in ssh.ran) >= 3   # at 0, 30, 60, 90 s
    # a cycle that never sees the requests: the error says where it looked and what the schedd has
    ssh = CycleSSH(cm2_ad.replace("NumJobsConsidered0 = 50", "NumJobsConsidered0 = 7"))
    t[0] = 0.0
    pool = MovedPool()
    exp = e5.ScaleExperiment(topo, ssh, pool)
    with pytest.raises(e5.RemoteError, match=r"negotiator on cm2; the schedd has 50 idle.*'considered': 7.*"
                                             r"negotiator moved cm1 -> cm2"):
        exp.next_cycle("cm1", 50, after=1700000100, timeout=300, poll=10)
    assert pool.asked == [f'{cfg.role_constraint("negotiation")} && JobStatus == 1']


def test_the_library_waits_moved_into_the_experiment_keep_their_messages(monkeypatch):
    from testbed.remote import poll
    now = [0.0]
    monkeypatch.setattr(poll.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(poll.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    topo = topology.load("small")
    exp = e5.ScaleExperiment(topo, ScriptedSSH([]), NoPool())
    tree = cfg.CollectorTree(exp)
    tree.children_running = lambda hosts=None: {"cm1": True, "cm2": False}
    with pytest.raises(AssertionError, match=r"^child collectors running \{'cm1': True, 'cm2': False\}, shape tree$"):
        tree.wait_children("tree", 120)
    tree.children_running = lambda hosts=None: {"cm1": False, "cm2": False}
    assert tree.wait_children("flat") == {"cm1": False, "cm2": False}
    exp.negotiator_ad = lambda cm: {"LastNegotiationCycleTime0": 100, "LastNegotiationCycleDuration0": 2}
    assert exp.wait_cycle_after("cm1", 99, 60)["duration"] == 2
    with pytest.raises(AssertionError, match="^no negotiation cycle within 60 s after the pool filled$"):
        exp.wait_cycle_after("cm1", 100, 60)
