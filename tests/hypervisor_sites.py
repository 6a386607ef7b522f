"""Topologies with VMs on two hypervisors, and a fake of the hypervisors' virsh and shells,
for the tests of remote hypervisors (model/hypervisors.py, machines/hypervisor_preflight.py,
machines/fabric.py)."""
import copy

from testbed.machines.hypervisor_preflight import Ran
from testbed.model import topology

LAB2 = "qemu+ssh://root@192.0.2.2/system?keyfile=/root/.ssh/id_lab"
TWO = {
    "name": "two",
    "networks": {"management": "192.168.170.0/24", "site": "10.170.0.0/24"},
    "hypervisors": {
        "here": {"uri": "qemu:///system", "address": "192.0.2.1", "site_interface": "eth0"},
        "lab2": {"uri": LAB2, "site_interface": "eth1"},
    },
    "hosts": {
        "submit": {"roles": ["submit", "origin"], "memory_mb": 768, "files": 2, "file_mb": 2},
        "cm1": {"roles": ["cm", "ccb"]},
        "worker1": {"roles": ["worker"], "startds": 2, "slots_per_startd": 8},
        "worker2": {"roles": ["worker"], "hypervisor": "lab2", "memory_mb": 1024, "startds": 2,
                    "slots_per_startd": 8},
        "dtn": {"roles": ["dtn"], "hypervisor": "lab2", "memory_mb": 2048, "disks": {"count": 4, "size_gb": 1}},
    },
}


def two(mutate=None, source="/sites/two.yaml"):
    data = copy.deepcopy(TWO)
    if mutate:
        mutate(data)
    return topology.parse(data, source)


def capabilities(uuid, types=("qemu", "kvm"), arch="x86_64"):
    domains = "".join(f"<domain type='{t}'/>" for t in types)
    return (f"<capabilities><host><uuid>{uuid}</uuid><cpu><arch>x86_64</arch></cpu></host>"
            f"<guest><os_type>hvm</os_type><arch name='{arch}'><wordsize>64</wordsize>"
            f"<emulator>/usr/bin/qemu-system-x86_64</emulator>{domains}</arch></guest></capabilities>")


VERSION = ("Compiled against library: libvirt 9.0.0\nUsing library: libvirt 9.0.0\nUsing API: QEMU 9.0.0\n"
           "Running hypervisor: QEMU 7.2.0\nRunning against daemon: 9.0.0\n")
MEMSTATS = ("total  :             32768000 KiB\nfree   :              8192000 KiB\n"
            "buffers:               102400 KiB\ncached :              2048000 KiB\n")
POOL = ("Name:           default\nUUID:           0f\nState:          running\nPersistent:     yes\n"
        "Autostart:      yes\nCapacity:       98.00 GiB\nAllocation:     10.00 GiB\nAvailable:      88.00 GiB\n")
PROBE_OK = "root=yes\nprobe=ok\n"


class FakeHypervisors:
    """Every hypervisor answers well unless `answers[(where, what)]` says otherwise: `where` is
    the libvirt URI (virsh) or 'here' / the SSH host (a shell), `what` the virsh verb or
    'probe' (the shell probe), 'boot' (the box files check), 'link plan|up|down'
    (site-link.sh), 'upload', 'console'. Records every call as (where, what, argv, stdin)."""

    def __init__(self, answers=None, uuids=None, networks=None):
        self.answers = dict(answers or {})
        self.uuids = {"qemu:///system": "uuid-here", LAB2: "uuid-lab2", **(uuids or {})}
        self.networks = dict(networks or {})   # (uri, name) -> {'xml', 'active'}
        self.calls = []

    def what(self, argv):
        if argv[0] == "virsh":
            return argv[2], argv[3]
        if argv[:2] == ["bash", "-s"]:
            return "here", f"link {argv[2]}"
        where = "here" if argv[0] == "bash" else argv[-2]
        command = argv[-1]
        if "probe=ok" in command:
            return where, "probe"
        if "sha256sum -c" in command or command == "true" or command.endswith("bash -c true"):
            return where, "boot"
        if "bash -s " in command:
            return where, "link " + command.rsplit(" ", 1)[1]
        if ".part" in command:
            return where, "upload"
        if "mkdir -p" in command:
            return where, "console"
        return where, command

    def __call__(self, argv, data=None, timeout=None):
        where, what = self.what(argv)
        self.calls.append((where, what, list(argv), data))
        if (where, what) in self.answers:
            return self.answers[(where, what)]
        if what == "version":   # as virsh prints it: the daemon's version only with --daemon
            return Ran(0, VERSION if "--daemon" in argv else VERSION.replace("Running against daemon: 9.0.0\n", ""), "")
        if what == "capabilities":
            return Ran(0, capabilities(self.uuids.get(where, f"uuid-{where}")), "")
        if what == "nodememstats":
            return Ran(0, MEMSTATS, "")
        if what == "pool-info":
            return Ran(0, POOL, "")
        if what == "probe":
            return Ran(0, PROBE_OK, "")
        if what == "net-dumpxml":
            net = self.networks.get((where, argv[4]))
            return Ran(0, net["xml"], "") if net else Ran(1, "", f"error: network '{argv[4]}' not found")
        if what == "net-info":
            net = self.networks.get((where, argv[4]))
            return Ran(0, f"Name: {argv[4]}\nActive:         {'yes' if net['active'] else 'no'}\n"
                          "Bridge:         virbr9\n", "") if net else Ran(1, "", "error: not found")
        if what == "net-define":
            from pathlib import Path
            xml = Path(argv[4]).read_text()
            name = xml.split("<name>")[1].split("</name>")[0]
            self.networks[(where, name)] = {"xml": xml, "active": False}
            return Ran(0, f"Network {name} defined", "")
        if what == "net-start":
            self.networks[(where, argv[4])]["active"] = True
            return Ran(0, "", "")
        return Ran(0, "", "")

    def did(self, what, where=None):
        return [c for c in self.calls if c[1] == what and (where is None or c[0] == where)]
