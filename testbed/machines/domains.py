"""Which libvirt domains belong to this checkout: claim, sweep orphans, find addresses.
A VM placed on another hypervisor (topology `hypervisors:`) is asked about through that
hypervisor's libvirt URI."""
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.constants import LOCAL_LIBVIRT_URI
from testbed.model.hypervisors import local_entry
from testbed.model.errors import TestbedError


def _virsh(*args, timeout=None, uri=LOCAL_LIBVIRT_URI):
    """virsh on a system libvirt (this machine's unless `uri` says); the one place the
    testbed runs it for a domain."""
    return subprocess.run(["virsh", "-c", uri, *args], capture_output=True, text=True,
                          timeout=timeout)


def _virsh_at(uri, *args, **kw):
    """virsh on the libvirt of `uri`; on this machine's, called exactly as `_virsh(*args)`."""
    return _virsh(*args, **kw) if uri == LOCAL_LIBVIRT_URI else _virsh(*args, uri=uri, **kw)


def uri_of(topo, host):
    """The libvirt URI of the hypervisor that creates `host` (this machine's for a name
    outside the topology)."""
    hv = topo.hypervisor_of(host) if host in topo.hosts else None
    return hv.uri if hv else LOCAL_LIBVIRT_URI


def libvirt_uris(topo):
    """Every libvirt the topology's VMs live on, this machine's first."""
    uris = [LOCAL_LIBVIRT_URI]
    for h in topo.vm_hosts:
        uri = uri_of(topo, h.name)
        if uri not in uris:
            uris.append(uri)
    return uris


def _host_of(topo, domain):
    prefix = f"tb-{topo.name}-"
    return domain[len(prefix):] if domain.startswith(prefix) else domain


OWNER_TAG = "testbed checkout "


def our_domain_ids(root=PROJECT_ROOT):
    """UUIDs of the domains Vagrant made from this checkout."""
    return {p.read_text().strip() for p in Path(root, ".vagrant", "machines").glob("*/libvirt/id")
            if p.read_text().strip()}


def topology_of_domain(name, known):
    """The topology a domain named tb-<topology>-<host> belongs to, of the `known` names (the
    longest that fits: a topology may have a '-' in its name), or None."""
    fits = [t for t in known if name.startswith(f"tb-{t}-") and len(name) > len(f"tb-{t}-")]
    return max(fits, key=len) if fits else None


def topology_up(known, root=PROJECT_ROOT):
    """The topology whose VMs this checkout's Vagrant made, read back from their libvirt
    domains' names (whatever made them: `testbed up` or a plain `TESTBED_TOPOLOGY=small
    vagrant up`); None when there are none or libvirt cannot be asked. Several topologies
    at once: TestbedError."""
    found = set()
    for uuid in sorted(our_domain_ids(root)):
        try:
            res = _virsh("domname", uuid, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        topo = topology_of_domain(res.stdout.strip(), known) if res.returncode == 0 else None
        if topo:
            found.add(topo)
    if len(found) > 1:
        raise TestbedError(f"this checkout's VMs belong to several topologies ({', '.join(sorted(found))}); "
                           f"`testbed -t NAME down` each")
    return found.pop() if found else None


def leftover_domains(topo):
    """Domains named for this topology that this checkout's Vagrant does not know:
    [(name, owning checkout path or None when the domain does not say)]."""
    prefix, ours, found = f"tb-{topo.name}-", our_domain_ids(), []
    for uri in libvirt_uris(topo):
        for name in _virsh_at(uri, "list", "--all", "--name").stdout.split():
            if name.startswith(prefix) and _virsh_at(uri, "domuuid", name).stdout.strip() not in ours:
                desc = _virsh_at(uri, "desc", name).stdout.strip()
                found.append((name, desc[len(OWNER_TAG):] if desc.startswith(OWNER_TAG) else None))
    return found


def owner_is_gone(owner):
    """A domain whose checkout is this one (Vagrant lost track of it) or no longer exists."""
    return owner is not None and (owner == str(PROJECT_ROOT) or not Path(owner, "Vagrantfile").exists())


def claim_domains(topo):
    """Before `up`: sweep domains orphaned by deleted checkouts; refuse to take over those of
    another checkout that still exists (two testbeds of one topology share names and networks)."""
    leftovers = leftover_domains(topo)
    for name, owner in leftovers:
        if owner is None:
            uri = uri_of(topo, _host_of(topo, name))
            raise TestbedError(f"libvirt domain {name} exists and no checkout claims it; remove it with "
                               f"`virsh -c {uri} destroy {name}; virsh -c {uri} undefine "
                               f"{name}` (names and networks would clash)")
        if not owner_is_gone(owner):
            raise TestbedError(f"libvirt domain {name} belongs to the testbed in {owner}; run "
                               f"`./tb -t {topo.name} down` there first (names and networks would clash)")
    if leftovers:
        print(f"removing {len(leftovers)} domain(s) left by a deleted checkout: "
              f"{', '.join(n for n, _ in leftovers)}", flush=True)
        sweep_libvirt(topo, [n for n, _ in leftovers])


def topology_domains(topo):
    """Every libvirt domain named for this topology, defined or running, on any of its hypervisors."""
    return [n for uri in libvirt_uris(topo) for n in _virsh_at(uri, "list", "--all", "--name").stdout.split()
            if n.startswith(f"tb-{topo.name}-")]


def testbed_domains():
    """Every libvirt domain of this machine named as the testbed names its VMs (any topology,
    any checkout)."""
    return [n for n in _virsh("list", "--all", "--name").stdout.split() if n.startswith("tb-")]


def sweep_libvirt(topo, names):
    """Remove these domains of the testbed and, when none of its domains is left, its volumes."""
    prefix = f"tb-{topo.name}-"
    for name in names:
        uri = uri_of(topo, _host_of(topo, name))
        _virsh_at(uri, "destroy", name)
        _virsh_at(uri, "undefine", name, "--nvram")
    if topology_domains(topo):
        return
    pools = {LOCAL_LIBVIRT_URI: local_entry(topo).pool}
    pools.update({hv.uri: hv.pool for hv in map(topo.hypervisor_of, [h.name for h in topo.remote_vm_hosts])})
    for uri, pool in pools.items():
        for line in _virsh_at(uri, "vol-list", pool).stdout.splitlines()[2:]:
            vol = line.split()[0] if line.split() else ""
            if vol.startswith(prefix):
                _virsh_at(uri, "vol-delete", "--pool", pool, vol)


def domain_name(topo, host):
    return f"tb-{topo.name}-{host}"


def management_address(topo, host):
    """The guest's management address from libvirt's DHCP lease, or None."""
    dom = of(topo, host)
    out = dom.virsh("domifaddr", dom.name, "--source", "lease").stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "ipv4":
            return parts[3].split("/")[0]
    return None


@dataclass(frozen=True)
class Domain:
    """A host's domain: its name and the libvirt that holds it."""
    name: str
    uri: str

    def virsh(self, *args, **kw):
        """virsh VERB ARGS on this domain's libvirt (the domain's name is not added)."""
        return _virsh_at(self.uri, *args, **kw)

    def state(self):
        """libvirt's state of the domain: running, shut off, ... or None (no domain)."""
        proc = self.virsh("domstate", self.name)
        return proc.stdout.strip() if proc.returncode == 0 else None


def of(topo, host):
    return Domain(domain_name(topo, host), uri_of(topo, host))


def state(topo, host):
    """libvirt's state of a host's domain: running, shut off, ... or None (no domain)."""
    return of(topo, host).state()
