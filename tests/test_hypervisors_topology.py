"""Remote hypervisors in the topology (`hypervisors:`, `hypervisor:`): every refusal, one
line naming file and field; where each VM goes; the plan and what the Vagrantfile makes of
it for a two-hypervisor site; the default topologies' plans without a trace of it."""
import json
import os
import subprocess
import time

import pytest

from testbed import PROJECT_ROOT
from testbed.cli import main
from testbed.machines import plan
from testbed.machines.patched_box import box_for
from testbed.model import constants as c, hypervisors, profiles, topology
from testbed.model.errors import ConfigError
from testbed.model.state import TestbedState
from tests.hypervisor_sites import LAB2, TWO, two


def refused(mutate):
    with pytest.raises(ConfigError) as err:
        two(mutate)
    assert "\n" not in str(err.value)
    return err.value


def test_two_hypervisors_place_each_vm_and_join_by_vxlan():
    topo = two()
    assert {n: topo.hypervisor_of(n).name for n in topo.hosts} == {
        "submit": "here", "cm1": "here", "worker1": "here", "worker2": "lab2", "dtn": "lab2"}
    lab2 = topo.hypervisors["lab2"]
    assert (lab2.ssh_user, lab2.ssh_host, lab2.keyfile, lab2.address) == ("root", "192.0.2.2", "/root/.ssh/id_lab",
                                                                          "192.0.2.2")
    assert [h.name for h in topo.remote_vm_hosts] == ["worker2", "dtn"]
    assert [h.name for h in topo.vm_hosts_here] == ["submit", "cm1", "worker1"]
    assert [hv.name for hv in topo.layout.joined] == ["here", "lab2"]
    assert topo.layout.bridges["here"] == "10.170.0.1"
    assert topo.layout.bridges[lab2.name] == "10.170.0.2"


def test_only_the_vms_of_this_machine_count_against_its_free_memory():
    topo = two()
    # submit 768 + cm1 768 + worker1 768, each + 64 of QEMU's: the 3072 MB of lab2's VMs are lab2's
    assert topology.check_fits(topo, free_mb=2496) == 2496
    with pytest.raises(ConfigError, match="plan needs 2496 MB of RAM but the host has 2495 MB free"):
        topology.check_fits(topo, free_mb=2495)


@pytest.mark.parametrize("uri, words", [
    ("qemu+tcp://192.0.2.2/system", "bad URI scheme 'qemu+tcp' in 'qemu+tcp://192.0.2.2/system': use qemu:///system"),
    ("xen+ssh://root@192.0.2.2/system", "bad URI scheme 'xen+ssh'"),
    ("192.0.2.2", "bad URI scheme '(none)'"),
    ("qemu+ssh://root@192.0.2.2/session", "the path must be /system"),
    ("qemu+ssh:///system", "names no host"),
    ("qemu+ssh://root@192.0.2.2:ssh/system", "the port is not a number"),
])
def test_a_bad_uri_is_refused_naming_the_field(uri, words):
    err = refused(lambda d: d["hypervisors"]["lab2"].update(uri=uri))
    assert err.field == "hypervisors.lab2.uri"
    assert words in err.problem


def test_qemu_system_with_a_host_is_refused():
    err = refused(lambda d: d["hypervisors"]["here"].update(uri="qemu://otherhost/system"))
    assert err.field == "hypervisors.here.uri" and "takes no host" in err.problem


def test_an_unknown_hypervisor_is_refused_naming_the_known_ones():
    err = refused(lambda d: d["hosts"]["worker2"].update(hypervisor="lab3"))
    assert str(err) == ("/sites/two.yaml: hosts.worker2.hypervisor: unknown hypervisor 'lab3' (here, lab2)")


def test_a_hypervisor_without_a_hypervisors_section_is_unknown():
    def mutate(d):
        del d["hypervisors"]
    err = refused(mutate)
    assert err.field == "hosts.worker2.hypervisor"
    assert "(the topology declares no hypervisors:)" in err.problem


