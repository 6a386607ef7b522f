"""The site network across hypervisors, and what a hypervisor on another machine needs
before vagrant-libvirt creates a VM there.

Each hypervisor that VXLAN joins (model/hypervisors.py `Layout.joined`: this machine and every
one on another machine that creates a VM) gets its own copy of the site network as a
libvirt network (provision/templates/hypervisor/site-network.xml.j2: isolated, no DHCP,
its bridge at .1 here and .2, .3, ... on the others, MTU 1500 - 50), defined before
Vagrant runs, so that vagrant-libvirt finds it by name and address and takes it as it is.
provision/hypervisor/site-link.sh then puts a VXLAN port on that bridge (the kernel's
`ip link add ... type vxlan`, one forwarding entry per other hypervisor) from the settings
rendered for it (site-link.env.j2). A hypervisor on another machine also gets the box's
kernel and initrd (the guests boot them directly; vagrant-libvirt uploads only the disk
image, into the pool) and the folder of the guests' consoles. Every step is idempotent,
runs through the injectable runner of machines/hypervisor_preflight.py, and has a read-only form
for `up --dry-run`. `remove` undoes the VXLAN ports and the networks of the other machines.
"""
import shlex
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.machines import render
from testbed.machines.box_image import sha256
from testbed.machines import hypervisor_preflight
from testbed.model import constants as c
from testbed.model.errors import TestbedError

LINK_SCRIPT = PROJECT_ROOT / "provision" / "hypervisor" / "site-link.sh"
NETWORK_TEMPLATE = "hypervisor/site-network.xml.j2"
LINK_TEMPLATE = "hypervisor/site-link.env.j2"
BOOT_FILES = ("kernel", "initrd")


def vni(topo):
    """The VXLAN network identifier of a topology's site network: its /24 prefix (24 bits),
    the same on every hypervisor and different for two sites with different networks."""
    return (int(topo.site_net.network_address) >> 8) & 0xFFFFFF


def device(topo):
    return f"tbvx-{topo.name}"   # at most 15 characters: topology names have at most 10


def mtu():
    return c.UNDERLAY_MTU - c.VXLAN_OVERHEAD   # Layout.site_mtu of a joined site


def site_network(topo):
    return topo.network_names()["site"]


def context(topo, hv):
    layout = topo.layout
    return {"topo": topo, "hv": hv, "c": c.as_template_context(), "network": site_network(topo),
            "device": device(topo), "vni": vni(topo), "mtu": mtu(),
            "bridge_address": layout.bridges[hv.name],
            "peers": [m.address for m in layout.joined if m.name != hv.name]}


def render_files(topo, hv):
    """{'site-network.xml', 'site-link.env'}: what this hypervisor's copy of the site network is."""
    env, ctx = render.environment(), context(topo, hv)
    return {"site-network.xml": env.get_template(NETWORK_TEMPLATE).render(ctx),
            "site-link.env": env.get_template(LINK_TEMPLATE).render(ctx)}


def write(topo, state):
    """Render every member's files under .testbed/TOPOLOGY/hypervisors/NAME/; {name: folder}."""
    out = {}
    for hv in topo.layout.joined:
        folder = state.dir / "hypervisors" / hv.name
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in render_files(topo, hv).items():
            (folder / name).write_text(text)
        out[hv.name] = folder
    return out


def describe(topo):
    """The plan's `hypervisors` section: each hypervisor acted on, and the VXLAN."""
    layout = topo.layout
    return {"hypervisors": {hv.name: {"uri": hv.uri, "pool": hv.pool, "address": hv.address or None,
                                      "site_bridge": layout.bridges.get(hv.name)}
                            for hv in layout.involved},
            "site_link": {"device": device(topo), "vni": vni(topo), "port": c.VXLAN_PORT, "mtu": mtu(),
                          "members": sorted(layout.bridges)} if layout.joined else None}


# --- the box's kernel and initrd on another machine -----------------------------------------
def boot_paths(box_name):
    """Where a hypervisor on another machine keeps the box's kernel and initrd."""
    return {"kernel": f"{c.HYPERVISOR_BOOT_DIR}/{box_name}-vmlinuz",
            "initrd": f"{c.HYPERVISOR_BOOT_DIR}/{box_name}-initrd.img"}


