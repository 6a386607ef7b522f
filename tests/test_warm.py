"""The warm bring-up against a fake virsh and a fake pool folder: when it applies, the key,
parking at `down` (disks moved, XML kept, Vagrant's machines moved) and unparking at `up`
(everything back in order, then the golden snapshot restored), and a changed key booting
cold."""
import json
import time
import types

import pytest

from testbed.machines import domains, plan, snapshots, warm
from testbed.model import topology
from testbed.remote.site import Site


class FakeVirsh:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, timeout=None):
        self.calls.append(args)
        out = {"dumpxml": "<domain/>", "snapshot-dumpxml": "<domainsnapshot/>",
               "net-dumpxml": "<network><bridge name='virbr9' stp='on' delay='0'/></network>"}
        return types.SimpleNamespace(stdout=out.get(args[0], ""), stderr="", returncode=0)

    def verbs(self):
        return [c[0] for c in self.calls]


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(warm, "PROJECT_ROOT", tmp_path / "checkout")
    s = Site(topology.load("small"))
    s.state.ensure_dirs()
    plan.plan_path(s.state).write_text(json.dumps({"topology": "small", "hosts": [{"name": "cm1"}],
                                                   "written": "2026-01-01T00:00:00Z"}))
    (s.state.hosts_dir / "cm1").mkdir(parents=True)
    (s.state.hosts_dir / "cm1" / "condor.conf").write_text("A = 1\n")
    pool = tmp_path / "pool"
    pool.mkdir()
    disks = {h: [str(pool / f"tb-small-{h}.img")] for h in s.topo.hosts}
    for paths in disks.values():
        for p in paths:
            open(p, "w").write("qcow2")
    monkeypatch.setattr(snapshots, "volume_paths", lambda topo, host: disks[host])
    monkeypatch.setattr(domains, "state", lambda topo, host: None)   # no VM of the site exists
    machines = tmp_path / "checkout" / ".vagrant" / "machines" / "cm1" / "libvirt"
    machines.mkdir(parents=True)
    (machines / "id").write_text("uuid-cm1")
    return s, pool, disks


def keep_golden(s, monkeypatch, key=None):
    record = snapshots.record_dir(s.state)
    record.mkdir(parents=True, exist_ok=True)
    (record / f"{warm.GOLDEN}.json").write_text(json.dumps({"name": warm.GOLDEN, "warm_key": key or warm.key(s)}))
    monkeypatch.setattr(snapshots, "list_names", lambda topo: [warm.GOLDEN])


def test_warm_is_wanted_unless_under_ci():
    assert warm.wanted(env={}) and warm.wanted(env={"CI": ""})
    assert not warm.wanted(env={"CI": "true"}) and not warm.wanted(env={"CI": "1"})


def test_only_a_site_of_this_machines_vms_is_kept_warm():
    assert warm.eligible(topology.load("small")) == ""
    assert "no VM" in warm.eligible(types.SimpleNamespace(existing_hosts=[], vm_hosts_elsewhere=[], vm_hosts=[]))
    assert "existing" in warm.eligible(types.SimpleNamespace(existing_hosts=["x"], vm_hosts_elsewhere=[], vm_hosts=[1]))


def test_the_key_follows_the_plan_and_the_rendered_files_but_not_when_the_plan_was_written(site):
    s, _pool, _disks = site
    first = warm.key(s)
    p = plan.plan_path(s.state)
    p.write_text(p.read_text().replace("2026-01-01", "2026-02-02"))
    assert warm.key(s) == first
    (s.state.hosts_dir / "cm1" / "condor.conf").write_text("A = 2\n")
    assert warm.key(s) != first


