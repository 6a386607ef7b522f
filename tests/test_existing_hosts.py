"""Existing hosts (topology `existing:`): the schema, every refusal before anything changes
(SSH faked), the dry run, `down`, snapshots, the plan the Vagrantfile reads, the bundle."""
import copy
import json
import tarfile
import time

import pytest
import yaml

from testbed.machines import existing, ledger, lifecycle, plan, render, snapshots
from testbed.machines.patched_box import box_for
from testbed.model import constants as c, profiles, topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.model.state import TestbedState, state_root
from testbed.remote.site import Site
from testbed.remote.ssh import SSH, Result

OWNER = "controller:/work/checkout"
BASE = {
    "name": "mixed",
    "networks": {"management": "192.168.170.0/24", "site": "10.170.0.0/24"},
    "hosts": {
        "submit": {"roles": ["submit", "origin"], "files": 2, "file_mb": 2},
        "cm1": {"roles": ["cm", "ccb"]},
        "cm2": {"roles": ["cm", "ccb"]},
        "worker1": {"roles": ["worker"], "startds": 2, "slots_per_startd": 8},
        "lab1": {"roles": ["worker"], "memory_mb": 1024, "cpus": 2,
                 "existing": {"address": "192.168.1.20", "user": "admin", "key": "keys/lab", "interface": "ens4"}},
        "lab2": {"roles": ["worker"], "existing": {"address": "10.170.0.50", "user": "root", "key": "/k/lab2"}},
    },
}


def parse(mutate=None, source="/sites/mixed.yaml"):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return topology.parse(data, source)


def _key(tmp_path, mode=0o600):
    key = tmp_path / "id_lab"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    key.chmod(mode)
    return key


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    """The mixed topology with real key files, its state under tmp_path."""
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(topology, "host_free_memory_mb", lambda: 64 * 1024)
    key = _key(tmp_path)

    def keys(d):
        for name in ("lab1", "lab2"):
            d["hosts"][name]["existing"]["key"] = str(key)
    return parse(keys)


# --- the schema ----------------------------------------------------------------------------------
def test_existing_hosts_parse_with_their_site_addresses_and_keys():
    topo = parse()
    lab1, lab2 = topo.hosts["lab1"], topo.hosts["lab2"]
    assert lab1.existing.target == "admin@192.168.1.20" and lab1.existing.interface == "ens4"
    assert str(lab1.existing.key) == "/sites/keys/lab"          # relative to the topology file
    assert lab2.site_ip == "10.170.0.50"                          # already on the site network
    assert lab1.site_ip == "10.170.0.14"                          # from the pool, put on ens4
    # the VMs' addresses are those they had before: .10 upwards in order
    assert [topo.hosts[n].site_ip for n in ("submit", "cm1", "cm2", "worker1")] == \
        ["10.170.0.10", "10.170.0.11", "10.170.0.12", "10.170.0.13"]
    assert [h.name for h in topo.vm_hosts] == ["submit", "cm1", "cm2", "worker1"]
    assert [h.name for h in topo.existing_hosts] == ["lab1", "lab2"]


def test_an_existing_hosts_own_site_address_is_skipped_by_the_pool():
    topo = parse(lambda d: d["hosts"]["lab2"]["existing"].update(address="10.170.0.11"))
    ips = [h.site_ip for h in topo.hosts.values()]
    assert len(set(ips)) == len(ips) and topo.hosts["lab2"].site_ip == "10.170.0.11"
    assert topo.hosts["cm1"].site_ip == "10.170.0.12"


def test_existing_hosts_bring_their_own_ram():
    topo = parse()
    assert topo.total_memory_mb == sum(h.memory_mb for h in topo.vm_hosts)
    need = topology.check_fits(topo, free_mb=10**6)
    assert need == topo.total_memory_mb + topology.GUEST_OVERHEAD_MB * 4


