"""A warm bring-up: a site taken down after a cold `up` comes back from its first healthy
moment instead of booting and provisioning again.

The first healthy cold bring-up of a site keeps a golden whole-site snapshot (snapshots.py:
every VM's disks and memory, inside its own qcow2 files). `down` then parks the site instead
of deleting its disks: the domains are powered off and undefined, their disk files move to a
folder of their own beside the libvirt pool, with the domains', the snapshot's and the
networks' XML and Vagrant's record of its machines. A later `up` with the same key moves the
files back, defines the networks and domains again, re-adds the snapshot's metadata and
reverts to it (clocks set, health checked, as any snapshot restore). The key is everything
the golden moment depends on: the plan (topology, box, accelerator, VM sizes, addresses,
profile) and every host's rendered provisioning; any change to it boots cold and drops the
parked site. A parked site belongs to its checkout's state folder (its SSH key and secrets
are the ones the guests know), so another checkout, CI's clean clone included, never meets
it.
"""
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.machines import domains, host_ledger, plan, snapshots
from testbed.model.errors import TestbedError
from testbed.model.state import write_json

GOLDEN = "golden"
POOL_DIR = Path("/var/lib/libvirt/images")
LEASES_DIR = Path("/var/lib/libvirt/dnsmasq")   # libvirt's record of each network's DHCP leases
LEASE_S = 3600                                   # libvirt's default lease time
RECORD = "parked.json"
VAGRANT_MACHINES = "vagrant-machines"
PARKING, UNPARKING, PARKED = "parking", "unparking", "parked"


def key(site):
    """The digest of what the golden moment depends on: the plan as written for this bring-up
    (but when) and every host's rendered provisioning."""
    written = json.loads(plan.plan_path(site.state).read_text())
    written.pop("written", None)
    digest = hashlib.sha256(json.dumps(written, sort_keys=True).encode())
    digest.update(snapshots.provisioning_hash(site.state).encode())
    return digest.hexdigest()[:16]


def park_dir(site, pool_dir=POOL_DIR):
    """Where this checkout's parked site keeps its disks: beside the pool (same file system,
    so parking and unparking are renames), named for the checkout and the topology."""
    owner = hashlib.sha256(str(PROJECT_ROOT.resolve()).encode()).hexdigest()[:12]
    return pool_dir / "tb-warm" / f"{owner}-{site.topo.name}"


def eligible(topo):
    """Why this site cannot be kept warm ("" when it can): only a site whose every host is a
    VM of this machine's libvirt."""
    if topo.existing_hosts:
        return "it has existing hosts"
    if topo.vm_hosts_elsewhere:
        return "some VMs run on another machine's hypervisor"
    if not topo.vm_hosts:
        return "it has no VM"
    return ""


def wanted(env=None):
    """Whether `up` may keep and use a warm site: not under CI (CI tests the cold bring-up
    every time)."""
    env = os.environ if env is None else env
    return env.get("CI", "").lower() not in ("true", "1", "yes")


def golden_record(site):
    """The file that records the golden snapshot (snapshots.py's record, with its key)."""
    return snapshots.record_dir(site.state) / f"{GOLDEN}.json"


def keep(site, profile_name, echo=print):
    """After a cold bring-up, healthy: the golden snapshot `down` will park. Replaces one of
    another key; returns the seconds it took, or None when the site cannot be kept."""
    if eligible(site.topo):
        return None
    kept_under = key(site)
    if GOLDEN in snapshots.list_names(site.topo):
        snapshots.delete(site, GOLDEN, echo=lambda *_: None)
    started = time.monotonic()
    try:
        meta = snapshots.save(site, GOLDEN, profile_name, echo=lambda *_: None, extra={"warm_key": kept_under})
    except TestbedError as exc:   # the site is up and healthy all the same: only `down` will not park it
        echo(f"not kept for a warm `up`: {exc}")
        return None
    seconds = time.monotonic() - started
    echo(f"kept the site as it is now for a warm `up` after `down` ({seconds:.0f} s, {meta['disk_mb']} MB of disk; "
         f"`up --cold` boots it anew)")
    return seconds


def golden_key(site):
    """The key the golden snapshot of the running site was kept under, or None."""
    path = golden_record(site)
    if not path.exists() or GOLDEN not in snapshots.list_names(site.topo):
        return None
    return json.loads(path.read_text()).get("warm_key")


def _vagrant_machines():
    """Vagrant's record of this checkout's machines (their domains' ids)."""
    return PROJECT_ROOT / ".vagrant" / "machines"


