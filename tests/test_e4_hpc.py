"""E4 (seed 003) logic: report parsing, E1/E2/Total, available core seconds, the idle
tail and back-fill accounting, the Gaussian estimator, the node program's pure parts,
the run-time templates, and the layout runner against a faked SSH layer."""
import json
import os

import pytest

from testbed.experiments.e4 import hpc as e4
from testbed.harness import registry
from testbed.machines.render import render_run_file
from tests.support import guest_program

node = guest_program("e4_node")


def task(i, start, end, cpu, kind="task", events=10):
    return {"id": f"t{i}", "kind": kind, "start": start, "end": end, "cpu": cpu, "events": events,
            "lookups": events * 2, "answered": events * 2, "event_cpu": [cpu / events] * events}


def report(tasks, start=0.0, tasks_start=10.0, host="worker1", n=0, cpus=1):
    end = max([t["end"] for t in tasks] + [tasks_start])
    return {"role": "tasks", "layout": "colocated", "node": n, "host": host, "start": start,
            "tasks_start": tasks_start, "end": end + 1, "T": tasks_start - start, "parts": {"copy": 1.0},
            "errors": [], "tasks": tasks, "cpus": cpus}


def test_event_cpu_times_take_one_kind_of_task_from_every_report():
    reps = [report([task(0, 10, 20, 10, events=2), task(1, 20, 30, 4, kind="backfill", events=1)]),
            report([task(2, 10, 20, 6, events=3)], n=1)]
    assert e4.event_cpu_times(reps) == [5.0, 5.0, 2.0, 2.0, 2.0]
    assert e4.event_cpu_times(reps, kind="backfill") == [4.0]
    assert e4.event_cpu_times([report([])]) == []


def test_parse_report_checks_keys_and_order():
    rep = report([task(0, 10, 20, 10)])
    assert e4.parse_report(json.dumps(rep))["node"] == 0
    with pytest.raises(ValueError, match="lacks"):
        e4.parse_report(json.dumps({k: v for k, v in rep.items() if k != "T"}))
    with pytest.raises(ValueError, match="not JSON"):
        e4.parse_report("{")
    with pytest.raises(ValueError, match="order"):
        e4.parse_report(json.dumps(dict(rep, tasks_start=-1)))
    bad = dict(rep, tasks=[{"id": "x"}])
    with pytest.raises(ValueError, match="task x lacks"):
        e4.parse_report(json.dumps(bad))
    two = "#E4REPORT\n" + json.dumps(rep) + "\n#E4REPORT\n" + json.dumps(dict(rep, node=1))
    assert [r["node"] for r in e4.split_reports(two)] == [0, 1]


def test_efficiency_formulas_and_the_paper():
    assert e4.job_start_efficiency(100, 1) == pytest.approx(0.99)
    assert e4.total_efficiency(10, 11, 0.9948, 0.9990) == pytest.approx(0.9035, abs=1e-3)
    assert e4.total_efficiency(1, 1, 0.9950, 0.9979) == pytest.approx(0.9930, abs=1e-4)
    with pytest.raises(ValueError):
        e4.job_start_efficiency(10, 11)
    with pytest.raises(ValueError):
        e4.total_efficiency(2, 1, 1, 1)


def test_e2_is_cpu_over_real_with_a_core_per_task():
    rep = report([task(0, 10, 20, 9), task(1, 10, 30, 18)], cpus=2)
    f = e4.node_figures(rep, vm_cpus=2)
    assert f["available"] == pytest.approx(30)      # 10 + 20: each task its own core
    assert f["E2"] == pytest.approx(27 / 30)
    assert f["E1"] == pytest.approx(20 / 30)


def test_e2_with_more_tasks_than_cores_uses_the_cores():
    rep = report([task(0, 10, 20, 5), task(1, 10, 20, 5)], cpus=1)
    f = e4.node_figures(rep, vm_cpus=1)
    assert f["available"] == pytest.approx(10)      # one core for 10 s, not 20 task-seconds
    assert f["E2"] == pytest.approx(1.0)


def test_two_nodes_on_one_vm_share_its_core():
    a = report([task(0, 10, 20, 5)], n=0)
    b = report([task(0, 10, 30, 15)], n=1)
    assert e4.available_core_seconds(a, [a, b], 1) == pytest.approx(5)        # half the core
    assert e4.available_core_seconds(b, [a, b], 1) == pytest.approx(5 + 10)   # alone after 20


