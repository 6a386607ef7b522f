"""Who owns a libvirt domain named for a topology: this checkout, a deleted one, or another."""
import types

import pytest

from testbed.machines import domains as site
from testbed.model import topology
from testbed.model.errors import TestbedError
from testbed.remote.site import Site


class FakeVirsh:
    """libvirt as virsh would report it: {name: (uuid, description)} and volume names."""

    def __init__(self, domains, volumes=()):
        self.domains, self.volumes, self.calls = dict(domains), list(volumes), []

    def __call__(self, *args):
        self.calls.append(args)
        out = ""
        if args[:2] == ("list", "--all"):
            out = "\n".join(self.domains) + "\n"
        elif args[0] == "domuuid":
            out = self.domains[args[1]][0] + "\n"
        elif args[0] == "desc":
            out = self.domains[args[1]][1] or f"No description for domain: {args[1]}"
        elif args[0] == "undefine":
            self.domains.pop(args[1])
        elif args[0] == "vol-list":
            out = " Name Path\n----\n" + "".join(f" {v} /var/lib/libvirt/images/{v}\n" for v in self.volumes)
        elif args[0] == "vol-delete":
            self.volumes.remove(args[3])
        return types.SimpleNamespace(stdout=out, returncode=0)


@pytest.fixture
def small():
    return topology.load("small")


def checkout(tmp_path, name, ids=()):
    root = tmp_path / name
    (root).mkdir()
    (root / "Vagrantfile").write_text("")
    for i, uuid in enumerate(ids):
        d = root / ".vagrant" / "machines" / f"h{i}" / "libvirt"
        d.mkdir(parents=True)
        (d / "id").write_text(uuid)
    return root


def test_orphans_of_a_deleted_checkout_are_swept(tmp_path, monkeypatch, small, capsys):
    me = checkout(tmp_path, "me", ids=["u-mine"])
    virsh = FakeVirsh({"tb-small-dtn": ("u-old", "testbed checkout /gone/clone"),
                       "tb-small-submit": ("u-mine", f"testbed checkout {me}"),
                       "tb-default-dtn": ("u-x", "testbed checkout /elsewhere")},
                      volumes=["tb-small-dtn.img", "tb-default-dtn.img"])
    monkeypatch.setattr(site, "_virsh", virsh)
    monkeypatch.setattr(site, "PROJECT_ROOT", me)
    monkeypatch.setattr(site, "our_domain_ids", lambda root=me: {"u-mine"})
    site.claim_domains(small)
    assert set(virsh.domains) == {"tb-small-submit", "tb-default-dtn"}
    # a domain of ours is still defined, so the topology's volumes stay
    assert virsh.volumes == ["tb-small-dtn.img", "tb-default-dtn.img"]
    assert "left by a deleted checkout: tb-small-dtn" in capsys.readouterr().out


def test_domains_of_another_live_checkout_are_refused_and_untouched(tmp_path, monkeypatch, small):
    me, other = checkout(tmp_path, "me"), checkout(tmp_path, "other")
    virsh = FakeVirsh({"tb-small-dtn": ("u-1", f"testbed checkout {other}")}, volumes=["tb-small-dtn.img"])
    monkeypatch.setattr(site, "_virsh", virsh)
    monkeypatch.setattr(site, "PROJECT_ROOT", me)
    with pytest.raises(TestbedError, match=f"tb-small-dtn belongs to the testbed in {other}; run"):
        site.claim_domains(small)
    assert not [c for c in virsh.calls if c[0] in ("destroy", "undefine", "vol-delete")]


def test_unclaimed_domain_is_refused(tmp_path, monkeypatch, small):
    me = checkout(tmp_path, "me")
    monkeypatch.setattr(site, "_virsh", FakeVirsh({"tb-small-worker1": ("u-1", "")}))
    monkeypatch.setattr(site, "PROJECT_ROOT", me)
    with pytest.raises(TestbedError, match="tb-small-worker1 exists and no checkout claims it"):
        site.claim_domains(small)