def test_down_parks_the_disks_xml_and_vagrants_machines_then_up_brings_them_back_in_order(site, monkeypatch, tmp_path):
    s, pool, disks = site
    keep_golden(s, monkeypatch)
    noted = []
    monkeypatch.setattr(warm.host_ledger, "note_dir", noted.append)
    virsh = FakeVirsh()
    leases = tmp_path / "dnsmasq"
    leases.mkdir()
    lease = {"ip-address": "192.168.160.11", "mac-address": "52:54:00:9b:88:a4", "expiry-time": 1}
    (leases / "virbr9.status").write_text(json.dumps([lease]))
    record = warm.park(s, echo=lambda *_: None, pool_dir=pool, virsh=virsh, leases_dir=leases)
    here = warm.park_dir(s, pool)
    assert noted == [here.parent]   # `testbed host undo` removes the parked sites
    assert set(record["leases"]) == set(s.topo.network_names().values())
    (leases / "virbr9.status").unlink()   # gone with the network
    assert set(record["domains"]) == set(s.topo.hosts) and record["key"] == warm.key(s)
    for paths in disks.values():
        for p in paths:
            assert not __import__("os").path.exists(p)
            assert (here / p.rsplit("/", 1)[1]).exists()
    assert (here / "vagrant-machines" / "cm1" / "libvirt" / "id").read_text() == "uuid-cm1"
    assert not (tmp_path / "checkout" / ".vagrant" / "machines").exists()
    assert virsh.verbs().count("undefine") == len(s.topo.hosts)
    assert all("--snapshots-metadata" in c for c in virsh.calls if c[0] == "undefine")   # the disks stay

    back = FakeVirsh()
    assert warm.unpark(s, echo=lambda *_: None, pool_dir=pool, virsh=back, leases_dir=leases) is True
    # the network's leases are back before it starts, running from now: Vagrant finds the guests
    back_lease = json.loads((leases / "virbr9.status").read_text())[0]
    assert back_lease["ip-address"] == "192.168.160.11" and back_lease["expiry-time"] > 1e9
    verbs = back.verbs()
    # networks first, then each domain with its snapshot's metadata re-added as the current one
    assert verbs.index("net-start") < verbs.index("define") < verbs.index("snapshot-create")
    assert all(("--redefine" in c and "--current" in c) for c in back.calls if c[0] == "snapshot-create")
    for paths in disks.values():
        for p in paths:
            assert open(p).read() == "qcow2"
    assert (tmp_path / "checkout" / ".vagrant" / "machines" / "cm1" / "libvirt" / "id").exists()
    assert not here.exists()     # a parked site comes back once


def test_no_golden_or_one_of_another_key_parks_nothing(site, monkeypatch):
    s, pool, disks = site
    virsh = FakeVirsh()
    monkeypatch.setattr(snapshots, "list_names", lambda topo: [])
    assert warm.park(s, pool_dir=pool, virsh=virsh) is None and virsh.calls == []
    keep_golden(s, monkeypatch, key="0123456789abcdef")
    assert warm.park(s, pool_dir=pool, virsh=virsh) is None and virsh.calls == []


def test_a_site_parked_under_another_key_is_dropped_and_up_boots_cold(site, monkeypatch):
    s, pool, _disks = site
    keep_golden(s, monkeypatch)
    warm.park(s, echo=lambda *_: None, pool_dir=pool, virsh=FakeVirsh())
    (s.state.hosts_dir / "cm1" / "condor.conf").write_text("A = 3\n")   # a template changed
    said, virsh = [], FakeVirsh()
    assert warm.unpark(s, echo=said.append, pool_dir=pool, virsh=virsh) is False
    assert virsh.calls == [] and not warm.park_dir(s, pool).exists() and "booting cold" in said[0]


def test_a_site_that_cannot_be_kept_stays_up_and_says_why(site, monkeypatch):
    s, _pool, _disks = site
    monkeypatch.setattr(snapshots, "list_names", lambda topo: [])

    def no_room(*a, **k):
        raise warm.TestbedError("/var/lib/libvirt/images: 100 MB free, a snapshot of small needs about 6912 MB")
    monkeypatch.setattr(snapshots, "save", no_room)
    said = []
    assert warm.keep(s, "default", echo=said.append) is None
    assert said[0].startswith("not kept for a warm `up`: /var/lib/libvirt/images: 100 MB free")


def test_leases_are_renewed_from_now_and_bad_json_gives_none():
    renewed = json.loads(warm.renewed(json.dumps([{"ip-address": "a", "expiry-time": 5}]), now=1000))
    assert renewed == [{"ip-address": "a", "expiry-time": 1000 + warm.LEASE_S}]
    assert warm.renewed("not json", now=1) == "[]" and warm.renewed("", now=1) == "[]"
    assert warm._leases_path("<network><bridge name='virbr3'/></network>", "/x").name == "virbr3.status"


