"""The topology file: the single source of truth for a testbed.

It names the VMs, their roles and sizes, the DTN's disks, the networks and the
WAN latency between host groups. The Vagrantfile, provisioning, health checks
and suites all read the plan computed here.
"""
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.constants import DISK_IOPS, DISK_MB_PER_S, MAX_STARTDS_PER_WORKER
from testbed.model import boxspec, hypervisors as hypervisor_model, tables
from testbed.model.errors import ConfigError
from testbed.model.links import parse_links
from testbed.model.schema import INTERFACE, Reader, load_yaml
from testbed.model.startd_memory import StartdMemory

ROLES = ("submit", "cm", "ccb", "worker", "dtn", "origin")
BOXES = boxspec.BOXES
TOPOLOGY_DIR = PROJECT_ROOT / "topologies"
HOST_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
GUEST_OVERHEAD_MB = 64  # qemu's own memory beyond the guest's RAM, per VM
QUIET_KEYS = ("pause_unused", "pin")   # the `quiet:` section: what `testbed run` does to the host's noise
SSH_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
DNS_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$")
EXISTING_ROLES_REFUSED = {"dtn": "its RAID is built from data disks the testbed creates for a VM"}


@dataclass
class Disks:
    count: int
    size_gb: int
    raid_level: int
    chunk_kb: int
    mb_per_s: float = DISK_MB_PER_S   # each member's sequential limit (0: none), testbed/machines/disks.py
    iops: int = DISK_IOPS             # each member's operations per second (0: none)

    @property
    def data_disks(self):
        return self.count - (2 if self.raid_level == 6 else 1 if self.raid_level == 5 else 0)


@dataclass(frozen=True)
class Existing:
    """A machine the testbed did not create and never creates or destroys (a lab server, a
    cloud VM): reached over SSH as `user` with `key`; `interface`, when given, is its NIC on
    the site network, which gets the host's site address from the topology."""
    address: str
    user: str
    key: Path
    interface: str = ""

    @property
    def target(self):
        return f"{self.user}@{self.address}"


@dataclass
class Host:
    name: str
    roles: list
    memory_mb: int
    cpus: int
    index: int
    site_ip: str = ""
    startds: int = 1
    slots_per_startd: int = 0
    dtn_slots: int = 0
    disks: Disks = None
    origin_files: int = 0
    origin_file_mb: int = 0
    existing: Existing = None   # None: a VM this host's libvirt creates
    hypervisor: str = ""        # a VM's `hypervisor:` (topology `hypervisors:`); "": this machine's libvirt

    def has(self, role):
        return role in self.roles

    @property
    def total_slots(self):
        if self.has("worker"):
            return self.startds * self.slots_per_startd
        if self.has("dtn"):
            return self.dtn_slots
        return 0


