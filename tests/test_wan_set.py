"""`testbed wan set` takes a link's RTT, jitter, loss and rate as a topology declares them,
puts them in place with tc on both sides (checked through a fake SSH layer), and prints what
it configured beside the RTT it measured; robot's console fits the terminal."""
import os

import pytest

from testbed import cli
from testbed.cli import tuning_commands
from testbed.harness import registry, runner
from testbed.model import topology
from testbed.model.errors import ConfigError
from testbed.model.links import Link, describe, parse_links, parse_spec
from testbed.remote.site import Site
from testbed.remote.ssh import Result


@pytest.mark.parametrize("spec, want", [
    ("submit:worker:40ms", Link("submit", "worker", 40)),
    ("submit:worker:40", Link("submit", "worker", 40)),
    ("submit:worker:0.1s", Link("submit", "worker", 100)),
    ("submit:worker:rtt=40ms:jitter=2ms:loss=0.5%:rate=1gbit", Link("submit", "worker", 40, 2, 0.5, 1000)),
    ("submit:worker:40ms:rate=500kbit", Link("submit", "worker", 40, rate_mbit=0.5)),
    ("dtn:origin:loss=1%", Link("dtn", "origin", 0, loss_pct=1)),          # no RTT: loss only
    ("dtn:origin:rate=100mbit", Link("dtn", "origin", 0, rate_mbit=100)),
    ("submit:worker:rtt_ms=10:jitter_ms=1:loss_pct=2:rate_mbit=100", Link("submit", "worker", 10, 1, 2, 100)),
])
def test_a_spec_sets_what_a_topology_link_sets(spec, want):
    assert parse_spec(spec) == want


def test_a_spec_and_a_topology_entry_give_the_same_link():
    entry = {"between": ["submit", "worker"], "rtt_ms": 80, "jitter_ms": 1, "loss_pct": 0.1, "rate_mbit": 1000}
    assert parse_spec("submit:worker:80ms:jitter=1ms:loss=0.1%:rate=1000mbit") == parse_links([entry], "t.yaml")[0]


@pytest.mark.parametrize("spec, problem", [
    ("submit:worker", "expected A:B"),
    ("submit:worker:fast", "rtt 'fast' is not a number"),
    ("a:b:10:colour=red", "unknown property 'colour'"),
    ("a:b:10:rtt=5", "rtt is given twice"),
    ("a:b:10:5", "'5': name it"),
    ("a:b:loss=200%", "loss_pct must be <= 100, got 200.0"),
    ("a:b:rate=5tbit", "rate '5tbit' is not a number (Nkbit, Nmbit, Ngbit)"),
    ("a:b:jitter=1%", "jitter '1%' is not a number (Nms, Ns)"),
    ("submit:submit:10ms", "between must name two different host groups"),
    ("a::10", "expected A:B"),
])
def test_a_bad_spec_is_one_line_naming_it(spec, problem):
    with pytest.raises(ConfigError) as err:
        parse_spec(spec)
    assert str(err.value).startswith(f"wan set: {spec}: ") and problem in str(err.value)
    assert "\n" not in str(err.value)


def test_a_link_is_described_by_what_it_sets():
    assert describe(Link("a", "b", 40)) == "40 ms RTT"
    assert describe(Link("a", "b", 40, 2, 0.5, 1000)) == "40 ms RTT, jitter 2 ms, loss 0.5%, rate 1000 Mbit/s"


class FakeSSH:
    """Every host's script (run_many) and ping (run) recorded; ping answers with `rtt` ms."""

    def __init__(self, rtt=40.6):
        self.scripts, self.pings, self.rtt = {}, [], rtt

    def run_many(self, commands, check=False, timeout=None):
        self.scripts.update(commands)
        return {h: Result(h, 0, "", "") for h in commands}

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.pings.append((host, command))
        return Result(host, 0, "".join(f"64 bytes from x: icmp_seq={i} ttl=64 time={self.rtt + i / 10:.1f} ms\n"
                                       for i in range(5)), "")