def test_a_parked_site_never_replaces_vms_made_since_it_was_parked(site, monkeypatch):
    s, pool, disks = site
    keep_golden(s, monkeypatch)
    warm.park(s, echo=lambda *_: None, pool_dir=pool, virsh=FakeVirsh())
    monkeypatch.setattr(domains, "state", lambda topo, host: "running" if host == "cm1" else None)
    said, virsh = [], FakeVirsh()
    assert warm.unpark(s, echo=said.append, pool_dir=pool, virsh=virsh) is False
    assert virsh.calls == [] and not warm.park_dir(s, pool).exists()
    assert said == ["VMs of small exist already (cm1): the parked site is dropped"]


class DomainsVirsh(FakeVirsh):
    """A virsh that knows which domains are defined, and that a Ctrl-C stops at the
    `stop_at`-th call of the verb `stop_verb` (as it reaches virsh and the testbed alike)."""
    def __init__(self, defined, stop_verb=None, stop_at=0):
        super().__init__()
        self.defined, self.stop_verb, self.stop_at = set(defined), stop_verb, stop_at

    def __call__(self, *args, timeout=None):
        if args[0] == self.stop_verb:
            self.stop_at -= 1
            if self.stop_at == 0:
                raise KeyboardInterrupt
        done = super().__call__(*args, timeout=timeout)
        if args[0] == "domstate" and args[1] not in self.defined:
            done.returncode = 1
        elif args[0] == "undefine":
            self.defined.discard(args[1])
        elif args[0] == "define":
            self.defined.add("tb-small-" + args[1].rsplit("/", 1)[1].removesuffix(".xml"))
        return done


def where(disks, pool, here):
    """For each disk: 'pool', 'parked' (or both, or neither: a fault)."""
    import os
    out = {}
    for paths in disks.values():
        for p in paths:
            name = p.rsplit("/", 1)[1]
            out[name] = "pool" * os.path.exists(p) + "parked" * (here / name).exists()
    return out


def park_stopped_at_undefine(s, pool, monkeypatch, n):
    """Park the site and stop it (a Ctrl-C) at its n-th undefine; the virsh, stopping no more."""
    keep_golden(s, monkeypatch)
    virsh = DomainsVirsh([f"tb-small-{h}" for h in s.topo.hosts], stop_verb="undefine", stop_at=n)
    with pytest.raises(KeyboardInterrupt):
        warm.park(s, echo=lambda *_: None, pool_dir=pool, virsh=virsh)
    virsh.stop_verb = None
    return virsh


def test_a_park_stopped_halfway_is_finished_by_the_next_down(site, monkeypatch, tmp_path):
    s, pool, disks = site
    virsh = park_stopped_at_undefine(s, pool, monkeypatch, 3)
    here = warm.park_dir(s, pool)
    assert warm.parked(s, pool)["state"] == warm.PARKING
    assert set(where(disks, pool, here).values()) == {"pool", "parked"}   # stopped between two VMs
    said = []
    record = warm.park(s, echo=said.append, pool_dir=pool, virsh=virsh)
    assert said == ["finishing the park of small that was stopped halfway"] and record["state"] == warm.PARKED
    assert set(where(disks, pool, here).values()) == {"parked"} and virsh.defined == set()
    assert (here / "vagrant-machines" / "cm1" / "libvirt" / "id").exists()


