"""Remote hypervisors (topology `hypervisors:`): what `up` checks on each before anything
changes, and what `up --dry-run` prints for each.

`preflight` asks every libvirt that is not this machine's, through its URI: `virsh
version` (reachable, and which libvirt), `virsh capabilities` (KVM or TCG for x86_64
guests, and the host's UUID), `virsh nodememstats` (room for the VMs placed there) and
`virsh pool-info` (the storage pool the box image is uploaded to). Each hypervisor on
another machine, and this machine, also get a shell probe: the tools the VXLAN set-up
runs (ip, bridge, virsh), the kernel's vxlan module, root or sudo. Every command goes
through one injectable runner, so the unit tests fake the hypervisors. A hypervisor
refused is one line naming it and every reason; nothing is changed anywhere then.
"""
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from testbed.machines import accel
from testbed.model import constants as c
from testbed.model.errors import TestbedError
from testbed.model.topology import GUEST_OVERHEAD_MB

# the VXLAN set-up's needs, checked on this machine and on each hypervisor of another machine
SHELL_PROBE = r"""
for tool in ip bridge virsh; do command -v "$tool" >/dev/null 2>&1 || echo "missing=$tool"; done
[ -d /sys/module/vxlan ] || modprobe -n -q vxlan 2>/dev/null \
  || zgrep -qE '^CONFIG_VXLAN=(y|m)' /proc/config.gz 2>/dev/null || echo "vxlan=no"
[ "$(id -u)" = 0 ] && echo "root=yes" || { sudo -n true 2>/dev/null && echo "root=sudo" || echo "root=no"; }
echo "probe=ok"
"""
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
ACCEL_DOMAIN = {"kvm": "kvm", "tcg": "qemu"}   # the plan's accelerator -> libvirt's domain type


@dataclass
class Ran:
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self):
        return self.rc == 0

    def last_line(self):
        text = (self.stderr or self.stdout or "").strip()
        return text.splitlines()[-1] if text else f"exit code {self.rc}"


def run_command(argv, data=None, timeout=60):
    """The runner every check and set-up step goes through: argv, optional stdin (text or
    bytes), a time-out -> Ran."""
    if isinstance(data, str):
        data = data.encode()
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Ran(124, "", f"timed out after {timeout} s")
    except OSError as exc:
        return Ran(127, "", f"{argv[0]}: {exc.strerror}")
    return Ran(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def virsh(hv, *args):
    return ["virsh", "-c", hv.uri, *args]


def shell(hv, command):
    """argv that runs a shell command on the hypervisor's machine: here, or over its SSH login."""
    if hv.local:
        return ["bash", "-c", command]
    return hv.ssh_argv() + [f"bash -c {shlex.quote(command)}"]


# --- what virsh prints ------------------------------------------------------------------
def parse_version(text):
    """`virsh version --daemon` -> {'daemon': '9.0.0', 'hypervisor': 'QEMU 7.2.0'} (what it printed)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Running against daemon":
            out["daemon"] = value.strip()
        elif key.strip() == "Running hypervisor":
            out["hypervisor"] = value.strip()
    return out


def version_tuple(text):
    return tuple(int(p) for p in re.findall(r"\d+", text or "")[:2]) or (0,)


def parse_capabilities(text):
    """`virsh capabilities` -> (host UUID, {domain types of x86_64 guests}); None when it is
    no capabilities XML."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    if root.tag != "capabilities":
        return None
    types = {d.get("type") for guest in root.iter("guest") for arch in guest.iter("arch")
             if arch.get("name") == "x86_64" for d in arch.iter("domain")}
    return (root.findtext("host/uuid") or "").strip(), types - {None}


def parse_memstats(text):
    """`virsh nodememstats` -> MB the VMs can have: free + buffers + cached (None: unreadable)."""
    kib = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\w+)\s*:\s*(\d+)\s*KiB", line)
        if m:
            kib[m.group(1)] = int(m.group(2))
    if "free" not in kib:
        return None
    return (kib["free"] + kib.get("buffers", 0) + kib.get("cached", 0)) // 1024