def park(site, echo=print, pool_dir=POOL_DIR, virsh=None, leases_dir=LEASES_DIR):
    """At `down`: power off and undefine the site's domains, keeping their disks (with the
    golden snapshot inside) in `park_dir`, and the XML that defines them again. Returns the
    record, or None when there is no golden snapshot of the site's current key to park.

    The record is written before anything changes and says how far the site got ("parking",
    "unparking", "parked"): a `down` or `up` stopped halfway (a Ctrl-C reaches virsh too) is
    finished by the next one, and no disk is left behind in either place."""
    virsh = virsh or snapshots._virsh
    topo = site.topo
    prior = parked(site, pool_dir)
    if prior and prior["state"] != PARKED:
        echo(f"finishing the park of {topo.name} that was stopped halfway")
        return settle(site, pool_dir, virsh)
    kept_key = golden_key(site)
    if eligible(topo) or kept_key is None or kept_key != key(site):
        return None
    target = park_dir(site, pool_dir)
    discard(site, pool_dir)
    host_ledger.note_dir(target.parent)   # `testbed host undo` removes every parked site
    target.mkdir(parents=True)
    record = {"key": kept_key, "topology": topo.name, "parked": time.time(), "domains": {}, "networks": {}}
    for host in topo.hosts:
        name = domains.domain_name(topo, host)
        disks = snapshots.volume_paths(topo, host)
        record["domains"][host] = {
            "name": name, "disks": disks,
            "xml": virsh("dumpxml", "--inactive", name).stdout,
            "snapshot": virsh("snapshot-dumpxml", name, snapshots.PREFIX + GOLDEN).stdout}
    for net in topo.network_names().values():
        record["networks"][net] = virsh("net-dumpxml", net).stdout
    record["leases"] = {net: _leases_path(xml, leases_dir).read_text()
                        for net, xml in record["networks"].items() if _leases_path(xml, leases_dir).exists()}
    _write(target, record, PARKING)
    settle(site, pool_dir, virsh)
    echo(f"parked {len(record['domains'])} VMs of {topo.name} in {target} for a warm `up` "
         "(`down` again removes them for good)")
    return record


def settle(site, pool_dir=POOL_DIR, virsh=None):
    """Bring the parked site to rest: every domain of its record undefined, every disk and
    Vagrant's machines in `park_dir`. Each step is skipped when done already, so a park or an
    unpark stopped anywhere ends here parked. Returns the record, or None."""
    virsh = virsh or snapshots._virsh
    record = parked(site, pool_dir)
    if record is None or record["state"] == PARKED:
        return record
    target = park_dir(site, pool_dir)
    for host, dom in record["domains"].items():
        if virsh("domstate", dom["name"]).returncode == 0:
            virsh("destroy", dom["name"])
            undefined = virsh("undefine", dom["name"], "--snapshots-metadata", "--nvram")
            if undefined.returncode != 0:
                raise TestbedError(f"{host}: could not undefine {dom['name']} to park it: {undefined.stderr.strip()}")
        for disk in dom["disks"]:
            if os.path.exists(disk):
                os.rename(disk, target / Path(disk).name)
    _move_tree(_vagrant_machines(), target / VAGRANT_MACHINES)
    _write(target, record, PARKED)
    return record


def _move_tree(source, target):
    """Move a folder, perhaps to another file system, so that each of the two names holds a
    whole copy or nothing at any moment: the copy is made under TARGET.part and renamed,
    the source renamed to SOURCE.old before it is removed. A move stopped anywhere is
    finished by the next call; a source that is gone or already moved is no error."""
    part, old = (p.with_name(p.name + suffix) for p, suffix in ((target, ".part"), (source, ".old")))
    shutil.rmtree(part, ignore_errors=True)
    if source.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, part, symlinks=True)
        os.rename(part, target)
    if source.exists():
        os.rename(source, old)
    shutil.rmtree(old, ignore_errors=True)


def _write(target, record, state):
    """The record with its state, replaced in one rename (never half written)."""
    record["state"] = state
    write_json(target / RECORD, record)


def parked(site, pool_dir=POOL_DIR):
    """The parked site's record (its "state" among PARKING, UNPARKING, PARKED), or None."""
    path = park_dir(site, pool_dir) / RECORD
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    record.setdefault("state", PARKED)
    return record


def discard(site, pool_dir=POOL_DIR, virsh=None):
    """Remove the parked site (its disks and records), if any; one stopped halfway is
    settled first, so none of its domains is left without its disks."""
    settle(site, pool_dir, virsh)
    shutil.rmtree(park_dir(site, pool_dir), ignore_errors=True)


