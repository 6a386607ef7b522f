"""Remote hypervisors at bring-up: every pre-flight refusal (the hypervisors' virsh and shells
faked), the dry run, the site network's set-up and removal on each hypervisor, and where the
rest of the testbed asks the right libvirt: domains, first SSH contact, snapshots, pausing,
the results manifest."""
import types

import pytest
import yaml

from testbed.machines import domains, fabric, hypervisor_preflight, lifecycle, provision, snapshots
from testbed.machines.hypervisor_preflight import Ran
from testbed.model import profiles, topology
from testbed.model.errors import TestbedError
from testbed.model.state import TestbedState
from testbed.remote.site import Site
from tests.hypervisor_sites import LAB2, MEMSTATS, TWO, FakeHypervisors, capabilities, two

HERE = "qemu:///system"


def box_of(tmp_path, size):
    """A box whose disk image has `size` bytes (sparse)."""
    with open(tmp_path / "box.img", "wb") as f:
        f.truncate(size)
    return types.SimpleNamespace(dir=tmp_path)


def refusal(fake, topo=None, accelerator="tcg", **kw):
    with pytest.raises(TestbedError) as err:
        hypervisor_preflight.preflight(topo or two(), accelerator, run=fake, **kw)
    text = str(err.value)
    assert "\n" not in text and text.endswith("(nothing was changed)")
    return text


def test_a_site_that_fits_passes_with_what_each_hypervisor_said():
    fake = FakeHypervisors()
    facts = hypervisor_preflight.preflight(two(), "tcg", run=fake)
    assert facts["lab2"]["daemon"] == "9.0.0" and facts["lab2"]["free_mb"] == 10100
    assert facts["lab2"]["domain_types"] == ["kvm", "qemu"] and facts["lab2"]["pool_free_gb"] == 88.0
    # the libvirt of lab2 asked through its URI; the shell probe on both ends of the VXLAN
    assert {c[1] for c in fake.calls if c[0] == LAB2} == {"version", "capabilities", "nodememstats", "pool-info"}
    assert {c[0] for c in fake.did("probe")} == {"here", "192.0.2.2"}
    ssh = fake.did("probe", "192.0.2.2")[0][2]
    assert ssh[:9] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-i", "/root/.ssh/id_lab", "-o",
                       "IdentitiesOnly=yes"] and ssh[-3:-1] == ["root", "192.0.2.2"]


def test_an_unreachable_hypervisor_is_one_line_and_asked_nothing_more():
    fake = FakeHypervisors({(LAB2, "version"): Ran(1, "", "error: failed to connect to the hypervisor\nerror: Cannot "
                                                           "recv data: ssh: connect to host 192.0.2.2 port 22: No route to host")})
    text = refusal(fake)
    assert text == (f"hypervisor lab2 ({LAB2}): unreachable: virsh -c {LAB2} version --daemon: error: Cannot recv data: ssh: "
                    "connect to host 192.0.2.2 port 22: No route to host (nothing was changed)")
    assert [c[1] for c in fake.calls if c[0] in (LAB2, "192.0.2.2")] == ["version"]


@pytest.mark.parametrize("caps, accelerator, words", [
    (Ran(0, "not xml", ""), "tcg", "no KVM/TCG information: virsh capabilities gave no capabilities XML"),
    (Ran(1, "", "error: access denied"), "tcg", "no KVM/TCG information: virsh capabilities gave error: access denied"),
    (Ran(0, capabilities("u", types=("qemu",), arch="aarch64"), ""), "tcg", "offer no x86_64 guests, neither KVM nor TCG"),
    (Ran(0, capabilities("u", types=("qemu",)), ""), "kvm", "has no KVM (its capabilities offer TCG only) and the plan "
                                                             "uses KVM, as this machine has it: bring the site up with TESTBED_ACCEL=tcg"),
])
def test_kvm_and_tcg_come_from_the_hypervisors_capabilities(caps, accelerator, words):
    text = refusal(FakeHypervisors({(LAB2, "capabilities"): caps}), accelerator=accelerator)
    assert text.startswith(f"hypervisor lab2 ({LAB2}): ") and words in text


