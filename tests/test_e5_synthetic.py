"""E5's synthetic startds (experiments/e5/synthetic.py): the ads, the joins and the updater
as bash, run here against a fake condor_advertise that logs what it was sent."""
import os
import re
import subprocess
import time
from types import SimpleNamespace

from testbed.experiments.e5 import synthetic
from testbed.experiments.e5.parsers import startd_names

FAKE = """#!/bin/bash
# fake condor_advertise: logs `pool command ads-file-content`; pool cm2 refuses
pool=; multiple=; while [ $# -gt 2 ]; do case $1 in -pool) pool=$2; shift 2;; -multiple) multiple=1; shift;; *) shift;; esac; done
{ echo "== $pool $1 ${multiple:+multiple}"; cat "$2"; } >> "$FAKE_LOG"
[ "$pool" != cm2 ]
"""


def bash(script, tmp_path, **env):
    fake = tmp_path / "bin" / "condor_advertise"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE)
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:{os.environ['PATH']}", "FAKE_LOG": str(tmp_path / "log"), **env}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)


def ads(text):
    return [dict(line.split(" = ", 1) for line in block.splitlines()) for block in text.split("\n\n") if block.strip()]


def test_the_ads_are_slot_ads_of_startds_named_as_the_daemons_ramp_lists_them(tmp_path):
    out = bash(synthetic.ads_command("worker1", "small.testbed", "10.0.0.5", 300, 3, 4, 7, 1700000000), tmp_path)
    got = ads(out.stdout)
    assert [a["Name"] for a in got] == ['"slot1@synth3@worker1.small.testbed"', '"slot1@synth4@worker1.small.testbed"']
    assert got[0]["UpdateSequenceNumber"] == "7" and got[0]["DaemonStartTime"] == "1700000000"
    assert got[0]["MyAddress"] == '"<10.0.0.5:0>"' and got[0][synthetic.TAG] == "true"
    assert got[0]["Start"] == "false" and got[0]["ClassAdLifetime"] == "300"
    names = "\n".join(a["Name"].strip('"') for a in got)
    assert startd_names(names, {"worker1"}) == {synthetic.startd_name(i, "worker1", "small.testbed") for i in (3, 4)}


def test_each_join_is_its_own_advertise_per_collector_timed_and_failures_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "AD_DIR", str(tmp_path / "ads"))
    script = synthetic.join_script(["cm1", "cm2"], "worker1", "small.testbed", "10.0.0.5", 300, 1, 5,
                                   1700000000, 3)
    out = bash(script, tmp_path)
    joins = synthetic.parse_joins(out.stdout)
    assert sorted((i, c) for i, c, _s, _rc in joins) == [(i, c) for i in range(1, 6) for c in ("cm1", "cm2")]
    assert all(s >= 0 for _i, _c, s, _rc in joins)
    summary = synthetic.join_summary(joins)
    assert summary["cm1"]["joined"] == 5 and summary["cm1"]["failed"] == 0
    assert summary["cm2"] == {"joined": 0, "failed": 5, "median_s": None, "max_s": None}
    log = (tmp_path / "log").read_text()
    assert log.count("== cm1 UPDATE_STARTD_AD \n") == 5          # one ad a process, never -multiple
    assert log.count("UpdateSequenceNumber = 1") == 10
    assert not (tmp_path / "ads" / "join").exists()              # the ad files are gone after