@pytest.mark.parametrize("mutate, field, problem", [
    (lambda d: d["hosts"]["lab1"]["existing"].pop("address"), "hosts.lab1.existing.address", "is required"),
    (lambda d: d["hosts"]["lab1"]["existing"].pop("user"), "hosts.lab1.existing.user", "is required"),
    (lambda d: d["hosts"]["lab1"]["existing"].pop("key"), "hosts.lab1.existing.key", "is required"),
    (lambda d: d["hosts"]["lab1"]["existing"].update(address="300.1.2.3"), "hosts.lab1.existing.address",
     "neither an IPv4 address nor a host name"),
    (lambda d: d["hosts"]["lab1"]["existing"].update(user="Bad User"), "hosts.lab1.existing.user", "not a user name"),
    (lambda d: d["hosts"]["lab1"]["existing"].update(interface="eth 1"), "hosts.lab1.existing.interface",
     "not a network interface name"),
    (lambda d: d["hosts"]["lab1"]["existing"].update(port=22), "hosts.lab1.existing.port", "unknown key"),
    (lambda d: d["hosts"]["lab1"]["existing"].pop("interface"), "hosts.lab1.existing.interface",
     "is required: address 192.168.1.20 is outside the site network 10.170.0.0/24"),
    (lambda d: d["hosts"]["lab2"]["existing"].update(address="10.170.0.1"), "hosts.lab2.existing.address",
     "the host's bridge"),
    (lambda d: d["hosts"]["lab2"]["existing"].update(address="192.168.1.20", interface="eth1"),
     "hosts.lab2.existing.address", "also hosts.lab1's address"),
    (lambda d: d["hosts"]["lab1"].update(roles=["dtn"]), "hosts.lab1.roles",
     "an existing host cannot have role dtn"),
    (lambda d: d["hosts"]["lab1"].update(existing="192.168.1.20"), "hosts.lab1.existing", "must be a mapping"),
])
def test_bad_existing_specs_are_one_line_errors_naming_file_and_field(mutate, field, problem):
    with pytest.raises(ConfigError) as err:
        parse(mutate)
    assert err.value.source == "/sites/mixed.yaml" and err.value.field == field
    assert problem in err.value.problem and "\n" not in str(err.value)


def test_a_bad_existing_spec_through_the_cli_is_exit_2_one_line(tmp_path, capsys):
    from testbed import cli
    data = copy.deepcopy(BASE)
    del data["hosts"]["lab1"]["existing"]["user"]
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(data))
    assert cli.main(["-t", str(path), "topology", "show", "--no-ram-check"]) == 2
    err = capsys.readouterr().err
    assert err == f"testbed: {path}: hosts.lab1.existing.user: is required\n"


# --- SSH to an existing host ---------------------------------------------------------------------
def test_ssh_reaches_an_existing_host_as_its_user_with_its_key_only(mixed):
    ssh = Site(mixed).ssh()
    argv = ssh.argv("lab1")
    assert argv[-1] == "admin@192.168.1.20"
    assert argv[argv.index("-i") + 1] == str(mixed.hosts["lab1"].existing.key) and argv.count("-i") == 1
    assert "IdentitiesOnly=yes" in argv and "StrictHostKeyChecking=accept-new" in argv
    assert f"UserKnownHostsFile={ssh.known_hosts()}" in argv
    assert ssh.root_prefix("lab1") == ["sudo", "-n"] and ssh.root_prefix("lab2") == []   # lab2 logs in as root
    assert Site(mixed).ssh().argv("worker1")[-1] == "vagrant@10.170.0.13"


# --- pre-flight: every refusal, before anything changes ------------------------------------------
GOOD = {"os_id": "debian", "os_version": "13", "os": "Debian GNU/Linux 13 (trixie)", "kernel": "6.12.0",
        "mem_mb": "3900", "cpus": "4", "cpu_model": "Xeon", "disk_free_mb": "20000", "virt": "kvm",
        "ntp": "yes", "chrony": "", "condor_package": "", "condor_binary": "", "condor_etc": "0"}


