"""The hypervisors of a topology: the libvirt hosts its VMs are created on.

`hypervisors: {NAME: {uri, address, site_interface, pool}}` names them and a VM's
`hypervisor: NAME` places it; a VM without one is created by this machine's libvirt
(qemu:///system), as in a topology without `hypervisors:`. Another machine's libvirt is
reached over SSH (qemu+ssh://user@host/system): vagrant-libvirt creates the VM there
through that connection and the testbed logs in with the same user, host, port and key
to join the site network. Each hypervisor on another machine joins the site network by
VXLAN (testbed/machines/fabric.py), and so does this machine, which then needs an entry
of its own (uri qemu:///system) with the address the others send to. A qemu+ssh URI of
this machine (localhost) is this machine's libvirt reached over SSH: its VMs share this
machine's site network as they are, with no VXLAN.
"""
import ipaddress
import re
import shlex
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from testbed.model import constants as c
from testbed.model.errors import ConfigError
from testbed.model.schema import INTERFACE, Reader

NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
POOL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
LOCAL_NAME = "local"   # this machine's libvirt when the topology gives it no name of its own
SCHEMES = ("qemu", "qemu+ssh")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
URI_FORMS = "qemu:///system (this machine's libvirt) or qemu+ssh://user@host/system (another one, over SSH)"


@dataclass(frozen=True)
class Hypervisor:
    """One libvirt host. `address`: its IPv4 address on the network between hypervisors,
    where VXLAN packets for it go; `site_interface`: its NIC on that network (the VXLAN
    port's underlying device; empty: the kernel's route decides); `pool`: the storage pool
    that holds the box image and the VMs' disks."""
    name: str
    uri: str = c.LOCAL_LIBVIRT_URI
    address: str = ""
    site_interface: str = ""
    pool: str = "default"

    @property
    def _parts(self):
        return urlsplit(self.uri)

    @property
    def local(self):
        """This machine's libvirt, reached through its own socket."""
        return self._parts.scheme == "qemu"

    @property
    def ssh_host(self):
        return self._parts.hostname or ""

    @property
    def ssh_user(self):
        return self._parts.username or ""

    @property
    def ssh_port(self):
        return self._parts.port

    @property
    def keyfile(self):
        return parse_qs(self._parts.query).get("keyfile", [""])[0]

    @property
    def loopback(self):
        """A qemu+ssh URI of this machine: the same libvirt, reached over SSH."""
        if self.local:
            return False
        host = self.ssh_host.lower()
        if host in LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    @property
    def on_this_machine(self):
        return self.local or self.loopback

    @property
    def joins_by_vxlan(self):
        """Another machine: its copy of the site network is joined to the others' by VXLAN."""
        return not self.on_this_machine

    @property
    def label(self):
        return f"hypervisor {self.name} ({self.uri})"

    def ssh_argv(self):
        """ssh to the hypervisor as its URI says (user, host, port, ?keyfile=), never asking."""
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        if self.ssh_port:
            argv += ["-p", str(self.ssh_port)]
        if self.keyfile:
            argv += ["-i", self.keyfile, "-o", "IdentitiesOnly=yes"]
        if self.ssh_user:
            argv += ["-l", self.ssh_user]
        return argv + [self.ssh_host]

    def proxy_command(self):
        """An ssh ProxyCommand that reaches a guest's management address through this
        hypervisor (the management network is host-only on each hypervisor)."""
        argv = self.ssh_argv()
        return " ".join(shlex.quote(a) for a in argv[:-1] + ["-W", "%h:%p", argv[-1]])

    @property
    def root_prefix(self):
        """What runs a command as root there: sudo without a password, unless the login is root."""
        return "" if self.local or self.ssh_user == "root" else "sudo -n "


LOCAL = Hypervisor(LOCAL_NAME)