def test_kvm_there_is_taken_when_the_plan_uses_it():
    assert hypervisor_preflight.preflight(two(), "kvm", run=FakeHypervisors())["lab2"]["domain_types"] == ["kvm", "qemu"]


def test_tcg_guests_need_a_libvirt_that_writes_the_tb_cache():
    old = Ran(0, "Running hypervisor: QEMU 5.2.0\nRunning against daemon: 7.0.0\n", "")
    assert "runs libvirt 7.0.0; the plan's TCG guests need libvirt >= 8.0 (<tcg><tb-cache>), or TESTBED_TB_CACHE_MB=0" \
        in refusal(FakeHypervisors({(LAB2, "version"): old}), tb_cache=128)
    assert hypervisor_preflight.preflight(two(), "tcg", run=FakeHypervisors({(LAB2, "version"): old}), tb_cache=0)


def test_not_enough_free_memory_for_the_vms_placed_there():
    low = Ran(0, "total  : 4096000 KiB\nfree   : 2048000 KiB\nbuffers: 0 KiB\ncached : 1024000 KiB\n", "")
    text = refusal(FakeHypervisors({(LAB2, "nodememstats"): low}))
    # worker2 1024 + dtn 2048, each with QEMU's 64
    assert ("has 3000 MB free (virsh nodememstats: free + buffers + cached), its VMs (worker2 1024 MB, "
            "dtn 2048 MB) need 3200 MB with QEMU's own 64 MB each") in text
    assert "could not be read" in refusal(FakeHypervisors({(LAB2, "nodememstats"): Ran(0, "garbage", "")}))


@pytest.mark.parametrize("answer, words", [
    (Ran(1, "", "error: failed to get pool 'default'"), "has no storage pool default (the box image and the VMs' disks go there"),
    (Ran(0, "Name: default\nState:          inactive\n", ""), f"its storage pool default is inactive (virsh -c {LAB2} pool-start default)"),
    (Ran(0, "Name: default\nState:          running\nAvailable:      2.50 GiB\n", ""),
     "its storage pool default has 2.5 GB free; the box image and its VMs' data disks need 5 GB"),
])
def test_the_storage_pool_the_box_is_uploaded_to(answer, words, tmp_path):
    text = refusal(FakeHypervisors({(LAB2, "pool-info"): answer}), box=box_of(tmp_path, 2**30))
    assert words in text


@pytest.mark.parametrize("where, answer, words", [
    ("192.0.2.2", Ran(255, "", "root@192.0.2.2: Permission denied (publickey)."),
     "the VXLAN set-up cannot run a shell on its SSH login (-l root 192.0.2.2): root@192.0.2.2: Permission denied"),
    ("192.0.2.2", Ran(0, "missing=bridge\nroot=yes\nprobe=ok\n", ""), "lacks bridge (iproute2, libvirt-clients)"),
    ("192.0.2.2", Ran(0, "vxlan=no\nroot=yes\nprobe=ok\n", ""), "its kernel has no vxlan module"),
    ("here", Ran(0, "root=no\nprobe=ok\n", ""), "the VXLAN set-up needs root: run the testbed as root"),
])
def test_the_vxlan_set_up_needs_its_tools_on_both_ends(where, answer, words):
    text = refusal(FakeHypervisors({(where, "probe"): answer}))
    who = f"hypervisor lab2 ({LAB2})" if where != "here" else "hypervisor here (qemu:///system)"
    assert text.startswith(f"{who}: ") and words in text