class FakeHostSSH:
    """An existing host as SSH sees it: `first` answers the first command (reachability),
    `facts` the probe, `now` its clock, `plan` prepare.sh's output. Records every command."""

    def __init__(self, first=(0, "", ""), facts=None, now=None, plan=(0, "would\tcreate\t/etc/x\n"),
                 remove=(0, "done\tservice\tcondor.service\n")):
        self.first, self.facts, self.now, self.plan, self.remove = first, facts or dict(GOOD), now, plan, remove
        self.commands = []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append((host, command))
        if command == "true":
            return Result(host, *self.first)
        if command == existing.PROBE:
            return Result(host, 0, "".join(f"{k}={v}\n" for k, v in self.facts.items()), "")
        if command.startswith("date "):   # in step with this machine unless told otherwise
            return Result(host, 0, f"{self.now if self.now is not None else time.time()}\n", "")
        if "prepare plan" in command:
            return Result(host, self.plan[0], self.plan[1], "")
        if "remove.sh" in command or "remove " in command:
            return Result(host, self.remove[0], self.remove[1], "")
        raise AssertionError(f"unexpected command on {host}: {command[:60]}")


def check(mixed, ssh, host="lab1"):
    clock = (lambda: 1000.0) if ssh.now is not None else time.time
    return existing.check_host(mixed, profiles.load("default"), mixed.hosts[host], ssh, OWNER, clock=clock)


@pytest.mark.parametrize("first, words", [
    ((255, "", "ssh: connect to host 192.168.1.20 port 22: Connection timed out"), "unreachable: ssh: connect"),
    ((255, "", "admin@192.168.1.20: Permission denied (publickey)."), "refuses key"),
    ((1, "", "sudo: a password is required"), "user admin cannot run sudo without a password"),
    ((255, "", "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@"), "host key is not the one recorded"),
])
def test_ssh_refusals_name_the_host_and_stop_at_the_first_command(mixed, first, words):
    ssh = FakeHostSSH(first=first)
    with pytest.raises(TestbedError) as err:
        check(mixed, ssh)
    assert str(err.value).startswith("existing host lab1 (admin@192.168.1.20): ") and words in str(err.value)
    assert "\n" not in str(err.value)
    assert ssh.commands == [("lab1", "true")]


@pytest.mark.parametrize("facts, now, words", [
    ({"os_id": "debian", "os_version": "12", "os": "Debian GNU/Linux 12 (bookworm)"}, None,
     "runs Debian GNU/Linux 12 (bookworm); provisioning supports Debian 13 only"),
    ({"os_id": "ubuntu", "os_version": "24.04", "os": "Ubuntu 24.04"}, None, "runs Ubuntu 24.04"),
    ({"mem_mb": "700"}, None, "has 700 MB of RAM, its roles need 1024 MB (hosts.lab1.memory_mb)"),
    ({"cpus": "1"}, None, "has 1 cores, its roles need 2"),
    ({"disk_free_mb": "900"}, None, f"has 900 MB free on / or /var, its roles need {c.EXISTING_DISK_MB} MB"),
    ({"ntp": "no"}, 1007.5, "its clock is +7.5 s off this machine's (at most 2 s); it runs no synchronised"),
    ({}, 940.0, "its clock is -60.0 s off"),
    ({"condor_package": "install ok installed", "condor_binary": "/usr/sbin/condor_master"}, None,
     "runs HTCondor the testbed did not install (no /etc/testbed/installed-by)"),
    ({"condor_etc": "1"}, None, "runs HTCondor the testbed did not install"),
    ({"hostsname.cm1": "10.0.0.9", "hostsname.localhost": "127.0.0.1", "hostsname.lab1": "10.170.0.14"}, None,
     "its /etc/hosts already names cm1 (10.0.0.9): the site's host names would clash"),
    ({"hostsname.submit.mixed.testbed": "10.0.0.8"}, None, "already names submit.mixed.testbed (10.0.0.8)"),
    ({"marker.topology": "other", "marker.owner": "elsewhere:/srv/tb"}, None,
     "is claimed by topology other of elsewhere:/srv/tb"),
    ({"marker.topology": "mixed", "marker.owner": "elsewhere:/srv/tb", "condor_package": "install ok installed"},
     None, "is claimed by topology mixed of elsewhere:/srv/tb"),
])
def test_host_refusals_are_one_line_and_nothing_is_changed(mixed, facts, now, words):
    ssh = FakeHostSSH(facts={**GOOD, **facts}, now=now)
    with pytest.raises(TestbedError) as err:
        check(mixed, ssh)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("existing host lab1 (admin@192.168.1.20): ")
    assert [cmd.split()[0] for _h, cmd in ssh.commands] == ["true", existing.PROBE.split()[0], "date"]