def test_layout_figures_count_the_db_node():
    nodes = [report([task(0, 10, 110, 100)], host=f"w{i}", n=i) for i in range(10)]
    co = e4.layout_figures(nodes)
    ded = e4.layout_figures(nodes, db_reports=[{"errors": []}])
    assert co["nodes_allocated"] == 10 and ded["nodes_allocated"] == 11
    assert ded["total"] == pytest.approx(co["total"] * 10 / 11)
    assert co["E1"] == pytest.approx(100 / 110) and co["parts"] == {"copy": 1.0}
    assert co["startup_cpu_busy"] is None          # reports from before the node measured it
    nodes[0]["startup_cpu_busy"], nodes[1]["startup_cpu_busy"] = 0.9, 0.5
    assert e4.layout_figures(nodes)["startup_cpu_busy"] == pytest.approx(0.7)


def test_the_node_measures_its_cores_busy_over_the_startup():
    before = node.cpu_jiffies("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n")
    after = node.cpu_jiffies("cpu  160 0 70 820 150 0 0 0 0 0\n")
    assert before == (150, 1000) and after == (230, 1200)
    assert node.busy_fraction(before, after) == pytest.approx(80 / 200)   # iowait is not busy
    assert node.busy_fraction(after, after) == 0.0


def test_idle_tail_and_backfill_accounting():
    # node 0..100, tasks end at 60, 80, 100: idle slot time 40 + 20 + 0 over 3 x 100
    tasks = [task(0, 0, 60, 60), task(1, 0, 80, 80), task(2, 0, 100, 100)]
    rep = report(tasks, tasks_start=0)
    assert e4.idle_tail_slots(rep) == pytest.approx(60 / 300)
    assert e4.finish_fractions(rep) == pytest.approx([0.6, 0.8, 1.0])
    filled = report(tasks + [task(9, 60, 90, 30, kind="backfill")], tasks_start=0)
    assert e4.idle_tail_slots(filled) == pytest.approx(30 / 300)
    assert e4.finish_fractions(filled) == pytest.approx([0.6, 0.8, 1.0])   # back-fill is not a rank
    assert e4.backfill_recovered(0.2, 0.1) == pytest.approx(0.1)
    assert e4.idle_tail_cores(rep, 3) == pytest.approx((300 - 240) / 300)


def test_gaussian_fit_and_prediction():
    mu, sigma = e4.gaussian_fit([1, 2, 3, 4])
    assert mu == pytest.approx(2.5) and sigma == pytest.approx(1.118, abs=1e-3)
    with pytest.raises(ValueError):
        e4.gaussian_fit([1])
    assert e4.expected_max_z(1) == 0 and 1.0 < e4.expected_max_z(5) < 1.3
    # one task per core: the longest task; oversubscribed: the whole work over the cores
    assert e4.predict_node_seconds(0.1, 100, 0, 4, 4, 5) == pytest.approx(15)
    assert e4.predict_node_seconds(0.1, 100, 0, 4, 1, 5) == pytest.approx(45)
    assert e4.estimator_error(110, 100) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        e4.estimator_error(1, 0)


def test_node_program_pure_parts():
    lines = list(node.dump_lines(50_000))
    assert sum(len(x) for x in lines) >= 50_000 and any("KEY (beginTime)" in x for x in lines)
    assert "beginTime <= FROM_UNIXTIME(%s) ORDER BY beginTime DESC LIMIT 1" in node.lookup_sql("tpcT0")
    tree = node.env_tree(1000)
    assert len(tree) == 1000 and len({p.rsplit("/", 1)[0] for p, _ in tree}) > 20
    assert node.backfill_fits(10, 1.0, 5, 20) and not node.backfill_fits(10, 1.0, 15, 20)
    assert not node.backfill_fits(10, 0.0, 1, 20)
    assert node.predicted_end({"a": (0, 10), "b": (5, 10)}, 2.0) == 25
    import random
    assert all(node.draw_events(random.Random(1), 2, 5) >= 1 for _ in range(50))