def test_an_unpark_stopped_halfway_is_parked_again_then_brought_back_whole(site, monkeypatch, tmp_path):
    s, pool, disks = site
    keep_golden(s, monkeypatch)
    names = [f"tb-small-{h}" for h in s.topo.hosts]
    warm.park(s, echo=lambda *_: None, pool_dir=pool, virsh=DomainsVirsh(names))
    here = warm.park_dir(s, pool)
    virsh = DomainsVirsh([], stop_verb="define", stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        warm.unpark(s, echo=lambda *_: None, pool_dir=pool, virsh=virsh)
    assert warm.parked(s, pool)["state"] == warm.UNPARKING
    # Vagrant knows the domains defined so far: `up` does not sweep them as leftovers
    assert (tmp_path / "checkout" / ".vagrant" / "machines" / "cm1" / "libvirt" / "id").exists()
    assert len(virsh.defined) == 1 and set(where(disks, pool, here).values()) == {"pool", "parked"}
    virsh.stop_verb = None
    assert warm.unpark(s, echo=lambda *_: None, pool_dir=pool, virsh=virsh) is True and not here.exists()
    assert virsh.defined == set(names) and set(where(disks, pool, here).values()) == {"pool"}


def test_dropping_a_site_stopped_halfway_leaves_no_domain_without_its_disks(site, monkeypatch):
    s, pool, disks = site
    virsh = park_stopped_at_undefine(s, pool, monkeypatch, 2)
    warm.discard(s, pool, virsh)   # `up --cold`
    assert virsh.defined == set() and not warm.park_dir(s, pool).exists()
    assert set(where(disks, pool, warm.park_dir(s, pool)).values()) == {""}


def test_a_tree_moved_across_file_systems_is_whole_under_either_name_wherever_the_move_stopped(tmp_path, monkeypatch):
    source, target = tmp_path / "a" / "machines", tmp_path / "b" / "machines"
    (source / "cm1").mkdir(parents=True)
    (source / "cm1" / "id").write_text("uuid-cm1")
    renames, real_rename = [], warm.os.rename

    def rename_then_stop(a, b):   # a Ctrl-C right after the copy took its name
        real_rename(a, b)
        renames.append(b)
        if len(renames) == 1:
            raise KeyboardInterrupt
    monkeypatch.setattr(warm.os, "rename", rename_then_stop)
    with pytest.raises(KeyboardInterrupt):
        warm._move_tree(source, target)
    assert (source / "cm1" / "id").exists() and (target / "cm1" / "id").exists()   # both whole
    warm._move_tree(source, target)
    assert not source.exists() and (target / "cm1" / "id").read_text() == "uuid-cm1"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name.endswith((".part", ".old"))) == []
    warm._move_tree(source, target)   # gone already: nothing to do
    assert (target / "cm1" / "id").exists()


def test_up_comes_back_warm_drops_the_parked_site_with_cold_and_uses_nothing_parked_under_ci(site, monkeypatch):
    s, _pool, _disks = site
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(warm, "parked", lambda site: {"key": "k", "state": warm.PARKED})
    monkeypatch.setattr(warm, "unpark", lambda site, echo: True)
    monkeypatch.setattr(snapshots, "restore", lambda site, name, health, echo: time.sleep(0.6))
    dropped = []
    monkeypatch.setattr(warm, "discard", lambda site: dropped.append(site.topo.name))
    profile = types.SimpleNamespace(name="default")
    line = warm.come_back(s, profile, health=None, echo=lambda *_: None)
    assert line.startswith(f"site small back warm from snapshot {warm.GOLDEN}: healthy 1 s after `up` began")
    said = []
    assert warm.come_back(s, profile, health=None, cold=True, echo=said.append) is None   # boots
    assert dropped == ["small"] and "booting anew" in said[0]
    monkeypatch.setenv("CI", "true")
    assert warm.come_back(s, profile, health=None, echo=lambda *_: None) is None and dropped == ["small"]


def test_up_reverts_vms_that_exist_to_a_snapshot_of_this_profile_and_boots_otherwise(site, monkeypatch):
    s, _pool, _disks = site
    monkeypatch.setattr(warm, "parked", lambda site: None)
    profile = types.SimpleNamespace(name="wan-tuned")
    monkeypatch.setattr(domains, "state", lambda topo, host: "running")
    monkeypatch.setattr(snapshots, "matching", lambda site, name: {"wan-tuned": "p1"}.get(name))
    reverted = []
    monkeypatch.setattr(snapshots, "restore", lambda site, name, health, echo: reverted.append(name) or
                        {"healthy_seconds": 30.2})
    assert warm.come_back(s, profile, health=None, echo=lambda *_: None).startswith(
        "site small restored from snapshot p1: healthy 0 s after `up` began")
    assert reverted == ["p1"]
    assert warm.come_back(s, types.SimpleNamespace(name="default"), health=None, echo=lambda *_: None) is None
    monkeypatch.setattr(domains, "state", lambda topo, host: None if host == "worker1" else "running")
    assert warm.come_back(s, profile, health=None, echo=lambda *_: None) is None and reverted == ["p1"]