def test_a_host_the_testbed_already_provisioned_for_this_topology_passes(mixed):
    ssh = FakeHostSSH(facts={**GOOD, "marker.topology": "mixed", "marker.owner": OWNER,
                             "condor_package": "install ok installed", "condor_etc": "1"})
    facts, lines = check(mixed, ssh)
    assert facts["os"] == "Debian GNU/Linux 13 (trixie)" and lines == ["create /etc/x"]


def test_a_path_a_role_would_replace_or_a_missing_interface_refuses_after_the_plan(mixed):
    ssh = FakeHostSSH(plan=(ledger.REFUSED, "conflict\texclusive\t/srv/origin exists and is not the testbed's\n"
                                            "conflict\tinterface\tno network interface ens4 (existing.interface)\n"))
    with pytest.raises(TestbedError) as err:
        check(mixed, ssh)
    assert str(err.value) == ("existing host lab1 (admin@192.168.1.20): /srv/origin exists and is not the "
                              "testbed's; no network interface ens4 (existing.interface)")


def test_the_key_must_exist_and_be_private(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    topo = parse(lambda d: d["hosts"]["lab1"]["existing"].update(key=str(tmp_path / "nope")))
    with pytest.raises(ConfigError) as err:
        existing.check_key(topo, topo.hosts["lab1"])
    assert err.value.field == "hosts.lab1.existing.key" and "no such file" in err.value.problem
    key = _key(tmp_path, 0o644)
    topo = parse(lambda d: d["hosts"]["lab1"]["existing"].update(key=str(key)))
    with pytest.raises(ConfigError, match="readable by others and ssh ignores such a key"):
        existing.check_key(topo, topo.hosts["lab1"])


def test_preflight_names_every_refused_host_in_one_line(mixed):
    class TwoHosts(FakeHostSSH):
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            if host == "lab2" and command == "true":
                self.commands.append((host, command))
                return Result(host, 255, "", "ssh: connect to host 10.170.0.50 port 22: No route to host")
            return super().run(host, command, check, input_bytes, timeout)
    ssh = TwoHosts(facts={**GOOD, "os_version": "12"})
    with pytest.raises(TestbedError) as err:
        existing.preflight(mixed, profiles.load("default"), ssh, OWNER)
    text = str(err.value)
    assert "existing host lab1 (admin@192.168.1.20): runs" in text
    assert "existing host lab2 (root@10.170.0.50): unreachable: ssh: connect to host" in text
    assert text.endswith("(nothing was changed)") and "\n" not in text


def test_up_refuses_before_it_touches_libvirt_the_box_or_any_host(mixed, monkeypatch):
    from testbed.services import health
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)
    for name in ("claim_domains",):
        monkeypatch.setattr(lifecycle.domains, name, lambda *a, **k: pytest.fail("libvirt touched"))
    monkeypatch.setattr(lifecycle.plan, "write", lambda *a, **k: pytest.fail("plan written"))
    class Untouched:   # the box named, not looked at
        def __getattr__(self, name):
            pytest.fail(f"box touched ({name})")
    monkeypatch.setattr(lifecycle, "box_for", lambda *a, **k: Untouched())
    ssh = FakeHostSSH(facts={**GOOD, "condor_package": "install ok installed"})
    monkeypatch.setattr(Site, "ssh", lambda *a, **k: ssh)
    with pytest.raises(TestbedError, match="runs HTCondor the testbed did not install"):
        lifecycle.up(Site(mixed), profiles.load("default"), health, echo=lambda *_: None)
    assert all(cmd == "true" or cmd == existing.PROBE or cmd.startswith("date ") for _h, cmd in ssh.commands)