def test_every_calibration_table_has_a_row_valid_from_the_start_of_the_range():
    # look-ups draw t in [T_BEGIN, T_BEGIN + T_SPAN) and ask for the newest row with
    # beginTime <= t: without a row at T_BEGIN, E4 quick missed 2 of 3896 look-ups
    import re
    earliest, table = {}, None
    for line in node.dump_lines(400_000):
        m = re.match(r"CREATE TABLE (\w+)", line)
        if m:
            table = m.group(1)
        for t in re.findall(r"FROM_UNIXTIME\((\d+)\)", line):
            earliest[table] = min(earliest.get(table, 1 << 62), int(t))
    assert set(earliest) == set(node.TABLES)
    assert all(t == node.T_BEGIN for t in earliest.values())


def test_each_task_of_a_node_gets_a_seed_of_its_own(tmp_path, monkeypatch):
    # run_tasks forks one process per task; the seed must be drawn in the parent (drawn in
    # the child, tasks came in pairs with the same seed, hence the same look-ups and work)
    def fake_task(cfg, scratch, task_id, kind, events, seed):
        with open(os.path.join(scratch, "tasks", f"{task_id}.json"), "w") as f:
            json.dump({"id": task_id, "seed": seed, "events": events}, f)
    monkeypatch.setattr(node, "run_task", fake_task)
    cfg = {"seed": 3, "tasks": 8, "events_mean": 60, "events_sigma": 15, "backfill_events": 0}
    tasks = node.run_tasks(cfg, str(tmp_path))
    assert len(tasks) == 8 and len({t["seed"] for t in tasks}) == 8


def test_templates_render():
    co = render_run_file("e4/node.cnf.j2", layout="colocated", bind_address="", max_connections=0, key_buffer_mb=16)
    assert "skip-networking" in co and "bind-address" not in co
    ded = render_run_file("e4/node.cnf.j2", layout="dedicated", bind_address="10.160.0.15", max_connections=40,
                          key_buffer_mb=16)
    assert "bind-address = 10.160.0.15" in ded and "skip-networking" not in ded
    assert "10.160.0.0/24(ro," in render_run_file("e4/exports.j2", path="/srv/x", site_net="10.160.0.0/24")
    class H:
        name = "worker1"
    conf = render_run_file("e4/nodes.conf.j2", host=H, cpus=8, memory_mb=200)
    assert "SLOT_TYPE_1_PARTITIONABLE = True" in conf and "NUM_CPUS = 8" in conf


def test_site_helpers():
    assert e4.mysql_host_pattern("10.160.0.0/24") == "10.160.0.%"
    assert e4.mysql_host_pattern("10.0.0.0/16") == "10.0.%"
    desc = e4.node_job(8, 2, "e4-x", requirements="(TARGET.E4Node =?= True)")
    assert "request_cpus = 8" in desc and "queue 2" in desc and "report.$(Process).json" in desc
    assert "$(Process)" in desc.split("arguments =")[1].splitlines()[0]
    assert e4.job_states([{"JobStatus": 4}, {"JobStatus": 4}, {"JobStatus": 2}]) == {4: 2, 2: 1}


def test_scales_declared():
    exp = registry.get("e4")
    assert exp.parameters("ci")["nodes"] == 1 and exp.parameters("full")["tasks_per_node"] == 60


class FakeResult:
    def __init__(self, stdout="", ok=True):
        self.stdout, self.stderr, self.ok, self.rc = stdout, "", ok, 0 if ok else 1


class FakeSSH:
    """Answers condor_q/history with completed jobs and the report cat with reports."""

    def __init__(self, reports):
        self.reports, self.commands = reports, []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        if "condor_q" in command:
            return FakeResult('[]#SPLIT#[{"ProcId": 0, "JobStatus": 4}, {"ProcId": 1, "JobStatus": 4}]'
                              .replace("#SPLIT#", "\n#SPLIT#\n"))
        if "report.*.json" in command:
            return FakeResult("".join("#E4REPORT\n" + json.dumps(r) + "\n" for r in self.reports.get(host, [])))
        if "condor_submit" in command:
            return FakeResult("7.0 - 7.0\n")
        return FakeResult()

    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c) for h, c in commands.items()}


class FakePool:
    def __init__(self):
        self.submitted = []

    def submit(self, description, workdir, files=None, setup=None):
        self.submitted.append((description, workdir, files))
        return 42


