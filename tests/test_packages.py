import copy

import pytest

from testbed.machines import packages, plan
from testbed.machines.patched_box import box_for
from testbed.model import profiles, topology
from testbed.model.state import TestbedState


def test_debian_guests_install_nothing_at_run_time():
    assert packages.install_commands("debian13") == []


def test_el9_uses_htcondor_repo_and_epel_xrootd():
    cmds = packages.install_commands("el9")
    text = "\n".join(cmds)
    assert cmds[0] == "dnf -y -q install epel-release"  # EPEL first: it carries XRootD
    assert "research.cs.wisc.edu/htcondor/repo/23.x/htcondor-release-current.el9.noarch.rpm" in text
    install = next(c for c in cmds if c.startswith("dnf -y -q install 'condor"))
    for pkg in ("'condor-23.9.*'", "xrootd-server", "xrootd-server-libs", "xrootd-client", "mdadm",
                "xfsprogs", "iproute-tc", "fio", "iperf3"):
        assert pkg in install.split()
    assert "systemctl disable --now condor.service" in text


def test_unknown_box_kind():
    with pytest.raises(ValueError):
        packages.install_commands("win95")


def test_plan_selects_el9_box_without_direct_kernel_boot(tmp_path):
    data = {"name": "el", "box": "el9", "hosts": {
        "submit": {"roles": ["submit"]}, "cm1": {"roles": ["cm"]}, "w1": {"roles": ["worker"]}}}
    topo = topology.parse(copy.deepcopy(data), "el.yaml")
    p = plan.build(topo, profiles.load("default"), TestbedState("el", root=tmp_path), accelerator="kvm",
                   box=box_for(topo.box_spec))
    assert p["box"]["name"] == "almalinux/9" and p["box"]["direct_kernel_boot"] is False
    assert p["box"]["install"] == packages.install_commands("el9")
    small = topology.load("small")
    debian = plan.build(small, profiles.load("default"), TestbedState("small", root=tmp_path), accelerator="tcg",
                        box=box_for(small.box_spec))
    assert debian["box"]["direct_kernel_boot"] is True and debian["box"]["install"] == []
    assert [len(h["disks"]) for h in debian["hosts"]] == [0, 0, 0, 0, 6]