@pytest.fixture
def small_site(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    site, ssh = Site(topology.load("small")), FakeSSH()
    site.ssh = lambda **_kw: ssh
    monkeypatch.setattr(tuning_commands, "_site", lambda args, change=None: site)
    return site.topo, ssh, site.state


def test_wan_set_puts_every_property_in_netem_on_both_sides(small_site, capsys):
    topo, ssh, state = small_site
    assert cli.main(["-t", "small", "wan", "set", "submit:worker:40ms:jitter=1ms:loss=1%:rate=100mbit"]) == 0
    worker_ip, submit_ip = topo.hosts["worker1"].site_ip, topo.hosts["submit"].site_ip
    netem = ('tc qdisc add dev "$dev" parent 1:4 handle 40: netem delay 20ms 0.5ms distribution normal '
             'loss 1% rate 100mbit limit 1000')
    for host, peer in (("submit", worker_ip), ("worker1", submit_ip)):
        script = ssh.scripts[host]
        assert script.index('tc qdisc del dev "$dev" root') < script.index(netem)
        assert f"u32 match ip dst {peer}/32 flowid 1:4" in script
    assert "netem" not in ssh.scripts["cm1"] and "netem" not in ssh.scripts["dtn"]   # only the link's two sides
    assert ssh.pings == [("submit", f"ping -n -c 20 -i 0.2 -W 2 {worker_ip}")]
    out = capsys.readouterr().out
    assert "submit<->worker  40 ms RTT, jitter 1 ms, loss 1%, rate 100 Mbit/s  submit->worker1  40.8" in out
    recorded = tuning_record(state)
    assert recorded == [{"a": "submit", "b": "worker", "rtt_ms": 40.0, "jitter_ms": 1.0, "loss_pct": 1.0,
                         "rate_mbit": 100.0}]
    assert cli.main(["-t", "small", "wan", "show"]) == 0
    assert "submit <-> worker: 40 ms RTT, jitter 1 ms, loss 1%, rate 100 Mbit/s" in capsys.readouterr().out


def test_wan_set_with_loss_alone_installs_netem_without_delay(small_site):
    topo, ssh, _state = small_site
    assert cli.main(["-t", "small", "wan", "set", "submit:worker:loss=2%"]) == 0
    assert 'netem delay 0ms loss 2% limit 1000' in ssh.scripts["submit"]


def test_wan_set_refuses_a_bad_spec_before_touching_the_site(monkeypatch, capsys):
    monkeypatch.setattr(tuning_commands, "_site", lambda args, change=None: pytest.fail("the site was touched"))
    assert cli.main(["-t", "small", "wan", "set", "submit:worker:40ms:loss=lots"]) == 2
    err = capsys.readouterr().err
    assert err == "testbed: wan set: submit:worker:40ms:loss=lots: loss 'lots' is not a number (N%)\n"


def test_wan_set_names_an_unknown_host_group(small_site, capsys):
    assert cli.main(["-t", "small", "wan", "set", "submit:mars:10ms"]) == 2
    assert "unknown host group 'mars'" in capsys.readouterr().err


def tuning_record(state):
    import json
    return json.loads(state.wan_record.read_text())["links"]


@pytest.mark.parametrize("columns, want", [(80, 80), (132, 132), (20, runner.MIN_CONSOLE_WIDTH)])
def test_robot_gets_the_terminals_width(columns, want):
    size = os.terminal_size((columns, 24))
    assert runner.console_width(size) == want
    argv = runner.robot_argv(registry.get("e1"), "ci", "/tmp/r", width=runner.console_width(size))
    assert argv[argv.index("--consolewidth") + 1] == str(want)


def test_robot_follows_columns_when_not_given_a_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "77")
    argv = runner.robot_argv(registry.get("e1"), "ci", "/tmp/r")
    assert argv[argv.index("--consolewidth") + 1] == "77"