def boot_files_missing(hv, box, run):
    """The box files (kernel, initrd) the hypervisor lacks or has in another version."""
    paths, local = boot_paths(box.name), {"kernel": box.kernel, "initrd": box.initrd}
    check = "; ".join(f"echo {shlex.quote(f'{sha256(local[k])}  {paths[k]}')} | sha256sum -c --status "
                      f"2>/dev/null && echo have={k}" for k in BOOT_FILES if Path(local[k]).exists())
    have = run(hypervisor_preflight.shell(hv, check or "true"), timeout=120).stdout
    return [k for k in BOOT_FILES if f"have={k}" not in have]


def console_command(hv, console_dir):
    """The guests' console folder on the hypervisor, writable by libvirt's qemu user there."""
    d = shlex.quote(str(console_dir))
    owned = f"mkdir -p {d} && (chown libvirt-qemu {d} 2>/dev/null || chown qemu {d} 2>/dev/null || true)"
    return f"{hv.root_prefix}bash -c {shlex.quote(owned)}"


def upload_boot_files(hv, box, run, echo=print):
    for kind in boot_files_missing(hv, box, run):
        target = boot_paths(box.name)[kind]
        source = box.kernel if kind == "kernel" else box.initrd
        tmp = shlex.quote(target + ".part")
        command = (f"{hv.root_prefix}bash -c " + shlex.quote(
            f"mkdir -p {shlex.quote(c.HYPERVISOR_BOOT_DIR)} && cat > {tmp} && chmod 644 {tmp} && "
            f"mv {tmp} {shlex.quote(target)}"))
        res = run(hypervisor_preflight.shell(hv, command), data=Path(source).read_bytes(), timeout=1800)
        if not res.ok:
            raise TestbedError(f"{hv.label}: copying the box's {kind} to {target} failed: {res.last_line()}")
        echo(f"{hv.label}: copied the box's {kind} to {target}")


# --- the network and its VXLAN port ------------------------------------------------------
def link_argv(hv, mode):
    """argv that runs site-link.sh (settings and script on stdin) on the hypervisor's machine."""
    return ["bash", "-s", mode] if hv.local else hv.ssh_argv() + [f"{hv.root_prefix}bash -s {mode}"]


def link_input(topo, hv):
    return render_files(topo, hv)["site-link.env"] + "\n" + LINK_SCRIPT.read_text()


def network_state(topo, hv, run):
    """'missing', 'inactive', 'active' or 'different: why' of the site network on `hv`."""
    name = site_network(topo)
    dumped = run(hypervisor_preflight.virsh(hv, "net-dumpxml", name), timeout=60)
    if not dumped.ok:
        return "missing"
    want_ip, text = topo.layout.bridges[hv.name], dumped.stdout
    if f"address='{want_ip}'" not in text and f'address="{want_ip}"' not in text:
        return f"different: its bridge address is not {want_ip}"
    if f"size='{mtu()}'" not in text and f'size="{mtu()}"' not in text:
        return f"different: its MTU is not {mtu()}"
    info = run(hypervisor_preflight.virsh(hv, "net-info", name), timeout=60).stdout
    active = any(line.split(":", 1)[0].strip() == "Active" and line.split(":", 1)[1].strip() == "yes"
                 for line in info.splitlines() if ":" in line)
    return "active" if active else "inactive"


