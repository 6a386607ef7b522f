"""The plan the Vagrantfile reads: VMs, networks, disks, box, accelerator, guest CPU.

`testbed up` (and `testbed plan --write`) renders every host's bundle and writes
the plan to .testbed/<topology>/plan.json; the Vagrantfile only reads that file,
so the topology file stays the one source of truth for Vagrant too.
"""
import json
import os
import shutil

from testbed.machines import accel, disks as disk_model, fabric, host_ledger, packages, render
from testbed.model.clock import utc_iso
from testbed.model.state import write_json
from testbed.remote import console

KERNEL_CMDLINE = "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet"
PLAN_FILE = "plan.json"


def bootstrap_key():
    """Vagrant's well-known key: only for the very first SSH login to a new VM."""
    import glob
    found = sorted(glob.glob("/usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant"))
    env = os.environ.get("VAGRANT_INSECURE_KEY")
    return env or (found[-1] if found else os.path.expanduser("~/.vagrant.d/insecure_private_key"))


def data_disks(host, cache):
    """The Vagrantfile's entries for a host's data disks: size and host cache mode. The
    limits are not here: vagrant-libvirt 0.11 has no iotune option, so `up` sets them
    with `virsh blkdeviotune` once the domain runs (testbed/machines/disks.py)."""
    if not host.disks:
        return []
    return [{"size_gb": host.disks.size_gb, "cache": cache["mode"]} for _ in range(host.disks.count)]


def build(topo, profile, state, accelerator=None, cache=None, *, box):
    """The plan the Vagrantfile reads, its bundles rendered into `state` (the site's TestbedState);
    `box`: the topology's box (patched_box.box_for), resolved once by the caller."""
    state = state.ensure_secrets()
    accelerator = accelerator or accel.detect()
    dtn = topo.role_host("dtn")
    dtn_hv = topo.hypervisor_of(dtn.name) if dtn else None
    if cache is None and dtn and dtn.disks and dtn_hv and dtn_hv.joins_by_vxlan:
        where = dtn_hv.label
        cache = disk_model.choose_cache_mode(probe=lambda: (
            False, f"the pool of {where} is not probed from here (TESTBED_DISK_CACHE=none where it takes O_DIRECT)"))
    cache = cache or (disk_model.choose_cache_mode() if dtn and dtn.disks else {"mode": "default", "why": "no data disks"})
    bundles = render.write_all(state, topo, profile, accelerator)
    local_boot = topo.box == "debian13"
    nets = topo.network_names()
    hosts = []
    for h in topo.hosts.values():
        entry = {
            "name": h.name, "roles": h.roles, "memory_mb": h.memory_mb, "cpus": h.cpus,
            "site_ip": h.site_ip, "bundle": str(bundles[h.name]),
            "disks": data_disks(h, cache),
            "console_log": str(console_log(topo, h.name)),
            # an existing host: Vagrant skips it (provisioned over SSH, never created)
            "existing": {"address": h.existing.address, "user": h.existing.user,
                         "interface": h.existing.interface} if h.existing else None,
        }
        if topo.hypervisors and not h.existing:
            entry["hypervisor"] = hypervisor_entry(topo, h, box)
        hosts.append(entry)
    data = {
        "topology": topo.name,
        "accel": accelerator,
        "box": {"kind": topo.box, "spec": str(topo.box_spec), "name": packages.vagrant_box(topo.box, box.name),
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
        "guest_cpu": accel.guest_cpu(accelerator),
        "data_disks": {"cache": cache["mode"], "cache_why": cache["why"],
                       "mb_per_s": dtn.disks.mb_per_s if dtn and dtn.disks else 0,
                       "iops": dtn.disks.iops if dtn and dtn.disks else 0},
        "hosts": hosts,
    }
    if topo.hypervisors:
        data.update(fabric.describe(topo))
    return data


def hypervisor_entry(topo, host, box):
    """What the Vagrantfile sets for a VM of a topology with `hypervisors:`: vagrant-libvirt's
    `uri` and `storage_pool_name`, and on another machine the box's kernel and initrd there."""
    hv = topo.hypervisor_of(host.name)
    entry = {"name": hv.name, "uri": hv.uri, "storage_pool": hv.pool}
    if hv.joins_by_vxlan:
        entry.update(fabric.boot_paths(box.name))
    return entry


def console_dir():
    """Where libvirt writes each guest's serial console (remote/console.py)."""
    return console.console_dir()


def console_log(topo, host):
    return console.console_log(topo.name, host)


def recorded_accel(state):
    """The accelerator the plan was written for (no new KVM probe), else a probe."""
    try:
        return json.loads(plan_path(state).read_text())["accel"]
    except (OSError, ValueError, KeyError):
        return accel.detect()


def plan_path(state):
    return state.dir / PLAN_FILE


def write(topo, profile, state, accelerator=None, *, box):
    """Render the bundles and write plan.json atomically into `state`; returns (path, plan)."""
    state = state.ensure_secrets()
    data = build(topo, profile, state, accelerator, box=box)
    data["written"] = utc_iso()
    path = plan_path(state)
    host_ledger.note_dir(console_dir().parent)
    console_dir().mkdir(parents=True, exist_ok=True)
    try:  # libvirt's qemu user writes the guests' consoles here
        shutil.chown(console_dir(), user="libvirt-qemu")
    except (LookupError, OSError):
        pass
    write_json(path, data)
    return path, data