# --- the dry run ---------------------------------------------------------------------------------
def test_dry_run_lists_every_change_and_changes_nothing(mixed, monkeypatch):
    from testbed.services import health
    monkeypatch.setattr(lifecycle, "active_topology", lambda: "other")   # another topology up: a dry run still lists
    monkeypatch.setattr(lifecycle.domains, "claim_domains", lambda *a, **k: pytest.fail("libvirt touched"))
    monkeypatch.setattr(lifecycle.plan, "write", lambda *a, **k: pytest.fail("plan written"))
    monkeypatch.setattr(lifecycle.provisioning, "Provisioner", lambda *a, **k: pytest.fail("provisioned"))
    monkeypatch.setattr(existing.ledger, "owner", lambda: OWNER)
    plan_out = ("would\tpath\t/var/lib/testbed\nwould\tcreate\t/etc/condor/config.d/50-testbed.conf\n"
                "would\treplace\t/etc/sysctl.d/90-testbed-profile.conf\nwould\tuser\tvagrant\n"
                "would\taddress\tens4\t10.170.0.14/24\nwould\tsysctl\tnet.core.wmem_max\t212992 -> 12582912\n"
                "would\tblock\t/etc/hosts\nwould\tservice\tcondor.service\n"
                "would\tpackages\tcondor xrootd-client\nwould\tdependencies\tlibfoo libbar\n")
    ssh = FakeHostSSH(plan=(0, plan_out))
    monkeypatch.setattr(Site, "ssh", lambda *a, **k: ssh)
    out = []
    assert lifecycle.up(Site(mixed), profiles.load("default"), health, dry_run=True, echo=out.append) == 0
    text = "\n".join(out)
    assert "VM submit: would create it (768 MB, 1 vCPU, site address 10.170.0.10)" in text
    for words in ("create /var/lib/testbed", "create /etc/condor/config.d/50-testbed.conf",
                  "replace /etc/sysctl.d/90-testbed-profile.conf (the original is kept and put back by down)",
                  "create user vagrant", "add site address 10.170.0.14/24 to ens4",
                  "set net.core.wmem_max: 212992 -> 12582912", "add a block of site host names to /etc/hosts (from",
                  "enable and start condor.service", "install packages condor xrootd-client",
                  "install their dependencies libfoo libbar"):
        assert f"  {words}" in text, words
    assert out[-1] == "dry run: nothing was changed (4 VMs, 2 existing hosts)"
    # the only commands: read-only checks and prepare.sh in plan mode, the changes list on stdin
    kinds = {cmd if cmd == "true" else cmd.split()[0] if cmd.startswith("date") else
             "plan" if "prepare plan" in cmd else "probe" if cmd == existing.PROBE else cmd for _h, cmd in ssh.commands}
    assert kinds == {"true", "probe", "date", "plan"}


# --- what provisioning sends an existing host -----------------------------------------------------
def test_an_existing_hosts_bundle_keeps_its_own_hosts_file_network_and_name(mixed, monkeypatch):
    monkeypatch.setattr(ledger, "owner", lambda: OWNER)
    prof = profiles.load("default")
    files = render.render_host_files(mixed, prof, mixed.hosts["lab1"])
    assert "etc/hosts" not in files and "etc/network/interfaces" not in files
    assert files["etc/testbed/hosts"].startswith(c.HOSTS_BLOCK_BEGIN)
    assert files["etc/testbed/hosts"].rstrip().endswith(c.HOSTS_BLOCK_END)
    assert "10.170.0.14 lab1.mixed.testbed lab1" in files["etc/testbed/hosts"]
    assert f"owner={OWNER}" in files["etc/testbed/installed-by"] and "topology=mixed" in files["etc/testbed/installed-by"]
    assert "TB_EXISTING=1" in files["etc/testbed/host.env"]
    assert "NETWORK_HOSTNAME = lab1.mixed.testbed" in files["etc/condor/config.d/50-testbed.conf"]
    vm = render.render_host_files(mixed, prof, mixed.hosts["worker1"])
    assert "TB_EXISTING" not in vm["etc/testbed/host.env"] and "NETWORK_HOSTNAME" not in \
        vm["etc/condor/config.d/50-testbed.conf"] and "lab1.mixed.testbed" in vm["etc/hosts"]