@dataclass
class Topology:
    name: str
    source: Path
    description: str
    box: str
    management_net: ipaddress.IPv4Network
    site_net: ipaddress.IPv4Network
    hosts: dict
    wan: list = field(default_factory=list)
    # `quiet:` {pause_unused, pin}: this site's choice for `testbed run` where the command line
    # gives none (testbed/harness/quiet.py); a key left out: the scale's default
    quiet: dict = field(default_factory=dict)
    # `hypervisors:` {name: Hypervisor} (model/hypervisors.py); {}: every VM on this machine
    hypervisors: dict = field(default_factory=dict)
    # `box: debian13+patch:NAME`: the patch files whose daemons the box carries rebuilt
    # (testbed/model/boxspec.py); `box` itself stays the kind (debian13, el9)
    box_patches: tuple = ()
    # `box: debian13+release:NAME`: the release file of the middleware the box carries (None: the kind's own)
    box_release: Path = None
    # the mapping it was parsed from, as the file gave it: a run's manifest keeps it
    contents: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def box_spec(self):
        return boxspec.BoxSpec(self.box, tuple(self.box_patches), self.box_release)

    def with_role(self, role):
        return [h for h in self.hosts.values() if h.has(role)]

    @property
    def vm_hosts(self):
        """The hosts this machine's libvirt creates (every host but the existing ones)."""
        return [h for h in self.hosts.values() if not h.existing]

    def hypervisor_of(self, name):
        """The Hypervisor that creates VM `name` (None for an existing host)."""
        return hypervisor_model.of(self, name)

    @property
    def layout(self):
        """Where its VMs are created and how their site networks join (hypervisors.Layout),
        worked out from the hosts as they are now."""
        return hypervisor_model.layout(self)

    @property
    def remote_vm_hosts(self):
        """The VMs another libvirt creates (a qemu+ssh URI of this machine included)."""
        return [h for h in self.vm_hosts if not self.hypervisor_of(h.name).local]

    @property
    def vm_hosts_here(self):
        """The VMs whose memory this machine gives: on its libvirt, however reached."""
        return [h for h in self.vm_hosts if self.hypervisor_of(h.name).on_this_machine]

    @property
    def vm_hosts_elsewhere(self):
        """The VMs of hypervisors on other machines (whose site networks VXLAN joins)."""
        return [h for h in self.vm_hosts if not self.hypervisor_of(h.name).on_this_machine]

    @property
    def existing_hosts(self):
        """The hosts declared `existing:`, provisioned over SSH and never created or destroyed."""
        return [h for h in self.hosts.values() if h.existing]

    def role_host(self, role):
        hosts = self.with_role(role)
        return hosts[0] if hosts else None

    def group(self, name):
        """Hosts in a group: a role name, or one host's name."""
        if name in self.hosts:
            return [self.hosts[name]]
        if name in ROLES:
            return self.with_role(name)
        raise KeyError(name)

    @property
    def total_memory_mb(self):
        """The guest RAM of the VMs (existing hosts bring their own)."""
        return sum(h.memory_mb for h in self.vm_hosts)

    @property
    def trust_domain(self):
        return f"{self.name}.testbed"

    @property
    def site_gateway(self):
        return str(next(self.site_net.hosts()))

    @property
    def planned_slots(self):
        return sum(h.total_slots for h in self.hosts.values())

    @property
    def planned_startds(self):
        """Sleeper startds the workers run (each worker at least one)."""
        return sum(h.startds for h in self.with_role("worker"))

    def network_names(self):
        return {"management": f"tb-{self.name}-mgmt", "site": f"tb-{self.name}-site"}


def topology_path(name_or_path):
    """A topology named `small` lives in topologies/small.yaml; paths work too."""
    text = str(name_or_path)
    if os.sep in text or text.endswith((".yaml", ".yml")):
        return Path(text)
    return TOPOLOGY_DIR / f"{text}.yaml"


def load(name_or_path):
    path = topology_path(name_or_path)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in TOPOLOGY_DIR.glob("*.yaml")))
        raise ConfigError(path, "", f"no such topology (known: {known})")
    return parse(load_yaml(path), path)


def _network(reader, key, default):
    text = reader.str(key, default)
    try:
        net = ipaddress.IPv4Network(text, strict=True)
    except ValueError as exc:
        raise reader.error(key, f"not an IPv4 network: {exc}") from None
    if not net.is_private:
        raise reader.error(key, f"{net} is not a private range; testbed networks stay host-only")
    if net.prefixlen > 28:
        raise reader.error(key, f"{net} is too small (need /28 or larger)")
    return net


