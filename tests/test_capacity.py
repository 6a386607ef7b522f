"""The capacity planner's arithmetic (`testbed plan --for EXPERIMENT:SCALE`) and its skeleton."""
import math

import pytest
import yaml

from testbed import cli
from testbed.harness import capacity, registry
from testbed.model import constants as c, topology
from testbed.model.errors import ConfigError


def group(p, name):
    return next(g for g in p.groups if g.name == name)


def test_memory_is_rounded_up_to_whole_256_mb():
    assert capacity.round_mb(1) == 256 and capacity.round_mb(256) == 256 and capacity.round_mb(257) == 512
    assert capacity.round_mb(17408) == 17408


@pytest.mark.parametrize("spec, words", [
    ("e5", "give EXPERIMENT:SCALE"), ("e5:huge", "give EXPERIMENT:SCALE"), ("e9:full", "unknown experiment 'e9'"),
])
def test_a_bad_spec_is_a_one_line_error_naming_the_option(spec, words):
    with pytest.raises(ConfigError) as err:
        capacity.plan(spec)
    assert err.value.field == "--for" and words in err.value.problem


def test_sleeper_workers_pack_startds_into_the_hosts_given():
    # per startd: 32 MB + 50 slots x 2 MB starters = 132 MB and 0.18 core
    g = capacity.sleeper_workers(164, 32768, 16)
    per_host = min(64, (32768 - 768) // 132, int(16 // 0.18))
    assert per_host == 64
    assert g.count == math.ceil(164 / 64) == 3 and g.fields == {"startds": 55, "slots_per_startd": 50}
    assert g.memory_mb == capacity.round_mb(768 + 55 * 132) == 8192
    assert g.cpus == math.ceil(55 * 0.18) == 10
    small = capacity.sleeper_workers(164, 8192, 4)           # 22 startds fit 4 cores
    assert small.count == 8 and small.fields["startds"] == 21 and small.cpus == 4
    assert small.memory_mb <= 8192


def test_e5_full_needs_a_shadow_per_job_on_the_schedd_and_a_slot_per_job():
    p = capacity.plan("e5:full")
    jobs = registry.get("e5").scales["full"]["ramp_max"]
    submit = group(p, "submit")
    assert submit.memory_mb == capacity.round_mb(c.ROLE_BASE_MB["submit"] + jobs * c.SHADOW_MB) == 17408
    assert submit.cpus == 1 + math.ceil(jobs / c.SCHEDD_JOBS_PER_CORE) == 8
    w = group(p, "worker")
    assert w.count * w.fields["startds"] * w.fields["slots_per_startd"] >= jobs
    assert [g.count for g in p.groups if g.name in ("cm", "ccb")] == [2, 2]
    assert p.hosts == 1 + 2 + 2 + w.count + 1 + 1
    assert p.memory_mb == sum(g.count * g.memory_mb for g in p.groups)
    fewer = capacity.plan("e5:full", sets={"ramp_max": 1024})
    assert group(fewer, "submit").memory_mb == capacity.round_mb(1024 + 1024 * 2.0) == 3072
    assert group(fewer, "worker").count == 1 and group(fewer, "worker").fields["startds"] == 21


def test_e1_full_sizes_the_submit_host_for_4000_transferring_jobs_and_one_batch_of_output():
    p = capacity.plan("e1:full")
    s = group(p, "submit")
    assert s.memory_mb == capacity.round_mb(1024 + 4000 * 2.0) == 9216
    assert s.cpus == 4000 // c.E1_SHADOWS_PER_CORE == 40
    size = 37   # 2 x 1250 MB/s x 60 s / 4000 jobs = 37.5 MB, whole MB above 10
    assert s.disk_gb == c.HOST_DISK_GB + math.ceil(4000 * size / 1000)
    assert any("cannot be split" in n and n.startswith("submit") for n in p.notes)   # 40 cores > 16
    assert not any(n.startswith("submit") for n in capacity.plan("e1:full", host_cpus=64).notes)


def test_e4_full_gives_every_task_a_real_core_and_packs_nodes_per_host():
    p = capacity.plan("e4:full", host_mb=65536, host_cpus=64)
    w = group(p, "worker")
    assert w.count == 10 and w.cpus == 60 and w.fields == {"startds": 1, "slots_per_startd": 60}
    node_mb = 60 * c.E4_TASK_MB + c.E4_DB_MB + 300
    assert w.memory_mb == capacity.round_mb(768 + node_mb)
    big = group(capacity.plan("e4:full", host_mb=65536, host_cpus=128), "worker")
    assert big.count == 5 and big.cpus == 120 and big.memory_mb == capacity.round_mb(768 + 2 * node_mb)
    small = capacity.plan("e4:full")                         # 16-core hosts: a node does not fit
    assert any("a node needs 60 cores, more than the 16 given" in n for n in small.notes)


def test_e3_full_gives_the_concurrency_scan_a_core_per_job_and_the_dtn_its_files():
    p = capacity.plan("e3:full")
    w = group(p, "worker")
    assert w.count == 1 and w.cpus == 16
    assert w.memory_mb == capacity.round_mb(768 + 16 * (c.E3_JOB_RSS_MB_GUESS["root"] + 30))
    file_mb = 50000 * 800 * c.E3_BYTES_PER_VALUE / 1e6      # 120 MB
    assert group(p, "dtn").fields["disks"]["size_gb"] == capacity.raid_member_gb(2 * 4 * 4 * file_mb / 1000)


def test_raid_members_hold_the_data_on_four_of_six():
    assert capacity.raid_member_gb(1) == 2 and capacity.raid_member_gb(10) == 3 and capacity.raid_member_gb(40) == 10


@pytest.mark.parametrize("name", list(registry.experiments()))
def test_every_experiments_full_scale_has_a_rule_and_a_skeleton_that_parses(name):
    assert registry.get(name).capacity is not None
    p = capacity.plan(f"{name}:full", host_mb=65536, host_cpus=64)
    text = capacity.skeleton(p)
    topo = topology.parse(yaml.safe_load(text), f"{name}full.yaml")
    assert len(topo.hosts) == p.hosts
    assert sum(h.memory_mb for h in topo.hosts.values()) == p.memory_mb
    assert topo.name == f"{name}full"[:10]


def test_the_cli_prints_the_table_the_notes_and_the_topology(capsys):
    assert cli.main(["plan", "--for", "e5:full", "--host-memory-mb", "16384", "--host-cpus", "8"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    p = capacity.plan("e5:full", host_mb=16384, host_cpus=8)
    assert first == (f"e5 at full: {p.hosts} hosts, {p.memory_mb} MB RAM, {p.cpus} cores, {p.disk_gb} GB disk "
                     "in all (hosts of at most 16384 MB and 8 cores)")
    assert "name: e5full" in out and f"worker{group(p, 'worker').count}:" in out
    assert yaml.safe_load(out[out.index("# Written by"):])["name"] == "e5full"
    assert cli.main(["plan", "--for", "e5:full", "--set", "ramp_max=zero"]) == 2
    assert "ramp_max must be a whole number" in capsys.readouterr().err


def test_the_readme_table_is_what_the_planner_prints_for_every_full_scale():
    import re
    from testbed import PROJECT_ROOT
    text = (PROJECT_ROOT / "docs" / "operations" / "beyond-one-machine.md").read_text()
    rows = re.findall(r"^\| (`[^|]+`) \| (\d+) \| (\d+) MB \| (\d+) \|", text, re.M)
    seen = set()
    for runs, hosts, mb, cores in rows:
        for spec in re.findall(r"`([a-z0-9]+:full)`", runs):
            p = capacity.plan(spec)
            assert (p.hosts, p.memory_mb, p.cpus) == (int(hosts), int(mb), int(cores)), spec
            seen.add(spec.split(":")[0])
    assert seen == set(registry.experiments())