def test_a_hypervisor_no_vm_uses_is_an_error():
    def mutate(d):
        d["hypervisors"]["lab3"] = {"uri": "qemu+ssh://root@192.0.2.3/system"}
    err = refused(mutate)
    assert str(err) == ("/sites/two.yaml: hypervisors.lab3: no VM is placed on it (no host says "
                        "`hypervisor: lab3`); remove it or place one")


def test_hypervisor_on_an_existing_host_is_refused():
    def mutate(d):
        d["hosts"]["lab9"] = {"roles": ["worker"], "hypervisor": "lab2",
                              "existing": {"address": "10.170.0.50", "user": "root", "key": "/k"}}
    err = refused(mutate)
    assert err.field == "hosts.lab9.hypervisor"
    assert "an existing host runs where it is" in err.problem


def test_another_machine_needs_this_machine_declared_with_its_address():
    def no_local(d):
        del d["hypervisors"]["here"]
    err = refused(no_local)
    assert err.field == "hypervisors" and "add an entry for it with uri: qemu:///system and address" in err.problem
    err = refused(lambda d: d["hypervisors"]["here"].pop("address"))
    assert err.field == "hypervisors.here.address" and err.problem.startswith("is required")


def test_a_hypervisor_named_by_dns_needs_its_address():
    err = refused(lambda d: d["hypervisors"]["lab2"].update(uri="qemu+ssh://root@lab2.example.org/system"))
    assert err.field == "hypervisors.lab2.address"
    assert "'lab2.example.org' is not an IPv4 address, and VXLAN sends to one" in err.problem
    topo = two(lambda d: d["hypervisors"]["lab2"].update(uri="qemu+ssh://root@lab2.example.org/system",
                                                         address="192.0.2.20"))
    assert topo.hypervisors["lab2"].address == "192.0.2.20"


@pytest.mark.parametrize("key, value, words", [
    ("address", "192.0.2.300", "is not an IPv4 address"),
    ("site_interface", "eth0; reboot", "is not a network interface name"),
    ("pool", "my pool", "is not a libvirt storage pool name"),
    ("vni", 5, "unknown key"),
])
def test_bad_hypervisor_fields_are_refused(key, value, words):
    err = refused(lambda d: d["hypervisors"]["lab2"].update({key: value}))
    assert err.field == f"hypervisors.lab2.{key}" and words in err.problem


def test_one_machine_under_two_names_is_refused():
    def same_host(d):
        d["hypervisors"]["lab3"] = {"uri": "qemu+ssh://admin@192.0.2.2/system"}
        d["hosts"]["cm1"]["hypervisor"] = "lab3"
    err = refused(same_host)
    assert err.field == "hypervisors.lab3.uri" and "hypervisors.lab2 too" in err.problem

    def same_address(d):
        d["hypervisors"]["lab3"] = {"uri": "qemu+ssh://root@lab3/system", "address": "192.0.2.2"}
        d["hosts"]["cm1"]["hypervisor"] = "lab3"
    err = refused(same_address)
    assert err.field == "hypervisors.lab3.address" and "also hypervisors.lab2's" in err.problem


def test_the_name_local_is_this_machines():
    def mutate(d):
        d["hypervisors"]["local"] = d["hypervisors"].pop("lab2")
        d["hosts"]["worker2"]["hypervisor"] = d["hosts"]["dtn"]["hypervisor"] = "local"
    assert refused(mutate).field == "hypervisors.local.uri"


def test_at_most_nine_hypervisors_join_the_site_network():
    def many(d):
        for i in range(3, 11):
            d["hypervisors"][f"lab{i}"] = {"uri": f"qemu+ssh://root@192.0.2.{i}/system"}
            d["hosts"][f"w{i}"] = {"roles": ["worker"], "hypervisor": f"lab{i}"}
    err = refused(many)
    assert err.field == "hypervisors" and "10 hypervisors join the site network; at most 9" in err.problem


def test_an_existing_host_on_a_hypervisors_site_bridge_is_refused():
    def mutate(d):
        d["hosts"]["lab9"] = {"roles": ["worker"],
                              "existing": {"address": "10.170.0.2", "user": "root", "key": "/k"}}
    err = refused(mutate)
    assert err.field == "hosts.lab9.existing.address" and "the site bridge of hypervisor lab2" in err.problem