def _host(name, spec, index, defaults, source):
    r = Reader(spec, source, f"hosts.{name}")
    r.only({"roles", "memory_mb", "cpus", "startds", "slots_per_startd", "slots", "disks",
            "files", "file_mb", "existing", "hypervisor"})
    if not HOST_NAME.match(name):
        raise ConfigError(source, f"hosts.{name}", "host names are lowercase letters, digits and '-'")
    roles = r.list("roles")
    if not roles:
        raise r.error("roles", "needs at least one role")
    for role in roles:
        if role not in ROLES:
            raise r.error("roles", f"unknown role {role!r} (roles: {', '.join(ROLES)})")
    host = Host(name=name, roles=list(roles), index=index,
                memory_mb=r.int("memory_mb", defaults["memory_mb"], 256, 65536),
                cpus=r.int("cpus", defaults["cpus"], 1, 64))
    if "existing" in spec:
        host.existing = _existing(r.sub("existing"), roles, source)
    if "hypervisor" in spec:
        if host.existing:
            raise r.error("hypervisor", "an existing host runs where it is: `hypervisor:` places a VM, "
                                        "and this host is declared `existing:`")
        host.hypervisor = r.str("hypervisor")
    if "worker" in roles:
        # Uber-glidein workers: many startd daemons (of one slot or a few) per VM, as many
        # as its memory holds (model/startd_memory.py)
        host.startds = r.int("startds", 1, 1, MAX_STARTDS_PER_WORKER)
        host.slots_per_startd = r.int("slots_per_startd", 8, 1, 2000)
        too_many = StartdMemory().refusal(name, host.memory_mb, host.startds)
        if too_many:
            raise r.error("startds", too_many)
    elif "startds" in spec or "slots_per_startd" in spec:
        raise r.error("startds", "only hosts with the worker role run sleeper startds")
    if "dtn" in roles:
        host.dtn_slots = r.int("slots", 4, 1, 512)
        d = r.sub("disks")
        d.only({"count", "size_gb", "raid_level", "chunk_kb", "mb_per_s", "iops"})
        level = d.int("raid_level", 6)
        if level not in (0, 1, 5, 6, 10):
            raise d.error("raid_level", f"must be one of 0, 1, 5, 6, 10, got {level}")
        minimum = {6: 4, 5: 3, 10: 4, 1: 2, 0: 2}[level]
        host.disks = Disks(count=d.int("count", 6, minimum, 24), size_gb=d.int("size_gb", 2, 1, 1024),
                           raid_level=level, chunk_kb=d.int("chunk_kb", 512, 4, 4096),
                           mb_per_s=float(d.number("mb_per_s", DISK_MB_PER_S, 0, 100000)),
                           iops=d.int("iops", DISK_IOPS, 0, 10**6))
        if 0 < host.disks.mb_per_s < 1:
            raise d.error("mb_per_s", f"must be 0 (no limit) or at least 1, got {host.disks.mb_per_s:g}")
        if 0 < host.disks.iops < 10:
            raise d.error("iops", f"must be 0 (no limit) or at least 10, got {host.disks.iops}")
        if host.disks.chunk_kb & (host.disks.chunk_kb - 1):
            raise d.error("chunk_kb", "must be a power of two")
    elif "disks" in spec or "slots" in spec:
        raise r.error("disks" if "disks" in spec else "slots", "only the dtn role has disks and DTN slots")
    if "origin" in roles:
        host.origin_files = r.int("files", 100, 1, 10000)
        host.origin_file_mb = r.int("file_mb", 16, 1, 100000)
    elif "files" in spec or "file_mb" in spec:
        raise r.error("files", "only the origin role holds test files")
    return host


def _existing(r, roles, source):
    """The `existing:` mapping of a host: address, user, key and (optionally) interface."""
    r.only({"address", "user", "key", "interface"})
    for role in roles:
        if role in EXISTING_ROLES_REFUSED:
            raise ConfigError(source, r.field.rsplit(".", 1)[0] + ".roles",
                              f"an existing host cannot have role {role}: {EXISTING_ROLES_REFUSED[role]}")
    address = r.str("address").strip()
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        if not DNS_NAME.match(address) or address.replace(".", "").isdigit():
            raise r.error("address", f"{address!r} is neither an IPv4 address nor a host name") from None
    user = r.str("user")
    if not SSH_USER.match(user):
        raise r.error("user", f"{user!r} is not a user name")
    key_text = r.str("key")
    if not key_text.strip():
        raise r.error("key", "is empty (the path of the SSH private key that logs in as user)")
    key = Path(os.path.expanduser(key_text))
    if not key.is_absolute():
        key = Path(str(source)).parent / key
    interface = r.str("interface", "")
    if interface and not INTERFACE.match(interface):
        raise r.error("interface", f"{interface!r} is not a network interface name")
    return Existing(address=address, user=user, key=key, interface=interface)