def test_the_changes_list_names_everything_provisioning_may_touch(mixed, monkeypatch):
    monkeypatch.setattr(ledger, "owner", lambda: OWNER)
    prof = profiles.load("wan-tuned")
    text = render.existing_changes(mixed, prof, mixed.hosts["lab1"])
    entries = [line.split("\t") for line in text.splitlines()]
    kinds = [e[0] for e in entries]
    files = render.render_host_files(mixed, prof, mixed.hosts["lab1"])
    assert kinds.index("path") < kinds.index("file") < kinds.index("package") < kinds.index("service")
    assert {e[1] for e in entries if e[0] == "file"} == {"/" + rel for rel in files}
    assert ["package", "condor"] in entries and ["package", "xrootd-client"] in entries
    assert ["user", "vagrant"] in entries and ["path", "/home/vagrant/.condor"] in entries
    assert ["address", "ens4", "10.170.0.14/24"] in entries
    assert ["sysctl", "net.core.wmem_max", str(prof.for_host(["worker"], "sysctl")["net.core.wmem_max"])] in entries
    assert ["block", "/etc/hosts"] in entries and ["service", "condor.service"] in entries
    assert not any(e[0] == "exclusive" for e in entries)            # no origin role here
    lab2 = [line.split("\t") for line in render.existing_changes(mixed, prof, mixed.hosts["lab2"]).splitlines()]
    assert not any(e[0] == "address" for e in lab2)                  # already on the site network


def test_the_bundle_carries_the_changes_and_the_plan_marks_existing_hosts(mixed, monkeypatch):
    monkeypatch.setattr(ledger, "owner", lambda: OWNER)
    path, data = plan.write(mixed, profiles.load("default"), TestbedState("mixed"), accelerator="tcg",
                            box=box_for(mixed.box_spec))
    hosts = {h["name"]: h for h in data["hosts"]}
    assert hosts["lab1"]["existing"] == {"address": "192.168.1.20", "user": "admin", "interface": "ens4"}
    assert hosts["worker1"]["existing"] is None
    with tarfile.open(hosts["lab1"]["bundle"]) as tar:
        names = tar.getnames()
        assert "./" + ledger.CHANGES in names and "./" + ledger.MARKER_FILE in names
    with tarfile.open(hosts["worker1"]["bundle"]) as tar:
        assert "./" + ledger.CHANGES not in tar.getnames()
    assert json.loads(path.read_text())["hosts"][4]["name"] == "lab1"


def test_the_vagrantfile_skips_existing_hosts():
    from testbed import PROJECT_ROOT
    text = (PROJECT_ROOT / "Vagrantfile").read_text()
    loop = text[text.index('plan["hosts"].each do |host|'):]
    assert loop.splitlines()[3].strip() == 'next if host["existing"]'


def test_provisioning_an_existing_host_runs_prepare_then_apply(mixed, tmp_path, monkeypatch):
    from testbed.machines import provision
    monkeypatch.setattr(ledger, "owner", lambda: OWNER)
    bundle = tmp_path / "b.tgz"
    bundle.write_bytes(b"\x1f\x8b")
    sent = {}

    class Recorder:
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            sent[host] = command
            return Result(host, 0, f"testbed: {host} provisioned\n", "")
    provision.provision(Site(mixed), profiles.load("default"), ssh=Recorder(), bundles={h: bundle for h in mixed.hosts})
    lab = sent["lab1"]
    assert "prepare apply" in lab and lab.index("prepare apply") < lab.index(" apply \"$f\"")
    assert "prepare" not in sent["worker1"]


# --- snapshots and down --------------------------------------------------------------------------
def test_snapshots_refuse_a_site_with_existing_hosts_in_one_line(mixed, monkeypatch):
    monkeypatch.setattr(snapshots.domains, "state", lambda *a: pytest.fail("libvirt asked"))
    with pytest.raises(TestbedError) as err:
        snapshots.save(Site(mixed), "pristine", "default")
    assert str(err.value) == ("snapshot: mixed cannot be saved: lab1 (192.168.1.20), lab2 (10.170.0.50) are "
                              "existing hosts, not a VM of this machine, and cannot be snapshotted")
    with pytest.raises(TestbedError, match="cannot be restored: lab1"):
        snapshots.restore(Site(mixed), "pristine", health=object())