def test_a_user_without_sudo_is_refused():
    def admin(d):
        d["hypervisors"]["lab2"]["uri"] = "qemu+ssh://admin@192.0.2.2/system"
    text = refusal(FakeHypervisors({("192.0.2.2", "probe"): Ran(0, "root=no\nprobe=ok\n", "")}), topo=two(admin))
    assert "log in as root or as a user with sudo without a password (admin)" in text


def test_another_name_of_this_machine_is_refused_by_its_libvirt_uuid():
    text = refusal(FakeHypervisors(uuids={LAB2: "uuid-here"}))
    assert text.startswith(f"hypervisor lab2 ({LAB2}): is the same machine as hypervisor here (libvirt host UUID uuid-here)")


def test_every_refused_hypervisor_is_named_in_the_one_line():
    def third(d):
        d["hypervisors"]["lab3"] = {"uri": "qemu+ssh://root@192.0.2.3/system"}
        d["hosts"]["cm1"]["hypervisor"] = "lab3"
    lab3 = "qemu+ssh://root@192.0.2.3/system"
    fake = FakeHypervisors({(LAB2, "version"): Ran(1, "", "error: timeout"),
                            (lab3, "nodememstats"): Ran(0, "free : 100 KiB\n", ""),
                            (lab3, "pool-info"): Ran(1, "", "no pool")}, uuids={lab3: "uuid-lab3"})
    text = refusal(fake, topo=two(third))
    assert text.count("hypervisor lab2") == 1 and text.count("hypervisor lab3") == 1
    assert "has 0 MB free" in text and "has no storage pool default" in text


def test_localhost_over_ssh_gets_the_libvirt_checks_but_no_memory_or_vxlan_ones():
    def loopback(d):
        d["hypervisors"] = {"second": {"uri": "qemu+ssh://root@localhost/system"}}
        d["hosts"]["worker2"]["hypervisor"] = d["hosts"]["dtn"]["hypervisor"] = "second"
    fake = FakeHypervisors(uuids={"qemu+ssh://root@localhost/system": "uuid-here"})
    hypervisor_preflight.preflight(two(loopback), "tcg", run=fake)
    assert {c[1] for c in fake.calls} == {"version", "capabilities", "pool-info"}


# --- the dry run -------------------------------------------------------------------------------
@pytest.fixture
def fake_box(tmp_path):
    (tmp_path / "vmlinuz").write_bytes(b"kernel")
    (tmp_path / "initrd.img").write_bytes(b"initrd")
    return types.SimpleNamespace(name="grid-testbed-debian13-abc", kernel=tmp_path / "vmlinuz",
                                 initrd=tmp_path / "initrd.img", built=True, dir=tmp_path)