def test_run_layout_dedicated_submits_the_db_node_on_the_dtn(monkeypatch):
    from testbed.model import topology
    topo = topology.load("small")
    rep = report([task(0, 10, 20, 10)])
    ssh = FakeSSH({"submit": [rep, dict(rep, node=1)], "dtn": [dict(rep, role="db", tasks=[])]})
    exp = e4.HpcExperiment(topo, ssh, FakePool())
    p = registry.get("e4").parameters("ci")
    tasks, db = exp.run_layout(dict(p, nodes=2), "dedicated", False)
    assert len(tasks) == 2 and len(db) == 1
    assert any(h == "dtn" and "condor_submit" in c for h, c in ssh.commands)
    # only on the DTN's own slots: its schedd flocks to the workers' pool otherwise
    assert any(h == "dtn" and "TARGET.IsDTN =?= True" in c for h, c in ssh.commands)
    desc, workdir, files = exp.pool.submitted[0]
    cfg = json.loads(files["node.json"][0])
    assert cfg["layout"] == "dedicated" and cfg["db_host"] == topo.hosts["dtn"].site_ip
    assert "skip-networking" in files["node.cnf"][0]   # task nodes run no DB server


def test_backfill_past_the_production_end_is_overrun_not_a_longer_allocation():
    # tasks end at 60, 80, 100; a back-fill task runs 70..130, 30 s past the production's end
    tasks = [task(0, 0, 60, 60), task(1, 0, 80, 80), task(2, 0, 100, 100)]
    over = report(tasks + [task(9, 70, 130, 60, kind="backfill")], tasks_start=0)
    assert e4.production_end(over) == 100
    assert e4.finish_fractions(over) == pytest.approx([0.6, 0.8, 1.0])
    # 60 idle slot seconds, 30 of them (70..100) filled before the end
    assert e4.idle_tail_slots(over) == pytest.approx(30 / 300)
    assert e4.backfill_overrun_seconds(over) == pytest.approx(30)
    # half the back-fill's CPU (60 s of 60 s run, 30 s inside) counts: (300 - 240 - 30) / 300
    assert e4.idle_tail_cores(over, 3) == pytest.approx(30 / 300)
    assert e4.backfill_overrun_seconds(report(tasks, tasks_start=0)) == 0.0


def test_the_db_node_counts_its_clients_by_user():
    text = "Variable_name\tValue\nConnections\t57\nThreads_connected\t1\n"
    assert node.parse_statuses(text) == {"Connections": 57, "Threads_connected": 1}
    rows = "USER\tTOTAL_CONNECTIONS\tCONCURRENT_CONNECTIONS\nreader\t3\t0\nroot\t41\t1\n"
    # the node's own (root) queries are not its clients
    assert node.parse_user_connections(rows, node.CLIENT_USER) == (3, 0)
    assert node.parse_user_connections("USER\tTOTAL_CONNECTIONS\tCONCURRENT_CONNECTIONS\n", "reader") == (0, 0)


def test_the_dedicated_db_node_config_keeps_per_user_statistics():
    text = render_run_file("e4/node.cnf.j2", layout="dedicated", bind_address="10.0.0.1",
                           max_connections=22, key_buffer_mb=32)
    assert "userstat = 1" in text and "bind-address = 10.0.0.1" in text


def test_a_scale_needing_more_nodes_than_worker_startds_is_refused_before_the_site():
    from testbed.harness import runner
    from testbed.model import topology
    from testbed.model.errors import ConfigError
    small, default = topology.load("small"), topology.load("default")
    runner.check("e4", "ci", [], {}, small)           # 1 node, 2 startds
    runner.check("e4", "quick", [], {}, default)      # 2 nodes, 4 startds
    with pytest.raises(ConfigError) as e:
        runner.check("e4", "full", [], {}, default)    # 10 nodes
    assert str(e.value).startswith(f"{default.source}: e4 at full: nodes = 10 whole nodes")
    assert "4 startds" in str(e.value) and "--set nodes=4" in str(e.value)
    runner.check("e4", "full", [], {"nodes": "4"}, default)
    exp, params = runner.check("e4", "full", [], {})                 # no topology: not checked
    assert exp is registry.get("e4") and params == exp.parameters("full")