def test_snapshot_save_from_the_cli_refuses_before_reading_health(mixed, tmp_path, monkeypatch, capsys):
    from testbed import cli
    from testbed.cli import site_commands
    from testbed.services import health
    data = copy.deepcopy(BASE)
    for name in ("lab1", "lab2"):
        data["hosts"][name]["existing"]["key"] = str(mixed.hosts["lab1"].existing.key)
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(data))
    TestbedState("mixed").ensure_secrets()
    (state_root() / lifecycle.ACTIVE).write_text("mixed")   # as `up` leaves it
    monkeypatch.setattr(health, "collect", lambda *a, **k: pytest.fail("health read"))
    assert cli.main(["-t", str(path), "snapshot", "save"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lab1 (192.168.1.20), lab2 (10.170.0.50) are existing hosts" in err
    assert site_commands  # the verb lives there


def test_down_undoes_the_ledger_and_says_what_it_did(mixed, monkeypatch):
    out = []
    ssh = FakeHostSSH(remove=(0, "done\tservice\tcondor.service\ndone\tpackages\tcondor libfoo\n"
                                 "done\trestored\t/etc/sysctl.conf\ndone\tpath\t/etc/condor\n"
                                 "done\trecord\tthe ledger, the backups and the marker\n"))
    assert existing.deprovision(mixed, ssh, echo=out.append, identity=OWNER) == {}
    assert "existing host lab1 (admin@192.168.1.20): stopped and disabled condor.service" in out
    assert "existing host lab1 (admin@192.168.1.20): purged packages condor libfoo" in out
    assert "existing host lab2 (root@10.170.0.50): put back the original /etc/sysctl.conf" in out
    assert all(OWNER in cmd for _h, cmd in ssh.commands)


def test_down_leaves_a_host_of_another_checkout_and_an_unreachable_one_and_says_so(mixed, monkeypatch):
    class Mixed(FakeHostSSH):
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            if host == "lab2":
                return Result(host, 255, "", "ssh: connect to host 10.170.0.50 port 22: Connection refused")
            return Result(host, ledger.REFUSED, "conflict\tclaimed\tby topology other of elsewhere:/srv\n", "")
    out = []
    left = existing.deprovision(mixed, Mixed(), echo=out.append, identity=OWNER)
    assert left == {"lab1": "claimed by topology other of elsewhere:/srv",
                    "lab2": "unreachable: ssh: connect to host 10.170.0.50 port 22: Connection refused"}
    assert "existing host lab1 (admin@192.168.1.20): left untouched: claimed by topology other of elsewhere:/srv" in out


def test_down_of_a_site_of_existing_hosts_only_never_calls_vagrant(tmp_path, monkeypatch):
    key = _key(tmp_path)
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    data = {"name": "labs", "networks": {"site": "10.171.0.0/24", "management": "192.168.171.0/24"}, "hosts": {
        n: {"roles": r, "existing": {"address": f"10.171.0.{20 + i}", "user": "root", "key": str(key)}}
        for i, (n, r) in enumerate([("s", ["submit"]), ("c", ["cm"]), ("w", ["worker"])])}}
    topo = topology.parse(data, tmp_path / "labs.yaml")
    monkeypatch.setattr(lifecycle, "active_topology", lambda: "labs")
    monkeypatch.setattr(lifecycle, "VagrantRun", lambda *a, **k: pytest.fail("vagrant run"))
    monkeypatch.setattr(Site, "ssh", lambda *a, **k: FakeHostSSH())
    monkeypatch.setattr(existing.ledger, "owner", lambda: OWNER)
    assert lifecycle.down(Site(topo), echo=lambda *_: None) == 0


def test_the_manifest_gets_each_existing_hosts_hardware_and_os(mixed):
    from testbed.harness.session import Session
    ssh = FakeHostSSH()
    facts = Session(mixed, ssh=ssh).existing_host_facts()
    assert set(facts) == {"lab1", "lab2"}
    assert facts["lab1"] == {k: GOOD.get(k, "") for k in existing.FACTS}


def test_prepare_and_remove_scripts_are_valid_bash():
    import subprocess
    for name in ("prepare.sh", "remove.sh"):
        subprocess.run(["bash", "-n", str(ledger.SCRIPTS / name)], check=True)


def test_up_boots_only_the_vms_and_provisions_the_existing_hosts_beside_them(mixed, monkeypatch):
    class Everything(FakeHostSSH):
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            if 'apply "$f"' in command:   # provisioning: the bundle applied
                self.commands.append((host, command))
                return Result(host, 0, f"testbed: {host} provisioned\n", "")
            return super().run(host, command, check, input_bytes, timeout)

    class Built:   # the box, built and registered
        name, built, kernel, initrd = "debian13-test", True, "/boxes/vmlinuz", "/boxes/initrd.img"

        def registered(self):
            return True

    class Health:
        @staticmethod
        def wait_healthy(topo, ssh, timeout, started):
            return {"healthy": True}

        @staticmethod
        def format_report(report):
            return "healthy"

    ssh = Everything()
    booted = []

    def fake_boot(topo, run, env, size, overlap=None, poll=1.0):
        for wave in lifecycle.boot_waves(topo, size):
            for name in wave:
                booted.append(name)
                run.mark_booted(name)
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)
    monkeypatch.setattr(lifecycle.domains, "claim_domains", lambda t: None)
    monkeypatch.setattr(lifecycle.domains, "state", lambda t, h: None)
    monkeypatch.setattr(lifecycle, "box_for", lambda spec: Built())
    monkeypatch.setattr(lifecycle.accel, "converge_libvirtd", lambda a: None)
    monkeypatch.setattr(lifecycle.plan.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(lifecycle, "boot", fake_boot)
    monkeypatch.setattr(lifecycle.disks, "set_limits", lambda topo, echo: None)
    monkeypatch.setattr(Site, "ssh", lambda *a, **k: ssh)
    monkeypatch.setattr(lifecycle.provisioning, "first_contact_ssh", lambda *a: ssh)
    monkeypatch.setattr(lifecycle, "record_profile", lambda *a: None)
    monkeypatch.setattr(existing.ledger, "owner", lambda: OWNER)
    assert lifecycle.up(Site(mixed), profiles.load("default"), Health, echo=lambda *_: None) == 0
    assert sorted(booted) == sorted(h.name for h in mixed.vm_hosts)
    applied = {h: cmd for h, cmd in ssh.commands if 'apply "$f"' in cmd}
    assert set(applied) == set(mixed.hosts)
    assert "prepare apply" in applied["lab1"] and "prepare apply" in applied["lab2"]
    assert "prepare" not in applied["worker1"]
    record = json.loads((TestbedState("mixed").dir / lifecycle.BRINGUP_RECORD).read_text())
    assert set(record["existing"]) == {"lab1", "lab2"} and "provisioned_after" in record["existing"]["lab1"]
    assert "lab1" not in record["vms"]


def test_the_no_default_route_check_judges_the_vms_only(mixed):
    from testbed.injectors.security_checks import SecurityChecks

    class Routes:
        asked = []

        def run_many(self, commands, check=False, timeout=None):
            self.asked.extend(commands)
            return {h: Result(h, 0, "", "") for h in commands}
    routes = Routes()
    assert set(SecurityChecks(mixed, routes).default_routes()) == {"submit", "cm1", "cm2", "worker1"}
    assert "lab1" not in routes.asked


def test_the_probe_reads_this_machine_as_it_would_an_existing_host():
    import os
    import subprocess
    out = subprocess.run(["bash", "-c", existing.PROBE], capture_output=True, text=True, timeout=60).stdout
    facts = existing.parse_probe(out)
    release = dict(line.split("=", 1) for line in open("/etc/os-release").read().splitlines() if "=" in line)
    assert facts["os_id"] == release["ID"].strip('"') and facts["cpus"] == str(os.cpu_count())
    assert int(facts["mem_mb"]) > 0 and int(facts["disk_free_mb"]) > 0 and facts["kernel"] == os.uname().release
    assert facts.get("hostsname.localhost") == "127.0.0.1"