def unpark(site, echo=print, pool_dir=POOL_DIR, virsh=None, leases_dir=LEASES_DIR):
    """At `up`: define the parked site's networks and domains again, with their golden
    snapshot, when it was parked under the key of this bring-up; True then (the caller
    reverts to the snapshot), False when nothing is parked or it was parked under another
    key (then it is discarded and the site boots cold)."""
    virsh = virsh or snapshots._virsh
    record = settle(site, pool_dir, virsh)   # a park or an unpark stopped halfway: parked first
    if record is None:
        return False
    now = key(site)
    if record.get("key") != now:
        echo(f"the parked site of {site.topo.name} was kept under another key ({record.get('key')}, now {now}): "
             "booting cold")
        discard(site, pool_dir, virsh)
        return False
    there = [h for h in site.topo.hosts if domains.state(site.topo, h)]
    if there:   # made since the site was parked (a plain `vagrant up`): its disks must not be replaced
        echo(f"VMs of {site.topo.name} exist already ({', '.join(there)}): the parked site is dropped")
        discard(site, pool_dir, virsh)
        return False
    source = park_dir(site, pool_dir)
    _write(source, record, UNPARKING)
    # Vagrant's machines first: a domain Vagrant does not know is a leftover that `up`
    # sweeps with its volumes
    shutil.rmtree(_vagrant_machines(), ignore_errors=True)   # what a plain `vagrant` wrote since
    _move_tree(source / VAGRANT_MACHINES, _vagrant_machines())
    for net, xml in record["networks"].items():
        _define(virsh, "net-define", xml, source / f"{net}.net.xml")
        if net in record.get("leases", {}):
            _leases_path(xml, leases_dir).write_text(renewed(record["leases"][net]))
        virsh("net-start", net)
    for host, dom in record["domains"].items():
        for disk in dom["disks"]:
            os.rename(source / Path(disk).name, disk)
        _define(virsh, "define", dom["xml"], source / f"{host}.xml")
        _define(virsh, "snapshot-create", dom["snapshot"], source / f"{host}.snapshot.xml",
                args=(dom["name"],), extra=("--redefine", "--current"))
    (source / RECORD).unlink()   # first: a site without its record is simply up (its VMs exist)
    shutil.rmtree(source, ignore_errors=True)
    return True


def come_back(site, profile, health, cold=False, echo=print):
    """How `up` brings the site back without booting: the last line `up` prints, or None
    when it must boot. A parked site of this bring-up's key is unparked (`cold` drops it
    instead); VMs that exist with a snapshot of this topology, profile and provisioning are
    reverted to it; either way the site is restored from that snapshot. Under CI nothing
    parked is used or dropped."""
    topo = site.topo
    if eligible(topo):
        return None
    started = time.monotonic()
    name = None
    if wanted() and parked(site):
        if cold:
            discard(site)
            echo(f"dropped the parked site of {topo.name} (`up --cold`): booting anew")
        elif unpark(site, echo=echo):
            name, back = GOLDEN, "back warm"
    if name is None and all(domains.state(topo, h) for h in topo.hosts):
        name, back = snapshots.matching(site, profile.name), "restored"
        if name:
            echo(f"the VMs of {topo.name} exist and snapshot {name} matches topology, profile {profile.name} "
                 "and provisioning: restoring it instead of booting")
    if name is None:
        return None
    snapshots.restore(site, name, health=health, echo=echo)
    return (f"site {topo.name} {back} from snapshot {name}: healthy {time.monotonic() - started:.0f} s after "
            "`up` began (as after its cold bring-up; `up --cold` boots it anew)")


def _leases_path(net_xml, leases_dir=LEASES_DIR):
    """The file in which libvirt keeps a network's DHCP leases: named for its bridge."""
    found = re.search(r"<bridge\s[^>]*name=['\"]([^'\"]+)['\"]", net_xml)
    return Path(leases_dir) / f"{found.group(1) if found else 'none'}.status"


def renewed(leases_json, now=None):
    """The leases as parked, each running LEASE_S from now: the restored guests hold their
    leases in memory and do not ask again, while Vagrant finds a guest's address only among
    the network's leases (a plain `vagrant ssh` after a warm `up`)."""
    now = time.time() if now is None else now
    try:
        leases = json.loads(leases_json or "[]")
    except ValueError:
        return "[]"
    for lease in leases:
        lease["expiry-time"] = int(now) + LEASE_S
    return json.dumps(leases, indent=2)


def _define(virsh, verb, xml, path, args=(), extra=()):
    """virsh VERB [args] FILE [extra] with `xml` written to `path`; TestbedError naming it
    when libvirt refuses."""
    path.write_text(xml)
    done = virsh(verb, *args, str(path), *extra)
    if done.returncode != 0:
        raise TestbedError(f"warm up: `virsh {verb} {' '.join(args)} {path}` failed: {done.stderr.strip()}")
    return done