def _uri(r):
    text = r.str("uri").strip()
    parts = urlsplit(text)
    if parts.scheme not in SCHEMES:
        raise r.error("uri", f"bad URI scheme {parts.scheme or '(none)'!r} in {text!r}: use {URI_FORMS}")
    if parts.path != "/system":
        raise r.error("uri", f"{text!r}: the path must be /system (the testbed's host-only networks "
                             f"are the system libvirt's), got {parts.path or '(none)'!r}")
    if parts.scheme == "qemu" and (parts.netloc or parts.query):
        raise r.error("uri", f"{text!r}: qemu:///system is this machine's libvirt and takes no host "
                             "or parameters; another machine is qemu+ssh://user@host/system")
    if parts.scheme == "qemu+ssh":
        if not parts.hostname:
            raise r.error("uri", f"{text!r} names no host (qemu+ssh://user@host/system)")
        try:
            parts.port
        except ValueError:
            raise r.error("uri", f"{text!r}: the port is not a number") from None
    return text


def _ipv4(r, key, text):
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise r.error(key, f"{text!r} is not an IPv4 address (the hypervisor's own address, "
                           "where the other hypervisors send its VXLAN packets)") from None


def _host_ipv4(host):
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return ""


def parse(r, source):
    """{name: Hypervisor} of the topology's `hypervisors:` mapping (Reader `r`), checked
    field by field; their use by the hosts is checked by `check`."""
    out, seen_uri, seen_address = {}, {}, {}
    for name, spec in r.data.items():
        name = str(name)
        field = f"hypervisors.{name}"
        if not NAME.match(name):
            raise ConfigError(source, field, "hypervisor names are lowercase letters, digits and '-'")
        h = Reader(spec, source, field)
        h.only({"uri", "address", "site_interface", "pool"})
        uri = _uri(h)
        parts = urlsplit(uri)
        where = (parts.scheme, (parts.hostname or "").lower(), parts.port or 22)
        if where in seen_uri:
            raise h.error("uri", f"{uri} is the libvirt of hypervisors.{seen_uri[where]} too (one host, two names)")
        seen_uri[where] = name
        if name == LOCAL_NAME and parts.scheme != "qemu":
            raise h.error("uri", f"the name {LOCAL_NAME!r} means this machine's libvirt ({c.LOCAL_LIBVIRT_URI}); "
                                 "name another machine's otherwise")
        address = h.str("address", "").strip()
        address = _ipv4(h, "address", address) if address else (_host_ipv4(parts.hostname or "")
                                                                 if parts.scheme == "qemu+ssh" else "")
        interface = h.str("site_interface", "")
        if interface and not INTERFACE.match(interface):
            raise h.error("site_interface", f"{interface!r} is not a network interface name")
        pool = h.str("pool", "default")
        if not POOL.match(pool):
            raise h.error("pool", f"{pool!r} is not a libvirt storage pool name")
        hv = Hypervisor(name=name, uri=uri, address=address, site_interface=interface, pool=pool)
        if address and not hv.loopback:
            if address in seen_address:
                raise ConfigError(source, f"{field}.address", f"{address} is also hypervisors.{seen_address[address]}'s "
                                                              "address (one machine, two hypervisors)")
            seen_address[address] = name
        out[name] = hv
    return out


def local_entry(topo):
    """This machine's libvirt: the topology's entry with uri qemu:///system, else LOCAL."""
    return next((hv for hv in topo.hypervisors.values() if hv.local), LOCAL)


def of(topo, host_name):
    """The Hypervisor a VM is created on; None for an existing host."""
    host = topo.hosts[host_name]
    if host.existing:
        return None
    return topo.hypervisors[host.hypervisor] if host.hypervisor else local_entry(topo)


