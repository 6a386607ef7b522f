import copy

import pytest
import yaml

from testbed import PROJECT_ROOT
from testbed.model import topology
from testbed.model.errors import ConfigError

BASE = {
    "name": "t1",
    "hosts": {
        "submit": {"roles": ["submit", "origin"], "files": 4, "file_mb": 2},
        "cm1": {"roles": ["cm", "ccb"]},
        "cm2": {"roles": ["cm", "ccb"]},
        "w1": {"roles": ["worker"], "startds": 3, "slots_per_startd": 10},
        "dtn": {"roles": ["dtn"], "disks": {"count": 6, "size_gb": 1}},
    },
    "wan": [{"between": ["submit", "worker"], "rtt_ms": 40}],
}


def parse(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return topology.parse(data, "topo.yaml")


def test_shipped_topologies_load_and_small_fits_ci():
    default = topology.load("default")
    small = topology.load("small")
    assert {"submit", "cm1", "cm2", "ccb1", "ccb2", "worker1", "worker2", "dtn", "origin"} == set(default.hosts)
    assert small.total_memory_mb <= 6 * 1024
    assert default.role_host("dtn").disks.raid_level == 6


def test_addresses_are_sequential_in_site_net_and_unique():
    topo = parse()
    ips = [h.site_ip for h in topo.hosts.values()]
    assert ips == ["10.150.0.10", "10.150.0.11", "10.150.0.12", "10.150.0.13", "10.150.0.14"]
    assert topo.site_gateway == "10.150.0.1"


def test_slots_and_raid_geometry():
    topo = parse()
    assert topo.hosts["w1"].total_slots == 30
    assert topo.role_host("dtn").disks.data_disks == 4
    assert topo.planned_slots == 30 + 4  # worker slots + default DTN slots


def test_groups_resolve_roles_and_hosts():
    topo = parse()
    assert [h.name for h in topo.group("cm")] == ["cm1", "cm2"]
    assert [h.name for h in topo.group("w1")] == ["w1"]
    with pytest.raises(KeyError):
        topo.group("nope")


@pytest.mark.parametrize("mutate, field, problem", [
    (lambda d: d["hosts"]["w1"].update(roles=["wizard"]), "hosts.w1.roles", "unknown role"),
    (lambda d: d["hosts"]["w1"].update(memory_mb="lots"), "hosts.w1.memory_mb", "must be an integer"),
    (lambda d: d["hosts"]["w1"].update(startds=0), "hosts.w1.startds", ">= 1"),
    (lambda d: d["hosts"]["cm1"].update(startds=2), "hosts.cm1.startds", "only hosts with the worker role"),
    (lambda d: d["hosts"]["dtn"]["disks"].update(count=3), "hosts.dtn.disks.count", ">= 4"),
    (lambda d: d["hosts"]["dtn"]["disks"].update(chunk_kb=100), "hosts.dtn.disks.chunk_kb", "power of two"),
    (lambda d: d["hosts"]["dtn"]["disks"].update(raid_level=7), "hosts.dtn.disks.raid_level", "one of"),
    (lambda d: d.update(networks={"site": "8.8.8.0/24"}), "networks.site", "not a private range"),
    (lambda d: d.update(networks={"site": "192.168.150.0/25"}), "networks.site", "overlaps"),
    (lambda d: d.update(colour="blue"), "colour", "unknown key"),
    (lambda d: d["wan"][0].update(between=["submit", "mars"]), "wan[0].between", "neither a host nor a role"),
    (lambda d: d["wan"][0].update(rtt_ms=-1), "wan[0].rtt_ms", ">= 0"),
    (lambda d: d["hosts"].pop("cm2") and d["hosts"].update(cm3={"roles": ["cm"]}, cm4={"roles": ["cm"]}),
     "hosts", "one or two hosts with role cm"),
    (lambda d: d["hosts"].pop("w1"), "hosts", "role worker"),
    (lambda d: d.update(name="Has Space"), "name", "lowercase"),
])
def test_bad_input_names_file_field_and_problem(mutate, field, problem):
    with pytest.raises(ConfigError) as err:
        parse(mutate)
    message = str(err.value)
    assert message.startswith(f"topo.yaml: {field}: ")
    assert problem in message
    assert "\n" not in message


def test_invalid_yaml_reports_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nhosts: [\n")
    with pytest.raises(ConfigError) as err:
        topology.load(path)
    assert str(err.value).startswith(f"{path}: line ")


def test_unknown_topology_lists_known():
    with pytest.raises(ConfigError) as err:
        topology.load("nonexistent")
    known = sorted(p.stem for p in (PROJECT_ROOT / "topologies").glob("*.yaml"))
    assert {"default", "small"} <= set(known) and f"known: {', '.join(known)}" in str(err.value)


def test_check_fits_refuses_plans_bigger_than_free_ram():
    topo = parse()
    need = topology.check_fits(topo, free_mb=100000)
    assert need > topo.total_memory_mb
    with pytest.raises(ConfigError) as err:
        topology.check_fits(topo, free_mb=1000)
    assert "host has 1000 MB free" in str(err.value)


def test_file_round_trip(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert topology.load(path).name == "t1"


def test_planned_startds_counts_every_worker_startd():
    assert topology.load("small").planned_startds == 2
    assert topology.load("default").planned_startds == 4