def _site_address(host, site, source):
    """An existing host's own site address: its `address` when that lies in the site network
    (it is on it already), else None (it gets one from the pool on `interface`)."""
    try:
        ip = ipaddress.IPv4Address(host.existing.address)
    except ValueError:
        ip = None
    field = f"hosts.{host.name}.existing"
    if ip is not None and ip in site:
        if ip in (site.network_address, site.broadcast_address) or str(ip) == str(next(site.hosts())):
            raise ConfigError(source, f"{field}.address", f"{ip} is the site network's own address, "
                              "broadcast or the host's bridge (.1)")
        return str(ip)
    if not host.existing.interface:
        raise ConfigError(source, f"{field}.interface",
                          f"is required: address {host.existing.address} is outside the site network {site}, "
                          "so the host needs its NIC on the site network named to get its site address")
    return None


def _wan(items, source, hosts):
    links = parse_links(items, source, "wan")
    for i, link in enumerate(links):
        for group in (link.a, link.b):
            if group not in hosts and not any(group in h.roles for h in hosts.values()):
                raise ConfigError(source, f"wan[{i}].between",
                                  f"{group!r} is neither a host nor a role present in hosts")
    return links


def parse(data, source="<topology>"):
    r = Reader(data, source)
    r.only({"name", "description", "box", "networks", "defaults", "hosts", "wan", "quiet", "hypervisors"})
    name = r.str("name", Path(str(source)).stem)
    if not HOST_NAME.match(name) or len(name) > 10:
        raise r.error("name", "must be 1-10 lowercase letters, digits or '-' (it names libvirt networks)")
    nets = r.sub("networks")
    nets.only({"management", "site"})
    mgmt = _network(nets, "management", "192.168.150.0/24")
    site = _network(nets, "site", "10.150.0.0/24")
    if mgmt.overlaps(site):
        raise nets.error("site", f"{site} overlaps the management network {mgmt}")
    d = r.sub("defaults")
    d.only({"memory_mb", "cpus"})
    defaults = {"memory_mb": d.int("memory_mb", 768, 256), "cpus": d.int("cpus", 1, 1)}
    hosts_spec = r.sub("hosts")
    if not hosts_spec.data:
        raise r.error("hosts", "needs at least one host")
    hosts = {}
    for index, (name_, spec) in enumerate(hosts_spec.data.items()):
        host = _host(str(name_), spec, index, defaults, source)
        hosts[host.name] = host
    _assign_addresses(hosts, site, source, r)
    spec = boxspec.parse(r.str("box", "debian13"), source)
    topo = Topology(name=name, source=Path(str(source)), description=r.data.get("description", ""),
                    box=spec.kind, box_patches=spec.patches, box_release=spec.release,
                    management_net=mgmt, site_net=site,
                    hosts=hosts, hypervisors=hypervisor_model.parse(r.sub("hypervisors"), source), contents=data)
    _check_roles(topo, source)
    hypervisor_model.check(topo, source)
    topo.wan = _wan(r.list("wan", []), source, hosts)
    q = r.sub("quiet")
    q.only(QUIET_KEYS)
    topo.quiet = {key: q.bool(key) for key in QUIET_KEYS if key in q.data}
    return topo


def _assign_addresses(hosts, site, source, r):
    """Site addresses: an existing host already on the site network keeps its own; every
    other host takes the next free one from .10 upwards (.1 is the host's bridge)."""
    own, seen = {}, {}
    for host in hosts.values():
        if host.existing:
            where = seen.setdefault(host.existing.address, host.name)
            if where != host.name:
                raise ConfigError(source, f"hosts.{host.name}.existing.address",
                                  f"{host.existing.address} is also hosts.{where}'s address (one machine, two hosts)")
            ip = _site_address(host, site, source)
            if ip:
                own[host.name] = ip
    free = [str(a) for a in list(site.hosts())[9:] if str(a) not in own.values()]
    for host in hosts.values():
        if host.name in own:
            host.site_ip = own[host.name]
            continue
        if not free:
            raise r.error("networks.site", f"{site} has too few addresses for {len(hosts)} hosts")
        host.site_ip = free.pop(0)


