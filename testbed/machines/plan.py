"""The plan the Vagrantfile reads: VMs, networks, disks, box, accelerator.

`python -m testbed plan --json` prints it (and renders every host's bundle),
so the topology file stays the one source of truth for Vagrant too.
"""
import os

from testbed.machines import accel, packages, render
from testbed.machines.box import Box
from testbed.machines.state import TestbedState

KERNEL_CMDLINE = "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet"


def bootstrap_key():
    """Vagrant's well-known key: only for the very first SSH login to a new VM."""
    import glob
    found = sorted(glob.glob("/usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant"))
    env = os.environ.get("VAGRANT_INSECURE_KEY")
    return env or (found[-1] if found else os.path.expanduser("~/.vagrant.d/insecure_private_key"))


def build(topo, profile, state=None, accelerator=None):
    state = (state or TestbedState(topo.name)).ensure_secrets()
    accelerator = accelerator or accel.detect()
    bundles = render.write_all(state, topo, profile, accelerator)
    box = Box("debian13")
    local_boot = topo.box == "debian13"
    nets = topo.network_names()
    hosts = []
    for h in topo.hosts.values():
        hosts.append({
            "name": h.name, "roles": h.roles, "memory_mb": h.memory_mb, "cpus": h.cpus,
            "site_ip": h.site_ip, "bundle": str(bundles[h.name]),
            "disks": ([{"size_gb": h.disks.size_gb}] * h.disks.count) if h.disks else [],
        })
    return {
        "topology": topo.name,
        "accel": accelerator,
        "box": {"kind": topo.box, "name": packages.vagrant_box(topo.box, box.name),
                "built": box.built if local_boot else True, "direct_kernel_boot": local_boot,
                "kernel": str(box.kernel), "initrd": str(box.initrd), "cmdline": KERNEL_CMDLINE,
                "install": packages.install_commands(topo.box)},
        "ssh": {"private_key": str(state.ssh_key), "bootstrap_key": bootstrap_key()},
        "networks": {
            "management": {"name": nets["management"], "cidr": str(topo.management_net)},
            "site": {"name": nets["site"], "cidr": str(topo.site_net),
                     "netmask": str(topo.site_net.netmask), "host_ip": topo.site_gateway},
        },
        "profile": profile.name,
        "hosts": hosts,
    }