def parse_pool_info(text):
    """`virsh pool-info POOL` -> {'state': 'running', 'available_gb': 38.2}."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "state":
            out["state"] = value
        elif key == "available":
            parts = value.split()
            if len(parts) == 2 and parts[1] in UNITS:
                out["available_gb"] = round(float(parts[0]) * UNITS[parts[1]] / 2**30, 1)
    return out


def parse_probe(text):
    out = {"missing": []}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "missing":
            out["missing"].append(value)
        else:
            out[key] = value
    return out


# --- the checks -------------------------------------------------------------------------
def placed(topo, hv):
    return [h for h in topo.vm_hosts if topo.hypervisor_of(h.name).name == hv.name]


def memory_needed_mb(hosts):
    return sum(h.memory_mb + GUEST_OVERHEAD_MB for h in hosts)


def disk_needed_gb(hosts, box_image_bytes):
    data = sum(h.disks.count * h.disks.size_gb for h in hosts if h.disks)
    return round(box_image_bytes / 2**30 + data, 1)


def check_libvirt(topo, hv, accelerator, tb_cache, box_image_bytes, run):
    """(facts, refusals) of one libvirt of another URI than this machine's."""
    facts, problems = {}, []
    res = run(virsh(hv, "version", "--daemon"), timeout=60)   # without --daemon virsh prints the library's only
    if not res.ok:
        return facts, [f"unreachable: virsh -c {hv.uri} version --daemon: {res.last_line()}"]
    facts.update(parse_version(res.stdout))
    caps = run(virsh(hv, "capabilities"), timeout=60)
    parsed = parse_capabilities(caps.stdout) if caps.ok else None
    if parsed is None:
        problems.append(f"no KVM/TCG information: virsh capabilities gave "
                        f"{caps.last_line() if not caps.ok else 'no capabilities XML'}")
    else:
        facts["uuid"], types = parsed
        facts["domain_types"] = sorted(types)
        if not types & {"kvm", "qemu"}:
            problems.append("its capabilities offer no x86_64 guests, neither KVM nor TCG "
                            "(is qemu-system-x86 installed there?)")
        elif ACCEL_DOMAIN[accelerator] not in types:
            problems.append("has no KVM (its capabilities offer TCG only) and the plan uses KVM, as this "
                            "machine has it: bring the site up with TESTBED_ACCEL=tcg")
    if accelerator == "tcg" and tb_cache and version_tuple(facts.get("daemon")) < c.LIBVIRT_TB_CACHE_MIN:
        problems.append(f"runs libvirt {facts.get('daemon', '?')}; the plan's TCG guests need libvirt >= "
                        f"{'.'.join(map(str, c.LIBVIRT_TB_CACHE_MIN))} (<tcg><tb-cache>), or TESTBED_TB_CACHE_MB=0")
    hosts = placed(topo, hv)
    if not hv.on_this_machine:  # this machine's free memory is the local check's (topology.check_fits)
        mem = run(virsh(hv, "nodememstats"), timeout=60)
        free = parse_memstats(mem.stdout) if mem.ok else None
        facts["free_mb"] = free
        need = memory_needed_mb(hosts)
        if free is None:
            problems.append(f"its free memory could not be read (virsh nodememstats: {mem.last_line()})")
        elif need > free:
            vms = ", ".join(f"{h.name} {h.memory_mb} MB" for h in hosts)
            problems.append(f"has {free} MB free (virsh nodememstats: free + buffers + cached), its VMs "
                            f"({vms}) need {need} MB with QEMU's own {GUEST_OVERHEAD_MB} MB each")
    pool = run(virsh(hv, "pool-info", hv.pool), timeout=60)
    info = parse_pool_info(pool.stdout) if pool.ok else {}
    if not pool.ok:
        problems.append(f"has no storage pool {hv.pool} (the box image and the VMs' disks go there; "
                        "`pool:` names another)")
    elif info.get("state") != "running":
        problems.append(f"its storage pool {hv.pool} is {info.get('state', 'not running')} "
                        f"(virsh -c {hv.uri} pool-start {hv.pool})")
    else:
        facts["pool_free_gb"] = info.get("available_gb")
        need_gb = disk_needed_gb(hosts, box_image_bytes)
        if info.get("available_gb") is not None and need_gb > info["available_gb"]:
            problems.append(f"its storage pool {hv.pool} has {info['available_gb']:g} GB free; the box image "
                            f"and its VMs' data disks need {need_gb:g} GB")
    return facts, problems