def test_the_dry_run_lists_each_hypervisors_changes_and_makes_none(tmp_path, monkeypatch, fake_box):
    from testbed.services import health
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", "/var/log/tb-console")
    fake = FakeHypervisors({("here", "link plan"): Ran(0, "would\tip link add tbvx-two type vxlan id 2\n", "")})
    monkeypatch.setattr(hypervisor_preflight, "run_command", fake)
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)
    monkeypatch.setattr(lifecycle.topology, "check_fits", lambda topo: 0)
    monkeypatch.setattr(lifecycle.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(lifecycle, "box_for", lambda spec: fake_box)
    for name in ("claim_domains",):
        monkeypatch.setattr(lifecycle.domains, name, lambda *a, **k: pytest.fail("libvirt domains touched"))
    monkeypatch.setattr(lifecycle.plan, "write", lambda *a, **k: pytest.fail("plan written"))
    monkeypatch.setattr(lifecycle.provisioning, "Provisioner", lambda *a, **k: pytest.fail("provisioned"))
    out = []
    assert lifecycle.up(Site(two()), profiles.load("default"), health, dry_run=True, echo=out.append) == 0
    box = fake_box.name
    assert out == [
        "checking hypervisors here, lab2",
        "VM submit: would create it on hypervisor here (768 MB, 1 vCPU, site address 10.170.0.10)",
        "VM cm1: would create it on hypervisor here (768 MB, 1 vCPU, site address 10.170.0.11)",
        "VM worker1: would create it on hypervisor here (768 MB, 1 vCPU, site address 10.170.0.12)",
        "VM worker2: would create it on hypervisor lab2 (1024 MB, 1 vCPU, site address 10.170.0.13)",
        "VM dtn: would create it on hypervisor lab2 (2048 MB, 1 vCPU, site address 10.170.0.14)",
        "hypervisor here (qemu:///system), this machine: submit (768 MB), cm1 (768 MB), worker1 (768 MB): would change:",
        "  define and start libvirt network tb-two-site (isolated, bridge 10.170.0.1, MTU 1450)",
        "  ip link add tbvx-two type vxlan id 2",
        f"hypervisor lab2 ({LAB2}), libvirt 9.0.0, QEMU 7.2.0, KVM and TCG, 10100 MB free, pool default 88 GB free: "
        "worker2 (1024 MB), dtn (2048 MB): would change:",
        "  create /var/log/tb-console (the guests' consoles) if missing",
        f"  copy the box's kernel to /var/lib/libvirt/boot/{box}-vmlinuz",
        f"  copy the box's initrd to /var/lib/libvirt/boot/{box}-initrd.img",
        f"  upload the box image {box} into pool default if it is not there (vagrant-libvirt, on the first VM)",
        "  define and start libvirt network tb-two-site (isolated, bridge 10.170.0.2, MTU 1450)",
        "dry run: nothing was changed (5 VMs, 0 existing hosts, 2 hypervisors)"]
    changing = {"net-define", "net-start", "net-destroy", "net-undefine", "link up", "link down", "upload", "console"}
    assert not [c for c in fake.calls if c[1] in changing]
    assert {c[1] for c in fake.calls if c[1].startswith("link")} == {"link plan"}


# --- the set-up before Vagrant, and its removal -----------------------------------------------
def test_apply_sets_up_each_hypervisor_once(tmp_path, fake_box):
    topo, state = two(), TestbedState("two", root=tmp_path / "state")
    fake = FakeHypervisors()
    out = []
    fabric.join(topo, state, fake_box, run=fake, console_dir="/var/log/tb-console", echo=out.append)
    lab2 = [c[1] for c in fake.calls if c[0] in (LAB2, "192.0.2.2")]
    assert lab2 == ["console", "boot", "upload", "upload", "net-dumpxml", "net-define", "net-start", "link up"]
    uploads = fake.did("upload")
    assert [u[3] for u in uploads] == [b"kernel", b"initrd"]
    assert f"/var/lib/libvirt/boot/{fake_box.name}-vmlinuz" in uploads[0][2][-1]
    here = [c[1] for c in fake.calls if c[0] in (HERE, "here")]
    assert here == ["net-dumpxml", "net-define", "net-start", "link up"]
    # the network defined from the rendered file; the script given its settings on stdin
    defined = fake.did("net-define", LAB2)[0][2][-1]
    assert defined == str(state.dir / "hypervisors" / "lab2" / "site-network.xml")
    link = fake.did("link up", "here")[0]
    assert link[2] == ["bash", "-s", "up"]
    assert link[3].startswith("# Rendered by `testbed` for hypervisor here") and "PEERS='192.0.2.2'" in link[3]
    assert "set -euo pipefail" in link[3]
    assert fake.did("link up", "192.0.2.2")[0][2][-1] == "bash -s up"   # root: no sudo
    assert any("VXLAN port tbvx-two" in line and line.endswith("to 192.0.2.1") for line in out)
    # a second time: the networks are there and active, the box files in place
    fake.calls.clear()
    fake.answers[("192.0.2.2", "boot")] = Ran(0, "have=kernel\nhave=initrd\n", "")
    fabric.join(topo, state, fake_box, run=fake, console_dir="/var/log/tb-console", echo=out.append)
    assert not [c for c in fake.calls if c[1] in ("upload", "net-define", "net-start")]


def test_a_network_of_that_name_that_is_not_the_testbeds_is_refused(tmp_path, fake_box):
    vagrant_made = {"xml": "<network><name>tb-two-site</name><bridge name='virbr3'/>"
                           "<ip address='10.170.0.1' netmask='255.255.255.0'/></network>", "active": True}
    fake = FakeHypervisors(networks={(HERE, "tb-two-site"): vagrant_made})
    with pytest.raises(TestbedError) as err:
        fabric.join(two(), TestbedState("two", root=tmp_path), fake_box, run=fake, echo=lambda *_: None)
    assert str(err.value) == ("hypervisor here (qemu:///system): libvirt network tb-two-site exists and is not the "
                              "testbed's site network (its MTU is not 1450); `testbed -t two down` first")
    assert not fake.did("link up") and not fake.did("net-define")


def test_the_rendered_networks_are_isolated_and_joined_end_to_end():
    import xml.etree.ElementTree as ET
    topo = two()
    files = {name: fabric.render_files(topo, hv) for name, hv in topo.hypervisors.items()}
    for name, bridge in (("here", "10.170.0.1"), ("lab2", "10.170.0.2")):
        net = ET.fromstring(files[name]["site-network.xml"])
        assert net.findtext("name") == "tb-two-site"
        assert net.find("forward") is None and net.find("ip/dhcp") is None   # no NAT, no route, no DHCP
        assert net.find("ip").attrib == {"address": bridge, "netmask": "255.255.255.0"}
        assert net.find("mtu").get("size") == "1450"
    env = {name: dict(line.split("=", 1) for line in f["site-link.env"].splitlines() if "=" in line and
                      not line.startswith("#")) for name, f in files.items()}
    assert env["here"]["LOCAL"] == env["lab2"]["PEERS"] == "'192.0.2.1'"
    assert env["lab2"]["LOCAL"] == env["here"]["PEERS"] == "'192.0.2.2'"
    assert env["here"]["VNI"] == env["lab2"]["VNI"] and env["here"]["DEV"] == "'eth0'" and env["lab2"]["DEV"] == "'eth1'"
    other = two(lambda d: d["networks"].update(site="10.171.0.0/24"))
    assert fabric.vni(other) != fabric.vni(topo)
    assert len(fabric.device(topology.parse({**TWO, "name": "abcdefghij"}, "t.yaml"))) <= 15


def test_remove_takes_the_ports_down_and_the_other_machines_networks_away():
    fake = FakeHypervisors()
    fabric.leave(two(), run=fake, echo=lambda *_: None)
    assert {c[0] for c in fake.did("link down")} == {"here", "192.0.2.2"}
    gone = [(c[0], c[1], c[2][-1]) for c in fake.calls if c[1] in ("net-destroy", "net-undefine")]
    assert gone == [(LAB2, "net-destroy", "tb-two-mgmt"), (LAB2, "net-undefine", "tb-two-mgmt"),
                    (LAB2, "net-destroy", "tb-two-site"), (LAB2, "net-undefine", "tb-two-site")]


# --- the rest of the testbed asks the right libvirt -------------------------------------------
class UriVirsh:
    def __init__(self, lists):
        self.lists, self.calls = lists, []

    def __call__(self, *args, timeout=None, uri=HERE):
        self.calls.append((uri, args))
        out = "\n".join(self.lists.get(uri, [])) if args[:2] == ("list", "--all") else "running\n"
        return types.SimpleNamespace(stdout=out, stderr="", returncode=0)


def test_domains_of_a_remote_vm_are_asked_through_its_uri(monkeypatch):
    virsh = UriVirsh({HERE: ["tb-two-cm1"], LAB2: ["tb-two-worker2", "tb-two-dtn"]})
    monkeypatch.setattr(domains, "_virsh", virsh)
    topo = two()
    assert domains.state(topo, "worker2") == "running" and virsh.calls[-1] == (LAB2, ("domstate", "tb-two-worker2"))
    domains.state(topo, "cm1")
    assert virsh.calls[-1] == (HERE, ("domstate", "tb-two-cm1"))
    assert domains.topology_domains(topo) == ["tb-two-cm1", "tb-two-worker2", "tb-two-dtn"]
    virsh.calls.clear()
    virsh.lists = {}
    domains.sweep_libvirt(topo, ["tb-two-dtn"])
    assert (LAB2, ("destroy", "tb-two-dtn")) in virsh.calls and (LAB2, ("vol-list", "default")) in virsh.calls
    assert (HERE, ("destroy", "tb-two-dtn")) not in virsh.calls


def test_first_contact_with_a_remote_guest_goes_through_its_hypervisor(tmp_path, monkeypatch):
    monkeypatch.setattr(domains, "management_address", lambda topo, host: "192.168.170.33")
    ssh = provision.first_contact_ssh(Site(two(), root=tmp_path), ["worker2", "cm1"])
    proxy = [a for a in ssh.argv("worker2") if a.startswith("ProxyCommand=")]
    assert proxy == ["ProxyCommand=ssh -o BatchMode=yes -o ConnectTimeout=10 -i /root/.ssh/id_lab -o "
                     "IdentitiesOnly=yes -l root -W %h:%p 192.0.2.2"]
    assert ssh.argv("worker2")[-1] == "vagrant@192.168.170.33"
    assert not [a for a in ssh.argv("cm1") if a.startswith("ProxyCommand=")]


def test_a_whole_site_snapshot_refuses_vms_of_another_machine():
    with pytest.raises(TestbedError) as err:
        snapshots.check_snapshottable(two())
    assert str(err.value).startswith(f"snapshot: two cannot be saved: worker2 (hypervisor lab2 ({LAB2})), dtn "
                                     f"(hypervisor lab2 ({LAB2})) run on another machine's hypervisor")


def test_pausing_and_pinning_leave_the_guests_of_another_machine_alone():
    from testbed.harness import quiet
    topo = two()
    assert quiet.hosts_to_pause(topo, uses=["submit"]) == []          # the remote dtn is not paused
    assert quiet.pin_plan(topo, ["submit", "worker"], [0, 1]) == {"submit": "0", "worker1": "1"}
    assert quiet.hosts_to_pause(topology.load("small"), uses=["submit"]) == ["dtn"]


def test_the_manifest_records_each_hosts_hypervisor(tmp_path, monkeypatch):
    from testbed.harness import registry, runner
    from testbed.results import runs
    monkeypatch.setattr(runs, "RESULTS_ROOT", tmp_path / "results")
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(runner.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(runner.disks, "describe", lambda topo: {})
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(TWO))
    run = runner.open_run(Site(topology.load(path)), registry.get("smoke"), [profiles.load("default")], "ci", [])
    placement = run.manifest()["placement"]
    assert placement["worker2"] == {"hypervisor": "lab2", "uri": LAB2}
    assert placement["cm1"] == {"hypervisor": "here", "uri": HERE}
    small = runner.open_run(Site(topology.load("small")), registry.get("smoke"), [profiles.load("default")], "ci", [])
    assert small.manifest()["placement"] == {h: {"hypervisor": "local", "uri": HERE} for h in topology.load("small").hosts}


def test_the_shell_probe_runs_here_and_names_a_missing_tool(tmp_path):
    import subprocess
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ip", "virsh"):   # `bridge` is missing (iproute2 puts it under /usr/sbin only)
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
    out = subprocess.run(["bash", "-c", hypervisor_preflight.SHELL_PROBE], env=env, capture_output=True, text=True, timeout=30)
    got = hypervisor_preflight.parse_probe(out.stdout)
    assert got["probe"] == "ok" and got["missing"] == ["bridge"] and got["root"] in ("yes", "sudo", "no")
