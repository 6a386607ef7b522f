import pytest

from testbed.network import netem
from testbed.model import topology
from testbed.model.errors import ConfigError
from testbed.model.links import rtt_label


def test_queue_limit_covers_bandwidth_delay_product():
    slow = netem.Link("a", "b", rtt_ms=10, rate_mbit=100)
    assert netem.queue_limit(slow) == 1000  # BDP 83 packets: the floor applies
    fast = netem.Link("a", "b", rtt_ms=80)  # 10 Gbit/s assumed
    bdp = 10000e6 / 8 * 0.080 / 1500
    assert netem.queue_limit(fast) >= bdp


def test_netem_args_split_rtt_per_direction():
    args = netem.netem_args(netem.Link("a", "b", rtt_ms=40, jitter_ms=2, loss_pct=0.1, rate_mbit=1000))
    assert args[:2] == ["delay", "20ms"]
    assert "1ms" in args and "loss" in args and "rate" in args and "limit" in args


def test_host_plans_filter_per_destination_both_sides():
    topo = topology.load("small")
    plans = netem.host_plans(topo, [netem.Link("submit", "worker", rtt_ms=40)])
    submit = plans["submit"]
    assert submit[0] == ["tc", "qdisc", "del", "dev", "eth1", "root"]
    assert any("netem" in cmd for cmd in submit)
    filters = [c for c in submit if c[:2] == ["tc", "filter"]]
    assert [c[c.index("dst") + 1] for c in filters] == ["10.160.0.13/32"]  # worker1 only
    worker_filters = [c for c in plans["worker1"] if c[:2] == ["tc", "filter"]]
    assert [c[c.index("dst") + 1] for c in worker_filters] == ["10.160.0.10/32"]
    # hosts outside the link only get cleared: the LAN stays at 0 ms
    assert plans["cm1"] == [["tc", "qdisc", "del", "dev", "eth1", "root"]]


def test_zero_delay_link_installs_nothing():
    topo = topology.load("small")
    plans = netem.host_plans(topo, [netem.Link("submit", "worker", rtt_ms=0)])
    assert all(len(cmds) == 1 for cmds in plans.values())


def test_parse_spec():
    link = netem.parse_spec("submit:worker:40ms:jitter=2ms:loss=0.5%:rate=1000mbit")
    assert (link.a, link.b, link.rtt_ms, link.jitter_ms, link.loss_pct, link.rate_mbit) == \
        ("submit", "worker", 40, 2, 0.5, 1000)


@pytest.mark.parametrize("spec", ["submit:worker", "submit:worker:fast", "a:b:10:colour=red",
                                  "submit:submit:10ms"])
def test_parse_spec_rejects_bad_specs(spec):
    with pytest.raises(ConfigError):
        netem.parse_spec(spec)


def test_unknown_group_in_plan():
    topo = topology.load("small")
    with pytest.raises(ConfigError):
        netem.host_plans(topo, [netem.Link("submit", "mars", rtt_ms=1)])


def test_an_rtt_label_is_whole_when_the_rtt_is():
    assert rtt_label(20.0) == 20 and isinstance(rtt_label(20.0), int)
    assert rtt_label("0") == 0 and isinstance(rtt_label("0"), int)
    assert rtt_label(80) == 80 and isinstance(rtt_label(80), int)
    assert rtt_label("12.5") == 12.5 and rtt_label(0.25) == 0.25


def test_a_host_with_many_impaired_links_names_its_bands_as_tc_reads_them():
    """tc reads a class's minor id as hex: the 7th impaired link of a host is band 10, `1:a`."""
    topo = topology.load("small")
    others = [h for h in topo.hosts if h != "submit"]
    links = [netem.Link("submit", h, rtt_ms=10 + i) for i, h in enumerate(others)]
    links += [netem.Link("submit", h, rtt_ms=50 + i, loss_pct=0.1) for i, h in enumerate(others)]
    submit = [" ".join(c) for c in netem.host_plans(topo, links)["submit"]]
    bands = 3 + len(links)
    assert bands >= 10 and any(f"prio bands {bands}" in t for t in submit)
    parents = [t.split(" parent ")[1].split()[0] for t in submit if " netem " in t]
    assert sorted(int(p.split(":")[1], 16) for p in parents) == list(range(4, bands + 1))
    assert "1:a" in parents and "1:10" not in parents
    flows = {t.split(" flowid ")[1] for t in submit if " flowid " in t}
    assert flows == set(parents)
    assert netem.prio_class(15) == "1:f" and netem.netem_handle(10) == "a0:"