def test_the_updater_continues_each_ads_sequence_when_a_step_adds_ads(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "AD_DIR", str(tmp_path / "ads"))
    out = bash(synthetic.updater_script(["cm1"], "worker1", "d", "10.0.0.5", 300, 1, 2, 5, 1), tmp_path)
    assert out.returncode == 0, out.stderr
    time.sleep(2.5)                                   # rounds 1, 2: ads 1-2 at sequence 2, 3
    out = bash(synthetic.updater_script(["cm1"], "worker1", "d", "10.0.0.5", 300, 3, 3, 5, 1), tmp_path)
    assert out.returncode == 0, out.stderr
    pid = (tmp_path / "ads" / "updater.pid").read_text()
    time.sleep(2.2)
    assert (tmp_path / "ads" / "updater.pid").read_text() == pid   # the same updater, not restarted
    assert bash(synthetic.stop_script(), tmp_path).returncode == 0
    time.sleep(1.2)
    rounds = [ads(block) for block in (tmp_path / "log").read_text().split("== cm1 UPDATE_STARTD_AD multiple\n")[1:]]
    seqs = [{a["Name"].strip('"').split("@")[1]: int(a["UpdateSequenceNumber"]) for a in r} for r in rounds]
    assert len(seqs) >= 3
    for before, after in zip(seqs, seqs[1:]):          # every ad's number grows by one a round
        for name, n in before.items():
            assert after[name] == n + 1
    assert seqs[0] == {"synth1": 2, "synth2": 2}
    added = next(r for r in seqs if "synth3" in r)
    assert added["synth3"] == 2 and added["synth1"] > 2   # the added ad starts its own sequence
    sent = len(rounds)
    time.sleep(1.2)
    assert (tmp_path / "log").read_text().count("== cm1") == sent   # stopped: nothing sent since
    assert not (tmp_path / "ads" / "ranges").exists() and not (tmp_path / "ads" / "updater.pid").exists()


def test_invalidation_asks_each_collector_to_drop_the_tagged_ads(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "AD_DIR", str(tmp_path / "ads"))
    assert bash(synthetic.invalidate_script(["cm1", "cm2:9620"]), tmp_path).returncode == 0
    log = (tmp_path / "log").read_text()
    assert "== cm1 INVALIDATE_STARTD_ADS" in log and "== cm2:9620 INVALIDATE_STARTD_ADS" in log
    assert f"Requirements = {synthetic.TAG} =?= true" in log


def test_a_step_is_judged_by_the_first_limit_it_shows():
    ok = {"answered": {"cm1": True, "cm2": True}, "joins": {"cm1": {"joined": 20, "failed": 0}},
          "missing": {"cm1": [], "cm2": []}, "lost": {"cm1": 0, "cm2": 0},
          "loads": {"cm1": {"RecentDaemonCoreDutyCycle": 0.4}, "cm2": {}}, "per_worker": 10}
    assert synthetic.judge(ok) is None
    cases = {"collector": {"answered": {"cm1": True, "cm2": False}},
             "join": {"joins": {"cm1": {"joined": 18, "failed": 2}}},
             "missing": {"missing": {"cm1": ["synth3@worker1.d"], "cm2": []}},
             "lost": {"lost": {"cm1": 0, "cm2": 4}},
             "busy": {"loads": {"cm1": {"RecentDaemonCoreDutyCycle": 0.97}, "cm2": {}}}}
    for limit, change in cases.items():
        step = {**ok, **change}
        assert synthetic.judge(step) == limit
        assert "unknown" not in synthetic.describe(limit, step)
    assert "cm2 4" in synthetic.describe("lost", {**ok, **cases["lost"]})
    assert "2 of 20" in synthetic.describe("join", {**ok, **cases["join"]})