def test_localhost_over_ssh_is_this_machines_libvirt_and_needs_no_vxlan():
    def loopback(d):
        d["hypervisors"] = {"second": {"uri": "qemu+ssh://root@localhost/system"}}
        d["hosts"]["worker2"]["hypervisor"] = d["hosts"]["dtn"]["hypervisor"] = "second"
    topo = two(loopback)
    second = topo.hypervisors["second"]
    assert second.loopback and second.on_this_machine and not second.local
    assert topo.layout.joined == ()
    assert [h.name for h in topo.remote_vm_hosts] == ["worker2", "dtn"]
    assert len(topo.vm_hosts_here) == 5 and topo.vm_hosts_elsewhere == []


def test_the_cli_says_a_bad_hypervisor_in_one_line_with_exit_code_2(tmp_path, capsys):
    import yaml
    data = json.loads(json.dumps(TWO))
    data["hypervisors"]["lab2"]["uri"] = "qemu+tls://192.0.2.2/system"
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["-t", str(path), "topology", "show", "--no-ram-check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"testbed: {path}: hypervisors.lab2.uri: bad URI scheme 'qemu+tls'")


def test_the_shipped_topologies_have_every_vm_here():
    for name in ("default", "small"):
        topo = topology.load(name)
        assert topo.hypervisors == {} and topo.remote_vm_hosts == [] and topo.layout.joined == ()
        assert {p["hypervisor"] for p in hypervisors.placement(topo).values()} == {"local"}


# --- the plan and the Vagrantfile ---------------------------------------------------------------
@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", str(tmp_path / "console"))
    return tmp_path


def build(topo):
    return plan.build(topo, profiles.load("default"), TestbedState(topo.name), accelerator="tcg",
                      box=box_for(topo.box_spec))


def test_the_plan_places_each_vm_and_carries_the_vxlan(state):
    topo = two(source=state / "two.yaml")
    data = build(topo)
    by_name = {h["name"]: h for h in data["hosts"]}
    assert by_name["cm1"]["hypervisor"] == {"name": "here", "uri": "qemu:///system", "storage_pool": "default"}
    box = data["box"]["name"]
    assert by_name["worker2"]["hypervisor"] == {
        "name": "lab2", "uri": LAB2, "storage_pool": "default",
        "kernel": f"{c.HYPERVISOR_BOOT_DIR}/{box}-vmlinuz", "initrd": f"{c.HYPERVISOR_BOOT_DIR}/{box}-initrd.img"}
    assert data["site_link"] == {"device": "tbvx-two", "vni": (10 << 16) + (170 << 8), "port": 4789, "mtu": 1450,
                                 "members": ["here", "lab2"]}
    assert data["hypervisors"]["lab2"]["site_bridge"] == "10.170.0.2"


def test_a_dtn_on_another_machine_gets_a_cache_mode_that_needs_no_probe(state, monkeypatch):
    monkeypatch.delenv("TESTBED_DISK_CACHE")
    data = build(two(source=state / "two.yaml"))
    assert data["data_disks"]["cache"] == c.DISK_CACHE_FALLBACK
    assert "hypervisor lab2" in data["data_disks"]["cache_why"] and "TESTBED_DISK_CACHE=none" in data["data_disks"]["cache_why"]


@pytest.mark.parametrize("name", ["default", "small"])
def test_a_topology_without_hypervisors_has_no_trace_of_them_in_its_plan(state, name):
    data = build(topology.load(name))
    assert "hypervisors" not in data and "site_link" not in data
    assert all("hypervisor" not in h for h in data["hosts"])


def test_guests_of_a_site_joined_by_vxlan_get_its_mtu():
    from testbed.machines import render
    profile = profiles.load("default")
    joined = two()
    for name in ("cm1", "worker2"):
        assert "    mtu 1450\n" in render.render_host_files(joined, profile, joined.hosts[name])["etc/network/interfaces"]
    small = topology.load("small")
    assert "mtu" not in render.render_host_files(small, profile, small.hosts["worker1"])["etc/network/interfaces"]


# A stand-in for Vagrant's configuration objects: records what the Vagrantfile sets on each
# machine's libvirt provider, never running a trigger.
VAGRANT_STUB = r'''
require "json"
class Rec
  def initialize; @set = {}; @subs = {}; @blocks = {}; end
  def to_h
    { "set" => @set, "subs" => @subs.transform_values(&:to_h),
      "blocks" => @blocks.transform_values { |l| l.map(&:to_h) } }
  end
  def method_missing(name, *args, **kw, &blk)
    n = name.to_s
    return (@set[n.chomp("=")] = args[0]) if n.end_with?("=")
    if blk && %w[configure provider define after].include?(n)
      child = Rec.new
      (@blocks[([n] + args.map(&:to_s)).join(" ")] ||= []) << child
      blk.call(child)
      return child
    end
    return (@subs[n] ||= Rec.new) if args.empty? && kw.empty? && !blk
    self
  end
  def respond_to_missing?(*) = true
end
module Vagrant
  def self.configure(_v)
    config = Rec.new
    yield config
    puts JSON.generate(config.to_h)
  end
end
load ARGV[0]
'''


def run_vagrantfile(topo, *args, **env):
    """The Vagrantfile evaluated on a written plan (its box taken as built), under VAGRANT_STUB."""
    if subprocess.run(["which", "ruby"], capture_output=True).returncode != 0:
        pytest.skip("no ruby here")
    path, data = plan.write(topo, profiles.load("default"), TestbedState(topo.name), accelerator="tcg",
                            box=box_for(topo.box_spec))
    data["box"]["built"] = True
    path.write_text(json.dumps(data))
    future = time.time() + 60   # newer than every input: the Vagrantfile does not rewrite it
    os.utime(path, (future, future))
    environ = {k: v for k, v in os.environ.items() if k != "TESTBED_MANAGED"}
    environ.update(TESTBED_TOPOLOGY=topo.name, TESTBED_TOPOLOGY_FILE=str(topo.source), **env)
    return subprocess.run(["ruby", "-e", VAGRANT_STUB, str(PROJECT_ROOT / "Vagrantfile"), *args], env=environ,
                          capture_output=True, text=True, timeout=60)


def vagrant_machines(state, topo):
    """{machine: what the Vagrantfile set on its libvirt provider} for a written plan."""
    out = run_vagrantfile(topo)
    assert out.returncode == 0, out.stderr
    config = json.loads(out.stdout)
    return {key.split(" ", 1)[1]: nodes[0]["subs"]["vm"]["blocks"]["provider libvirt"][0]["set"]
            for key, nodes in config["subs"]["vm"]["blocks"].items() if key.startswith("define ")}


def test_the_vagrantfile_connects_each_vm_to_its_hypervisor(state):
    import yaml
    path = state / "two.yaml"
    path.write_text(yaml.safe_dump(TWO))
    topo = topology.load(path)
    machines = vagrant_machines(state, topo)
    assert set(machines) == set(topo.hosts)
    box = box_for(topo.box_spec).name
    assert machines["worker2"]["uri"] == LAB2 and machines["dtn"]["storage_pool_name"] == "default"
    assert machines["dtn"]["kernel"] == f"{c.HYPERVISOR_BOOT_DIR}/{box}-vmlinuz"
    assert machines["cm1"]["uri"] == "qemu:///system" and "kernel" not in machines["cm1"]


def test_the_vagrantfile_sets_no_connection_for_a_topology_without_hypervisors(state):
    machines = vagrant_machines(state, topology.load("small"))
    assert set(machines) == set(topology.load("small").hosts)
    assert not any({"uri", "storage_pool_name", "kernel"} & set(m) for m in machines.values())


def test_a_plain_vagrant_up_of_a_site_across_machines_is_refused(state):
    import yaml
    path = state / "two.yaml"
    path.write_text(yaml.safe_dump(TWO))
    topo = topology.load(path)
    out = run_vagrantfile(topo, "up")
    assert out.returncode != 0 and "`./tb -t two up` prepares them (site network, VXLAN, box kernel)" in out.stderr
    assert run_vagrantfile(topo, "up", TESTBED_MANAGED="1").returncode == 0
    assert run_vagrantfile(topology.load("small"), "up").returncode == 0