def test_domain_vagrant_lost_in_this_checkout_is_swept_with_volumes(tmp_path, monkeypatch, small):
    me = checkout(tmp_path, "me")
    virsh = FakeVirsh({"tb-small-dtn": ("u-1", f"testbed checkout {me}")},
                      volumes=["tb-small-dtn.img", "tb-small-dtn-vdb.qcow2", "other.img"])
    monkeypatch.setattr(site, "_virsh", virsh)
    monkeypatch.setattr(site, "PROJECT_ROOT", me)
    site.claim_domains(small)
    assert virsh.domains == {} and virsh.volumes == ["other.img"]


def test_our_domain_ids_reads_vagrant_machine_ids(tmp_path):
    root = checkout(tmp_path, "me", ids=["a", "b"])
    assert site.our_domain_ids(root) == {"a", "b"}


def _down_with_failing_destroy(tmp_path, monkeypatch, small, virsh):
    from testbed.machines import lifecycle
    state = tmp_path / "state"
    monkeypatch.setenv("TESTBED_STATE_DIR", str(state))
    (state / "small").mkdir(parents=True, exist_ok=True)
    (state / "small" / "plan.json").write_text("{}")
    (state / lifecycle.ACTIVE).write_text("small")
    me = checkout(tmp_path, "me")
    monkeypatch.setattr(site, "_virsh", virsh)
    monkeypatch.setattr(site, "PROJECT_ROOT", me)
    monkeypatch.setattr(site, "our_domain_ids", lambda root=me: set())
    monkeypatch.setattr(lifecycle.VagrantRun, "__call__", lambda self, argv, env: 1)  # destroy fails
    monkeypatch.setattr(lifecycle, "vagrant_env", lambda topo: {})
    return lifecycle.down(Site(small))


def test_down_removes_domains_vagrant_lost_even_when_its_destroy_fails(tmp_path, monkeypatch, small, capsys):
    # a bring-up killed while Vagrant was creating domains: Vagrant no longer knows them
    me = tmp_path / "me"
    virsh = FakeVirsh({"tb-small-cm1": ("u1", f"testbed checkout {me}"),
                       "tb-small-submit": ("u2", f"testbed checkout {me}")},
                      volumes=["tb-small-cm1.img", "tb-small-dtn-vdb.qcow2", "tb-default-x.img"])
    assert _down_with_failing_destroy(tmp_path, monkeypatch, small, virsh) == 0
    assert virsh.domains == {} and virsh.volumes == ["tb-default-x.img"]
    assert "vagrant destroy stopped early" in capsys.readouterr().out


def test_down_fails_naming_the_domains_left_when_neither_could_remove_them(tmp_path, monkeypatch, small):
    other = checkout(tmp_path, "another")   # a live checkout's domain is never swept
    virsh = FakeVirsh({"tb-small-cm1": ("u1", f"testbed checkout {other}")})
    with pytest.raises(TestbedError, match="vagrant destroy failed and tb-small-cm1 still exist"):
        _down_with_failing_destroy(tmp_path, monkeypatch, small, virsh)


# --- which topology is up, after a plain `TESTBED_TOPOLOGY=NAME vagrant up` ----------------------
TINY = """name: tiny
hosts:
  alpha:  {roles: [submit, origin, cm, ccb]}
  beta:   {roles: [worker]}
  gamma:
    roles: [dtn]
"""