class FakePool:
    """A site whose workers' joins succeed and whose CMs list whatever joined, counting
    `lost` lost updates at cm2 once more than `lose_above` ads per worker joined."""

    def __init__(self, topo, lose_above=None):
        self.topo, self.lose_above, self.joined, self.commands = topo, lose_above, {}, []
        self.workers = topo.with_role("worker")
        self.submit = "submit"
        self.ssh, self.schedd = self, self

    # ssh
    def run_many(self, commands, check=False, timeout=None):
        out = {}
        for host, command in commands.items():
            self.commands.append((host, command))
            text = ""
            m = re.search(r"-v first=(\d+) -v last=(\d+)", command)
            if "xargs" in command and m:
                first, last = int(m.group(1)), int(m.group(2))
                self.joined[host] = last
                text = "".join(f"join {i} {c} 1.0 1.25 0\n" for i in range(first, last + 1) for c in ("cm1", "cm2"))
            out[host] = SimpleNamespace(stdout=text, ok=True)
        return out

    def run(self, host, command, check=True, timeout=None):
        return self.run_many({host: command})[host]

    def daemon_stats(self):
        return {}

    # schedd
    def answers_by_pool(self, pools, args, timeout=60):
        names = "".join(f"slot1@synth{i}@{w}.{self.topo.trust_domain}\n" for w, n in self.joined.items()
                        for i in range(1, n + 1))
        return {p: names for p in pools}

    def status_by_pool(self, pools, args, timeout=60):
        if "UpdatesTotal" in args:
            n = max(self.joined.values(), default=0)
            self.reads = getattr(self, "reads", 0) + 1
            lost = 3 if self.lose_above is not None and n > self.lose_above and self.reads % 2 == 0 else 0
            return {p: f"{self.reads} {lost if p == 'cm2' else 0}\n" for p in pools}
        return {p: f'Name = "{p}"\nMyType = "Collector"\nRecentDaemonCoreDutyCycle = 0.1\n' for p in pools}


def test_the_ramp_doubles_until_a_collector_loses_updates_and_cleans_up_after(monkeypatch):
    from testbed.model import topology
    topo = topology.load("small")
    pool = FakePool(topo, lose_above=20)
    monkeypatch.setattr(synthetic.time, "sleep", lambda s: None)
    ramp = synthetic.SyntheticRamp(pool, join_s=5, hold_s=0, update_s=30, parallel=2, poll=0.01, echo=lambda *a: None)
    r = ramp.run([10, 20, 40])
    assert [s["per_worker"] for s in r["steps"]] == [10, 20, 40]
    assert r["limit"] == "lost" and r["held"] == 20 and r["per_worker"] == 20 and r["found"]
    assert "cm2" in r["reason"]
    first = r["steps"][0]
    assert first["joins"]["cm1"] == {"joined": 10, "failed": 0, "median_s": 0.25, "max_s": 0.25}
    # each step joins only the new ads, and adds them to the updater
    joins = [c for _h, c in pool.commands if "xargs" in c]
    assert [re.search(r"-v first=(\d+) -v last=(\d+)", c).groups() for c in joins] == [("1", "10"), ("11", "20"),
                                                                                     ("21", "40")]
    updaters = [c for _h, c in pool.commands if "-multiple" in c]
    assert [re.search(r"echo (\d+ \d+) ", c).group(1) for c in updaters] == ["1 10", "11 20", "21 40"]
    ramp.clean()
    assert "INVALIDATE_STARTD_ADS" in pool.commands[-1][1] and ramp.joined == 0


def test_the_e5_summary_shows_the_synthetic_limit_and_the_join_time():
    from testbed.experiments.e5 import e5_figures
    recs = [{"name": "e5.synthetic_limit", "value": 500.0,
             "params": {"rtt_ms": "100", "per_worker": 250, "found": 0, "limit": "ramp_max"}},
            {"name": "e5.synthetic_join_seconds", "value": 2.6,
             "params": {"rtt_ms": "100", "step": 125, "collector": "cm1", "stat": "median"}},
            {"name": "e5.synthetic_join_seconds", "value": 2.4,
             "params": {"rtt_ms": "100", "step": 250, "collector": "cm1", "stat": "median"}}]
    rows = {figure: (value, paper) for section, figure, value, _unit, paper in e5_figures.synthetic_rows(recs)}
    assert rows["ads per collector at the limit, 100 ms (ramp_max, ramp_max reached: a lower bound)"] == (500.0, "200 (WAN)")
    assert rows["seconds one join took (median, first step), 100 ms"][0] == 2.6