def _check_roles(topo, source):
    cms = topo.with_role("cm")
    if len(cms) not in (1, 2):
        raise ConfigError(source, "hosts", f"needs one or two hosts with role cm (HA pair), found {len(cms)}")
    for role in ("submit", "worker"):
        if not topo.with_role(role):
            raise ConfigError(source, "hosts", f"needs a host with role {role}")
    for role in ("dtn", "origin", "submit"):
        if len(topo.with_role(role)) > 1:
            raise ConfigError(source, "hosts", f"at most one host may have role {role}")
    if topo.with_role("dtn") and not topo.with_role("origin"):
        raise ConfigError(source, "hosts", "a dtn needs an origin host to cache from")


def host_free_memory_mb():
    try:
        with open("/proc/meminfo") as fh:
            info = {line.split(":")[0]: int(line.split()[1]) for line in fh}
    except OSError:
        return None
    return info.get("MemAvailable", 0) // 1024


def check_fits(topo, free_mb=None):
    """Refuse a plan whose VMs need more RAM than the host has free (existing hosts bring their
    own, another machine's hypervisor gives its VMs': testbed/machines/hypervisor_preflight.py)."""
    free_mb = host_free_memory_mb() if free_mb is None else free_mb
    need = needed_memory_mb(topo, topo.vm_hosts_here)
    if free_mb is not None and need > free_mb:
        raise ConfigError(topo.source, "hosts",
                          f"plan needs {need} MB of RAM but the host has {free_mb} MB free; "
                          "use a smaller topology or lower memory_mb")
    return need


def needed_memory_mb(topo, hosts=None):
    """The host RAM a plan needs free: the guests' RAM and QEMU's own per VM (of `hosts`,
    default every VM)."""
    hosts = topo.vm_hosts if hosts is None else hosts
    return sum(h.memory_mb for h in hosts) + GUEST_OVERHEAD_MB * len(hosts)


def show_lines(topo):
    """What `testbed topology show` prints: every VM with its address, roles, RAM and role
    details, the networks, the WAN links and the totals."""
    rows = []
    for h in topo.hosts.values():
        detail = []
        if h.has("worker"):
            detail.append(f"{h.startds} startd x {h.slots_per_startd} slots")
        if h.disks:
            detail.append(f"RAID{h.disks.raid_level} {h.disks.count} x {h.disks.size_gb} GB")
        if h.has("dtn"):
            detail.append(f"{h.dtn_slots} DTN slots")
        if h.has("origin"):
            detail.append(f"{h.origin_files} files x {h.origin_file_mb} MB")
        if topo.hypervisors and not h.existing:
            detail.append(f"on hypervisor {topo.hypervisor_of(h.name).name}")
        if h.existing:
            detail.append(f"existing: {h.existing.target}" + (f" on {h.existing.interface}" if h.existing.interface else "")
                          + f"; needs >= {h.memory_mb} MB, {h.cpus} cores")
        rows.append([h.name, h.site_ip, ", ".join(h.roles), "-" if h.existing else h.memory_mb,
                     "-" if h.existing else h.cpus, "; ".join(detail)])
    source = topo.source.relative_to(PROJECT_ROOT) if topo.source.is_relative_to(PROJECT_ROOT) else topo.source
    lines = [f"topology {topo.name} ({source})",
             tables.render(["host", "site address", "roles", "RAM MB", "vCPU", "details"], rows),
             f"networks: management {topo.management_net} (host-only), site {topo.site_net} (host-only)"]
    lines += [f"hypervisor {hv.name}: {hv.uri}" + (f", VXLAN endpoint {hv.address}" if hv.address else "")
              for hv in topo.hypervisors.values()]
    lines += [f"wan: {link.a} <-> {link.b} {link.rtt_ms:g} ms RTT" for link in topo.wan]
    lines.append(f"total guest RAM {topo.total_memory_mb} MB (with qemu overhead {needed_memory_mb(topo)} MB); "
                 f"{topo.planned_slots} execute slots planned")
    return lines