@dataclass(frozen=True)
class Layout:
    """Where a topology's VMs are created and how their site networks join, worked out in
    one place from its hosts and `hypervisors:` (`layout`; a topology gives it as
    `topo.layout`, anew each time, from the hosts as they are then).
    `used`: the hypervisors that create at least one VM; `joined`: those whose site
    networks VXLAN joins into one (this machine, which reaches every guest on the site
    network, and each one on another machine that creates a VM; empty when every VM is
    created on this machine); `involved`: every hypervisor `up` acts on (used or joined).
    Each list has this machine's first, then the topology's order. `bridges`: {name: the
    address of its site bridge} of the joined: .1 on this machine (every guest's gateway),
    the next ones on the others; hosts start at .10. `site_mtu`: the site network's MTU
    when VXLAN joins hypervisors (room for its header on a 1500-byte network between them),
    else None: the guests keep their NIC's default."""
    used: tuple
    joined: tuple
    involved: tuple
    bridges: dict
    site_mtu: int = None


def layout(topo):
    """The topology's Layout."""
    here = local_entry(topo)
    ordered = [here] + [hv for hv in topo.hypervisors.values() if not hv.local]
    creating = {of(topo, h.name).name for h in topo.vm_hosts}
    used = tuple(hv for hv in ordered if hv.name in creating)
    others = tuple(hv for hv in used if hv.joins_by_vxlan)
    joined = (here,) + others if others else ()
    acting = {hv.name for hv in used + joined}
    addresses = list(topo.site_net.hosts())
    return Layout(used=used, joined=joined, involved=tuple(hv for hv in ordered if hv.name in acting),
                  bridges={hv.name: str(addresses[i]) for i, hv in enumerate(joined)},
                  site_mtu=c.UNDERLAY_MTU - c.VXLAN_OVERHEAD if joined else None)


def placement(topo):
    """{host: {'hypervisor', 'uri'}} of every VM, {host: {'existing': user@address}} of an
    existing host: where each host of a run was (the results manifest keeps it)."""
    out = {}
    for host in topo.hosts.values():
        hv = of(topo, host.name)
        out[host.name] = {"existing": host.existing.target} if hv is None else {"hypervisor": hv.name, "uri": hv.uri}
    return out


def check(topo, source):
    """Every `hypervisor:` names a declared hypervisor, every declared hypervisor on another
    machine creates a VM, and the hypervisors that VXLAN joins have their addresses."""
    known = ", ".join(topo.hypervisors) or "the topology declares no hypervisors:"
    for host in topo.hosts.values():
        if host.hypervisor and host.hypervisor not in topo.hypervisors:
            raise ConfigError(source, f"hosts.{host.name}.hypervisor",
                              f"unknown hypervisor {host.hypervisor!r} ({known})")
    placed = {h.hypervisor for h in topo.vm_hosts}
    for hv in topo.hypervisors.values():
        if not hv.local and hv.name not in placed:
            raise ConfigError(source, f"hypervisors.{hv.name}",
                              f"no VM is placed on it (no host says `hypervisor: {hv.name}`); remove it or place one")
    members = layout(topo).joined
    if not members:
        return
    here = members[0]
    if here is LOCAL:
        raise ConfigError(source, "hypervisors", f"{members[1].label} is another machine, so this machine joins "
                          "the site network by VXLAN too: add an entry for it with uri: "
                          f"{c.LOCAL_LIBVIRT_URI} and address: its IPv4 address the other hypervisors reach")
    for hv in members:
        if not hv.address:
            why = ("this machine's address the other hypervisors reach" if hv.local else
                   f"the URI's host {hv.ssh_host!r} is not an IPv4 address, and VXLAN sends to one")
            raise ConfigError(source, f"hypervisors.{hv.name}.address", f"is required: {why}")
    if len(members) > c.MAX_JOINED_HYPERVISORS:
        raise ConfigError(source, "hypervisors", f"{len(members)} hypervisors join the site network; at most "
                          f"{c.MAX_JOINED_HYPERVISORS} (their bridges take the site addresses .1 to "
                          f".{c.MAX_JOINED_HYPERVISORS}, the hosts start at .10)")
    bridges = {address: name for name, address in layout(topo).bridges.items()}
    for host in topo.hosts.values():
        if host.site_ip in bridges:
            raise ConfigError(source, f"hosts.{host.name}.existing.address",
                              f"{host.site_ip} is the site bridge of hypervisor {bridges[host.site_ip]}")
