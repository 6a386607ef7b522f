"""Whole-site snapshots against a fake virsh: pause all, checkpoint all, resume all; revert,
clocks, identity matching, names and disk room."""
import json
import types

import pytest

from testbed.machines import domains, snapshots
from testbed.model import topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.remote.site import Site
from testbed.remote.ssh import Result


class FakeVirsh:
    def __init__(self, topo, fail=None):
        self.calls, self.snaps, self.fail = [], {domains.domain_name(topo, h): set() for h in topo.hosts}, fail
        self.tune = {}  # the DTN's data disks: target -> (bytes/s, IOPS)

    def __call__(self, *args, timeout=None):
        self.calls.append(args)
        out, rc, err = "", 0, ""
        if args[0] == "domstate":
            out = "running\n"
        elif args[0] == "snapshot-list":
            out = "\n".join(sorted(self.snaps[args[1]])) + "\n"
        elif args[0] == "snapshot-create-as":
            dom, name = args[2], args[4]
            if self.fail == dom:
                rc, err = 1, "error: internal snapshot for disk vdb unsupported for storage type raw"
            else:
                self.snaps[dom].add(name)
        elif args[0] == "snapshot-delete":
            self.snaps[args[1]].discard(args[2])
        elif args[0] == "domblklist":
            out = ""
        elif args[0] == "dumpxml":
            from tests.test_disks import domain_xml
            out = domain_xml(cache="none", tune=self.tune)
        elif args[0] == "blkdeviotune":
            self.tune[args[2]] = (int(args[4]), int(args[6]))
        return types.SimpleNamespace(stdout=out, stderr=err, returncode=rc)


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    virsh = FakeVirsh(topo)
    monkeypatch.setattr(snapshots, "_virsh", virsh)
    monkeypatch.setattr(domains, "_virsh", virsh)
    monkeypatch.setattr(snapshots, "check_room", lambda t: 10**6)
    return topo, virsh


def test_save_pauses_the_whole_site_then_checkpoints_and_resumes_every_vm(site):
    topo, virsh = site
    meta = snapshots.save(Site(topo), "pristine", "default", echo=lambda *_: None)
    verbs = [c[0] for c in virsh.calls if c[0] in ("suspend", "snapshot-create-as", "resume")]
    n = len(topo.hosts)
    assert verbs == ["suspend"] * n + ["snapshot-create-as"] * n + ["resume"] * n
    assert snapshots.list_names(topo) == ["pristine"]
    assert meta["topology"] == "small" and meta["profile"] == "default" and "provisioning" in meta
    created = [c for c in virsh.calls if c[0] == "snapshot-create-as"][0]
    assert json.loads(created[created.index("--description") + 1])["name"] == "pristine"


def test_a_failed_checkpoint_still_resumes_every_vm_and_names_the_host(site, monkeypatch):
    topo, virsh = site
    virsh.fail = "tb-small-dtn"
    with pytest.raises(TestbedError, match="dtn: error: internal snapshot"):
        snapshots.save(Site(topo), "x", "default", echo=lambda *_: None)
    assert sum(1 for c in virsh.calls if c[0] == "resume") == len(topo.hosts)


def test_restore_reverts_every_vm_sets_clocks_and_waits_for_health(site, monkeypatch):
    topo, virsh = site
    snapshots.save(Site(topo), "pristine", "default", echo=lambda *_: None)
    commands = {}

    class FakeSSH:
        def close_masters(self):
            commands["closed after"] = len(virsh.calls)

        def run_many(self, cmds, timeout=None):
            commands.update(cmds)
            return {h: Result(h, 0, "was=1000.0\nok\n", "") for h in cmds}
    import types
    health = types.SimpleNamespace(wait_healthy=lambda *a, **k: {"healthy": True})
    out = snapshots.restore(Site(topo), "pristine", FakeSSH(), echo=lambda *_: None, health=health)
    reverts = [c for c in virsh.calls if c[0] == "snapshot-revert"]
    assert len(reverts) == len(topo.hosts) and all(c[2] == "tb-pristine" and "--running" in c for c in reverts)
    # the masters opened before the revert are closed after it, before the first command
    closed_after = commands.pop("closed after")
    assert closed_after > max(i for i, c in enumerate(virsh.calls) if c[0] == "snapshot-revert")
    assert set(commands) == set(topo.hosts) and all("date -u -s @" in c for c in commands.values())
    assert out["name"] == "pristine" and len(out["clock_skew_s"]) == 2 and out["clock_skew_s"][0] > 1000
    assert list(out["phases"]) == ["revert", "disk limits", "clocks after the revert", "health", "clocks once healthy"]
    assert out["healthy_seconds"] >= sum(out["phases"].values()) - 0.3   # each rounded to 0.1 s
    # a snapshot carries the member limits it was taken with: the topology's are set again after the revert
    dtn = topo.role_host("dtn").disks
    assert set(virsh.tune.values()) == {(int(dtn.mb_per_s * 1e6), dtn.iops)} and len(virsh.tune) == dtn.count
    first_tune = next(i for i, c in enumerate(virsh.calls) if c[0] == "blkdeviotune")
    assert first_tune > max(i for i, c in enumerate(virsh.calls) if c[0] == "snapshot-revert")


def test_restore_of_an_unknown_snapshot_names_the_known_ones(site):
    topo, _ = site
    snapshots.save(Site(topo), "a", "default", echo=lambda *_: None)
    with pytest.raises(TestbedError, match=r"no snapshot b .*snapshots: a"):
        snapshots.restore(Site(topo), "b", object())


def test_matching_needs_the_same_profile_and_provisioning(site):
    topo, _ = site
    snapshots.save(Site(topo), "p1", "default", echo=lambda *_: None)
    assert snapshots.matching(Site(topo), "default") == "p1"
    assert snapshots.matching(Site(topo), "wan-tuned") is None


def test_bad_names_and_no_room_are_one_line_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError):
        snapshots.check_name("../etc")
    monkeypatch.setattr(snapshots.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=100 * 1024 * 1024))
    with pytest.raises(TestbedError, match="100 MB free"):
        snapshots.check_room(topology.load("small"))


def test_a_restore_says_the_site_came_from_the_snapshot_with_the_runs_it_had_carried(site):
    from testbed.model import site_history
    from testbed.model.state import TestbedState
    topo, _virsh = site
    state = TestbedState(topo.name)
    site_history.began(state, "bring-up")
    site_history.add_run(state, "20261129T1200Z-e1-small")
    snapshots.save(Site(topo), "after-e1", "default", echo=lambda *_: None)
    site_history.add_run(state, "20261129T1300Z-e4-small")   # after the snapshot: undone by the restore

    class FakeSSH:
        def close_masters(self):
            pass

        def run_many(self, cmds, timeout=None):
            return {h: Result(h, 0, "was=1000.0\nok\n", "") for h in cmds}
    health = types.SimpleNamespace(wait_healthy=lambda *a, **k: {"healthy": True})
    snapshots.restore(Site(topo), "after-e1", FakeSSH(), echo=lambda *_: None, health=health)
    assert site_history.for_run(state) | {"since": None} == {
        "how": "snapshot after-e1", "since": None, "runs_before": ["20261129T1200Z-e1-small"]}