def plan_actions(topo, box, run=None, console_dir=None):
    """{hypervisor name: [what `up` would change there]}, read-only (the dry run). `box`: the
    Debian box the guests boot directly (None for a box from elsewhere)."""
    run = run or hypervisor_preflight.run_command
    out, layout = {}, topo.layout
    for hv in layout.involved:
        lines = []
        if hv.joins_by_vxlan:
            if console_dir:
                lines.append(f"create {console_dir} (the guests' consoles) if missing")
            if box is None:
                pass
            elif box.built:
                lines += [f"copy the box's {k} to {boot_paths(box.name)[k]}" for k in boot_files_missing(hv, box, run)]
            else:
                lines.append(f"copy the box's kernel and initrd to {c.HYPERVISOR_BOOT_DIR} once it is built")
        if not hv.local and box is not None:
            lines.append(f"upload the box image {box.name} into pool {hv.pool} if it is not there "
                         "(vagrant-libvirt, on the first VM)")
        if hv in layout.joined:
            state = network_state(topo, hv, run)
            bridge = layout.bridges[hv.name]
            net = f"libvirt network {site_network(topo)} (isolated, bridge {bridge}, MTU {mtu()})"
            if state == "missing":
                lines.append(f"define and start {net}")
            elif state == "inactive":
                lines.append(f"start {net}")
            elif state.startswith("different"):
                lines.append(f"refuse: {site_network(topo)} exists {state[len('different: '):]}")
            res = run(link_argv(hv, "plan"), data=link_input(topo, hv), timeout=60)
            lines += [l.split("\t", 1)[1] for l in res.stdout.splitlines() if l.startswith("would\t")]
            if not res.ok:
                lines.append(f"refuse: site-link.sh plan: {res.last_line()}")
        if lines:
            out[hv.name] = lines
    return out


def ensure_network(topo, hv, folder, run, echo=print):
    state = network_state(topo, hv, run)
    name = site_network(topo)
    if state.startswith("different"):
        raise TestbedError(f"{hv.label}: libvirt network {name} exists and is not the testbed's site network "
                           f"({state[len('different: '):]}); `testbed -t {topo.name} down` first")
    if state == "missing":
        res = run(hypervisor_preflight.virsh(hv, "net-define", str(folder / "site-network.xml")), timeout=60)
        if not res.ok:
            raise TestbedError(f"{hv.label}: virsh net-define {name}: {res.last_line()}")
    if state != "active":
        res = run(hypervisor_preflight.virsh(hv, "net-start", name), timeout=60)
        if not res.ok:
            raise TestbedError(f"{hv.label}: virsh net-start {name}: {res.last_line()}")
        echo(f"{hv.label}: site network {name} {'defined and ' if state == 'missing' else ''}started "
             f"(bridge {topo.layout.bridges[hv.name]}, MTU {mtu()})")


def join(topo, state, box, run=None, console_dir=None, echo=print):
    """Before Vagrant: on each hypervisor of another machine the consoles' folder and the
    box's kernel and initrd; on each member of the VXLAN its site network and VXLAN port."""
    run, layout = run or hypervisor_preflight.run_command, topo.layout
    for hv in layout.involved:
        if not hv.joins_by_vxlan:
            continue
        if console_dir:
            res = run(hypervisor_preflight.shell(hv, console_command(hv, console_dir)), timeout=60)
            if not res.ok:
                raise TestbedError(f"{hv.label}: creating {console_dir}: {res.last_line()}")
        if box is not None and box.built:
            upload_boot_files(hv, box, run, echo)
    folders = write(topo, state)
    for hv in layout.joined:
        ensure_network(topo, hv, folders[hv.name], run, echo)
        res = run(link_argv(hv, "up"), data=link_input(topo, hv), timeout=120)
        if not res.ok:
            raise TestbedError(f"{hv.label}: site-link.sh up: {res.last_line()}")
        echo(f"{hv.label}: VXLAN port {device(topo)} (id {vni(topo)}) on {site_network(topo)}, to "
             + ", ".join(context(topo, hv)["peers"]))


def leave(topo, run=None, echo=print):
    """`down`: the VXLAN port on every member, and the site and management networks of the
    hypervisors on other machines (this machine's are `down`'s own). Returns what was left."""
    run, layout, left = run or hypervisor_preflight.run_command, topo.layout, []
    for hv in layout.joined:
        res = run(link_argv(hv, "down"), data=link_input(topo, hv), timeout=120)
        if not res.ok:
            left.append(f"{hv.label}: VXLAN port {device(topo)}: {res.last_line()}")
        elif res.stdout.strip():
            echo(f"{hv.label}: removed VXLAN port {device(topo)}")
    for hv in layout.involved:
        if hv.joins_by_vxlan:
            for net in topo.network_names().values():
                run(hypervisor_preflight.virsh(hv, "net-destroy", net), timeout=60)
                run(hypervisor_preflight.virsh(hv, "net-undefine", net), timeout=60)
    return left
