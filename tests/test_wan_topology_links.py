"""The topology's own WAN links are in force after bring-up and under every suite's links."""
from testbed.model import topology
from testbed.network import netem, wan
from testbed.remote.ssh import Result


class RecordingSSH:
    def __init__(self):
        self.scripts = {}

    def run_many(self, commands, check=False, timeout=None):
        self.scripts.update(commands)
        return {h: Result(h, 0, "", "") for h in commands}

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        return Result(host, 0, "64 bytes from x: icmp_seq=1 ttl=64 time=20.5 ms\n", "")


def test_a_suite_link_replaces_the_topology_link_of_the_same_pair_and_keeps_the_others():
    topo = topology.load("default")
    links = wan.effective_links(topo, [netem.Link("worker", "submit", 80.0)])
    by_pair = {frozenset((link.a, link.b)): link.rtt_ms for link in links}
    assert by_pair == {frozenset(("submit", "worker")): 80.0, frozenset(("dtn", "origin")): 20.0}


def test_clear_goes_back_to_the_topology_links_on_the_guests(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    from testbed.model.state import TestbedState
    topo, ssh = topology.load("default"), RecordingSSH()
    state = TestbedState("default")
    kept = wan.clear(topo, ssh, state)
    assert [(link.a, link.b, link.rtt_ms) for link in kept if link.rtt_ms] == [("dtn", "origin", 20.0)]
    assert "netem delay 10ms" in ssh.scripts["origin"] and "netem" in ssh.scripts["dtn"]
    assert "netem" not in ssh.scripts["submit"]
    assert wan.in_force(state)["links"][1]["rtt_ms"] == 20.0


def test_the_sustained_rate_is_taken_over_the_output_window_only():
    from testbed.network import sampler
    series = [(1.0, 0.0), (2.0, 5.0), (3.0, 9.0), (4.0, 9.0), (5.0, 0.0), (6.0, 0.0)]
    started = 1000.0  # epoch of the first sample
    window = sampler.in_window(series, started, first=1002.0, last=1004.0, slack=0)
    assert window == [(2.0, 5.0), (3.0, 9.0), (4.0, 9.0)]
    assert sampler.in_window(series, None, 1002.0, 1004.0) == series
    assert sampler.in_window(series, started, 2000.0, 2001.0) == series  # no overlap: all


def test_the_lan_rtt_takes_away_what_the_links_in_force_emulate_between_two_hosts(tmp_path, monkeypatch):
    """`default` puts its origin 20 ms behind the DTN: a suite that measures its base RTT
    there must not count those 20 ms as the VMs' own latency."""
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    from testbed.model.state import TestbedState
    topo, state = topology.load("default"), TestbedState("default")
    assert wan.links_in_force(topo, state) == wan.effective_links(topo, [])   # nothing recorded yet
    links = wan.links_in_force(topo, state)
    dtn, origin = topo.role_host("dtn").name, topo.role_host("origin").name
    assert wan.emulated_rtt(topo, links, dtn, origin) == 20.0
    assert wan.emulated_rtt(topo, links, origin, dtn) == 20.0
    assert wan.emulated_rtt(topo, links, "submit", "dtn") == 0.0
    wan.set_links(topo, RecordingSSH(), state, [netem.Link("dtn", "origin", 40.0)], count=1)
    assert wan.emulated_rtt(topo, wan.links_in_force(topo, state), dtn, origin) == 40.0

    from testbed.harness import session
    s = session.Session.__new__(session.Session)
    s.topo, s.state, s.ssh = topo, state, None
    # a moment's load on the host delayed some samples (median 55 ms): the base is the least
    monkeypatch.setattr(session.wan, "measure", lambda *a, **k: [{"measured_ms": 55.0, "min_ms": 41.25}])
    assert s.measure_rtt(dtn, origin) == 41.25 and s.lan_rtt(dtn, origin) == 1.25