def check_shell(hv, run):
    """(facts, refusals) of the shell probe on a member of the VXLAN (this machine or another)."""
    res = run(shell(hv, SHELL_PROBE), timeout=60)
    got = parse_probe(res.stdout)
    if got.get("probe") != "ok":
        where = "this machine" if hv.local else f"its SSH login ({' '.join(hv.ssh_argv()[-3:])})"
        return {}, [f"the VXLAN set-up cannot run a shell on {where}: {res.last_line()}"]
    problems = []
    if got["missing"]:
        problems.append(f"lacks {', '.join(got['missing'])} (iproute2, libvirt-clients), which join its site "
                        "network to the others")
    if got.get("vxlan") == "no":
        problems.append("its kernel has no vxlan module")
    if got.get("root") == "no":
        problems.append("the VXLAN set-up needs root: " + ("run the testbed as root" if hv.local else
                        f"log in as root or as a user with sudo without a password ({hv.ssh_user or 'the URI gives none'})"))
    return {"root": got.get("root")}, problems


def image_bytes(box):
    """The size of the box's disk image (what vagrant-libvirt uploads to a remote pool), 0 if unknown."""
    try:
        return (box.dir / "box.img").stat().st_size if box else 0
    except OSError:
        return 0


def preflight(topo, accelerator, run=None, tb_cache=None, box=None):
    """Check every hypervisor the topology places a VM on (other than this machine's own
    socket) and every member of the VXLAN; {name: facts}. `box`: the box the guests boot,
    whose image each remote pool must have room for. TestbedError naming each one refused,
    with every reason, before anything is changed."""
    run = run or run_command
    box_image_bytes = image_bytes(box)
    if tb_cache is None:
        tb_cache = accel.guest_cpu(accelerator)["tb_cache_mb"]
    facts, refused, uuids = {}, [], {}
    layout = topo.layout
    members = {hv.name for hv in layout.joined}
    for hv in layout.involved:
        got, problems = ({}, []) if hv.local else check_libvirt(topo, hv, accelerator, tb_cache, box_image_bytes, run)
        if hv.name in members and not (problems and problems[0].startswith("unreachable")):
            more, shell_problems = check_shell(hv, run)
            got.update(more)
            problems += shell_problems
            if hv.local:
                caps = run(virsh(hv, "capabilities"), timeout=60)
                parsed = parse_capabilities(caps.stdout) if caps.ok else None
                got["uuid"] = parsed[0] if parsed else ""
        if got.get("uuid") and hv.name in members:
            if got["uuid"] in uuids:
                problems.append(f"is the same machine as hypervisor {uuids[got['uuid']]} (libvirt host UUID "
                                f"{got['uuid']}): VXLAN would join a network to itself; a qemu+ssh URI of this "
                                "machine says localhost")
            uuids.setdefault(got["uuid"], hv.name)
        facts[hv.name] = got
        if problems:
            refused.append(f"{hv.label}: " + "; ".join(problems))
    if refused:
        raise TestbedError("; ".join(refused) + " (nothing was changed)")
    return facts


# --- what the dry run and the manifest say ---------------------------------------------
def summary(hv, facts):
    """'libvirt 9.0.0, QEMU 7.2.0, KVM and TCG, 15872 MB free, pool default 38.2 GB free'."""
    words = []
    if facts.get("daemon"):
        words.append(f"libvirt {facts['daemon']}")
    if facts.get("hypervisor"):
        words.append(facts["hypervisor"])
    types = [{"kvm": "KVM", "qemu": "TCG"}[t] for t in facts.get("domain_types", []) if t in ("kvm", "qemu")]
    if types:
        words.append(" and ".join(types))
    if facts.get("free_mb") is not None:
        words.append(f"{facts['free_mb']} MB free")
    if facts.get("pool_free_gb") is not None:
        words.append(f"pool {hv.pool} {facts['pool_free_gb']:g} GB free")
    return ", ".join(words) or "this machine"


def dry_run_lines(topo, facts, actions):
    """What `up --dry-run` prints for the hypervisors: each one's VMs, then every change
    (`actions` {name: [line]}: fabric.plan_actions)."""
    lines = []
    for hv in topo.layout.involved:
        hosts = placed(topo, hv)
        vms = ", ".join(f"{h.name} ({h.memory_mb} MB)" for h in hosts) or "no VM"
        lines.append(f"{hv.label}, {summary(hv, facts.get(hv.name, {}))}: {vms}"
                     + (": would change:" if actions.get(hv.name) else ""))
        lines += [f"  {line}" for line in actions.get(hv.name, [])]
    return lines