def test_the_topology_up_is_read_back_from_the_domains_and_recorded(tmp_path, monkeypatch):
    from testbed.machines import lifecycle
    topos = tmp_path / "topologies"
    topos.mkdir()
    (topos / "tiny.yaml").write_text(TINY)
    (topos / "default.yaml").write_text((topology.TOPOLOGY_DIR / "default.yaml").read_text())
    (topos / "tiny-ha.yaml").write_text(TINY.replace("name: tiny", "name: tiny-ha"))
    monkeypatch.setattr(topology, "TOPOLOGY_DIR", topos)
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    me = checkout(tmp_path, "me", ids=["u-1", "u-2", "u-3"])   # what `vagrant up` left in .vagrant/
    names = {"u-1": "tb-tiny-alpha", "u-2": "tb-tiny-beta", "u-3": "tb-tiny-gamma"}
    calls = []

    def virsh(*args, timeout=None):
        calls.append(args)
        assert args[0] == "domname"
        return types.SimpleNamespace(stdout=names[args[1]] + "\n", returncode=0)
    monkeypatch.setattr(site, "_virsh", virsh)
    assert lifecycle.active_topology(root=me) == "tiny"   # no record: `testbed up` was not used
    assert (tmp_path / "state" / lifecycle.ACTIVE).read_text() == "tiny"
    assert lifecycle.active_topology(root=me) == "tiny" and len(calls) == 3  # recorded: libvirt not asked again

    (tmp_path / "state" / lifecycle.ACTIVE).unlink()
    names.update({"u-1": "tb-tiny-ha-alpha", "u-2": "tb-tiny-ha-beta", "u-3": "tb-tiny-ha-gamma"})
    assert lifecycle.active_topology(root=me) == "tiny-ha"  # the longest name that fits
    (tmp_path / "state" / lifecycle.ACTIVE).unlink()
    names["u-3"] = "tb-default-dtn"
    with pytest.raises(TestbedError, match=r"several topologies \(default, tiny-ha\)"):
        lifecycle.active_topology(root=me)


def test_nothing_is_up_without_domains_or_without_libvirt(tmp_path, monkeypatch):
    from testbed.machines import lifecycle
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    assert lifecycle.active_topology(root=checkout(tmp_path, "empty")) is None

    def no_virsh(*args, timeout=None):
        raise FileNotFoundError("virsh")
    monkeypatch.setattr(site, "_virsh", no_virsh)
    assert lifecycle.active_topology(root=checkout(tmp_path, "me", ids=["u-1"])) is None
    assert not (tmp_path / "state" / lifecycle.ACTIVE).exists()


def test_a_second_down_removes_the_parked_copy_for_good(tmp_path, monkeypatch, small, capsys):
    from testbed.machines import lifecycle
    dropped = []
    monkeypatch.setattr(lifecycle.warm, "park", lambda site, echo: None)   # nothing running to park
    monkeypatch.setattr(lifecycle.warm, "parked", lambda site: {"key": "k"})
    monkeypatch.setattr(lifecycle.warm, "discard", lambda site: dropped.append(site.topo.name))
    assert _down_with_failing_destroy(tmp_path, monkeypatch, small, FakeVirsh({})) == 0
    assert dropped == ["small"] and "removed the parked copy of small" in capsys.readouterr().out


def test_a_parked_site_keeps_its_box_choice_and_a_removed_one_forgets_it(tmp_path, monkeypatch, small):
    from testbed.machines import box_choice, lifecycle
    parked = {"now": True}
    monkeypatch.setattr(lifecycle.warm, "park", lambda site, echo: {"key": "k"} if parked["now"] else None)
    monkeypatch.setattr(lifecycle.warm, "parked", lambda site: None if parked["now"] else {"key": "k"})
    monkeypatch.setattr(lifecycle.warm, "discard", lambda site: None)
    choice = tmp_path / "state" / "small" / box_choice.RECORD
    choice.parent.mkdir(parents=True)
    choice.write_text("debian13+release:sid\n")          # `up --box debian13+release:sid`
    assert _down_with_failing_destroy(tmp_path, monkeypatch, small, FakeVirsh({})) == 0
    # a plain `up` brings the parked site back on its box, not on the topology file's
    assert str(box_choice.apply_recorded(Site(topology.load("small"))).topo.box_spec) == "debian13+release:sid"
    parked["now"] = False                                  # the second `down` removes it for good
    (tmp_path / "state" / lifecycle.ACTIVE).write_text("small")
    assert lifecycle.down(Site(small)) == 0
    assert not choice.exists()
