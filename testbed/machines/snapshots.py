"""Whole-site snapshots: every VM's disks and memory saved at one moment, restored in place.

libvirt internal snapshots (all of a domain's disks are qcow2): the site is paused as a
whole, each domain checkpointed, then resumed, so the HTCondor and XRootD state across
VMs is one consistent moment. A restore reverts every domain, sets each guest's clock
from the host (the guests run no time sync) and waits until the site is healthy again.
Each snapshot records what it was taken of (topology, profile, rendered provisioning);
`testbed up` restores a matching one instead of booting when the site's VMs exist.
A site with existing hosts (topology `existing:`) has no whole-site snapshot: those
machines are not libvirt domains of this host, so saving and restoring are refused.
"""
import hashlib
import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from testbed.machines import domains
from testbed.model import site_history
from testbed.model.clock import utc_iso
from testbed.model.errors import ConfigError, TestbedError
from testbed.model.state import write_json

RESTORE_RECORD = "restore.json"
PREFIX = "tb-"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,40}$")
SPACE_MARGIN_MB = 2048


def _virsh(*args):
    """Snapshot operations write or read whole guest memories: allow them half an hour."""
    return domains._virsh(*args, timeout=1800)


def check_name(name):
    if not NAME.match(name or ""):
        raise ConfigError("testbed snapshot", "NAME", f"{name!r}: use letters, digits, '.', '_' or '-'")
    return name


def check_snapshottable(topo, what="saved"):
    """TestbedError naming the existing hosts and the VMs of other machines' hypervisors: a
    snapshot of a site is of every host at once."""
    hosts = topo.existing_hosts
    if hosts:
        names = ", ".join(f"{h.name} ({h.existing.address})" for h in hosts)
        raise TestbedError(f"snapshot: {topo.name} cannot be {what}: {names} "
                           f"{'is an existing host' if len(hosts) == 1 else 'are existing hosts'}, "
                           "not a VM of this machine, and cannot be snapshotted")
    elsewhere = topo.vm_hosts_elsewhere
    if elsewhere:
        names = ", ".join(f"{h.name} ({topo.hypervisor_of(h.name).label})" for h in elsewhere)
        raise TestbedError(f"snapshot: {topo.name} cannot be {what}: {names} "
                           f"{'runs' if len(elsewhere) == 1 else 'run'} on another machine's hypervisor, and a "
                           "whole-site snapshot pauses and saves the domains of this machine's libvirt only")


def record_dir(state):
    return state.dir / "snapshots"


def provisioning_hash(state):
    """A digest of every host's rendered files and scripts (not the secrets): two sites with
    the same digest were provisioned alike."""
    digest = hashlib.sha256()
    for path in sorted(state.hosts_dir.glob("*/**/*")):
        if path.is_file() and "secrets" not in path.relative_to(state.hosts_dir).parts:
            digest.update(str(path.relative_to(state.hosts_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def identity(topo, profile_name, state):
    return {"topology": topo.name, "profile": profile_name, "provisioning": provisioning_hash(state)}


def volume_paths(topo, host):
    out = _virsh("domblklist", domains.domain_name(topo, host), "--details").stdout
    return [line.split()[3] for line in out.splitlines()
            if len(line.split()) >= 4 and line.split()[1] == "disk" and line.split()[3].startswith("/")]


def disk_usage_mb(topo):
    """Bytes the site's disk images take on the host, in MB (internal snapshots live in them)."""
    total = 0
    for host in topo.hosts:
        for path in volume_paths(topo, host):
            out = subprocess.run(["du", "-k", "--apparent-size", path], capture_output=True, text=True).stdout
            total += int(out.split()[0]) if out.split() else 0
    return total // 1024


def check_room(topo, path="/var/lib/libvirt/images"):
    """Refuse when the disk cannot take every VM's memory plus a margin."""
    need = topo.total_memory_mb + SPACE_MARGIN_MB
    free = shutil.disk_usage(path).free // (1024 * 1024)
    if free < need:
        raise TestbedError(f"{path}: {free} MB free, a snapshot of {topo.name} needs about {need} MB "
                           f"(guest RAM {topo.total_memory_mb} MB + {SPACE_MARGIN_MB} MB); free some space")
    return free


def _each(topo, fn):
    """fn(host) for every host at once; raises naming every host that failed."""
    with ThreadPoolExecutor(max_workers=len(topo.hosts)) as pool:
        results = dict(zip(topo.hosts, pool.map(fn, topo.hosts)))
    bad = {h: r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"rc {r.returncode}"
           for h, r in results.items() if r.returncode != 0}
    if bad:
        raise TestbedError("; ".join(f"{h}: {why}" for h, why in bad.items()))
    return results


def save(site, name, profile_name, echo=print, extra=None):
    """Pause the whole site (testbed.remote.site.Site), checkpoint every domain (disks +
    memory), resume; returns the record. `extra`: fields the record carries beside the
    snapshot's own (warm.py: the key a golden snapshot is kept under)."""
    topo, state = site.topo, site.state
    check_name(name)
    check_snapshottable(topo)
    for host in topo.hosts:
        if domains.state(topo, host) != "running":
            raise TestbedError(f"{host}: domain {domains.domain_name(topo, host)} is not running; "
                               "snapshots are taken of a running, healthy site")
    if name in list_names(topo):
        raise TestbedError(f"snapshot {name} exists; `testbed snapshot delete {name}` first")
    check_room(topo)
    before = disk_usage_mb(topo)
    started = time.monotonic()
    # the runs the site carried before the snapshot are carried by every restore of it
    meta = identity(topo, profile_name, state) | {"name": name, "created": utc_iso(),
                                                  "runs_before": (site_history.read(state) or {}).get("runs", [])}
    echo(f"pausing {len(topo.hosts)} VMs and saving their disks and memory as {name}")
    _each(topo, lambda h: _virsh("suspend", domains.domain_name(topo, h)))
    try:
        _each(topo, lambda h: _virsh("snapshot-create-as", "--domain", domains.domain_name(topo, h),
                                     "--name", PREFIX + name, "--description", json.dumps(meta), "--atomic"))
    finally:
        _each(topo, lambda h: _virsh("resume", domains.domain_name(topo, h)))
    meta["seconds"] = round(time.monotonic() - started, 1)
    meta["disk_mb"] = max(0, disk_usage_mb(topo) - before)
    meta.update(extra or {})
    record_dir(state).mkdir(parents=True, exist_ok=True)
    (record_dir(state) / f"{name}.json").write_text(json.dumps(meta, indent=1))
    echo(f"snapshot {name} saved in {meta['seconds']:.0f} s; it takes {meta['disk_mb']} MB of disk")
    return meta


def list_names(topo):
    """Snapshot names every domain of the site has."""
    names = None
    for host in [h.name for h in topo.vm_hosts]:
        proc = _virsh("snapshot-list", domains.domain_name(topo, host), "--name")
        have = {n[len(PREFIX):] for n in proc.stdout.split() if n.startswith(PREFIX)} if proc.returncode == 0 else set()
        names = have if names is None else names & have
    return sorted(names or [])


def records(site):
    out = []
    for name in list_names(site.topo):
        path = record_dir(site.state) / f"{name}.json"
        out.append(json.loads(path.read_text()) if path.exists() else {"name": name})
    return out


def matching(site, profile_name):
    """The newest snapshot taken of the site's topology, this profile and its provisioning, or None."""
    want = identity(site.topo, profile_name, site.state)
    found = [r for r in records(site) if all(r.get(k) == v for k, v in want.items())]
    return max(found, key=lambda r: r.get("created", ""))["name"] if found else None


def set_clocks(topo, ssh, hosts=None):
    """The guests run no time sync: after a restore their clocks stand at the snapshot's time
    (after a pause, at the moment it began). Each guest (of `hosts`, default every one)
    prints its clock before the set (`was=EPOCH`), so the skew corrected is known."""
    now = time.time()
    return ssh.run_many({h: f"echo was=$(date -u +%s.%N); date -u -s @{now:.3f} >/dev/null && echo ok"
                         for h in (topo.hosts if hosts is None else hosts)}, timeout=60), now


def clock_skew(results, now):
    """The largest |guest - host| seen by set_clocks, in seconds."""
    skews = []
    for r in results.values():
        for line in r.stdout.splitlines():
            if line.startswith("was="):
                try:
                    skews.append(abs(float(line[4:]) - now))
                except ValueError:
                    pass
    return round(max(skews), 1) if skews else None


def restore(site, name, ssh=None, wait_timeout=600, echo=print, health=None):
    """Revert every domain of the site (testbed.remote.site.Site) to the snapshot, set the
    guests' clocks, wait until healthy (`health`: the site's health checks,
    testbed.services.health, passed in by the caller as `machines` sits below `services`)."""
    topo = site.topo
    check_name(name)
    check_snapshottable(topo, "restored")
    known = list_names(topo)
    if name not in known:
        raise TestbedError(f"no snapshot {name} of every VM of {topo.name} (snapshots: {', '.join(known) or 'none'})")
    if health is None:
        raise TestbedError("restoring a snapshot waits for the site's health: pass health=testbed.services.health")
    started = time.monotonic()
    phases, mark = {}, [started]   # seconds each step took, in order: where a warm `up` spends its time

    def done(step):
        now = time.monotonic()
        phases[step], mark[0] = round(now - mark[0], 1), now
    echo(f"restoring {len(topo.hosts)} VMs to snapshot {name}")
    _each(topo, lambda h: _virsh("snapshot-revert", domains.domain_name(topo, h), PREFIX + name, "--running"))
    done("revert")
    # a snapshot carries the RAID members' limits it was taken with: put the topology's back
    from testbed.machines import disks
    disks.set_limits(topo, echo=echo)
    done("disk limits")
    ssh = ssh or site.ssh(timeout=60)
    ssh.close_masters()   # opened before the revert: the guests' side of them is gone
    # Seen under TCG: a clock set right after the revert fell back ~50 s while the guests
    # settled, so set it again once the site is healthy and report what was corrected.
    skew = []
    for attempt in ("after the revert", "once healthy"):
        if attempt == "once healthy":
            health.wait_healthy(topo, ssh, timeout=wait_timeout, started=started, echo=echo)
            done("health")
        results, now = set_clocks(topo, ssh)
        bad = [h for h, r in results.items() if not r.ok]
        if bad:
            raise TestbedError(f"could not set the clock on {', '.join(bad)} {attempt}")
        skew.append(clock_skew(results, now))
        done(f"clocks {attempt}")
    total = time.monotonic() - started
    taken = next((r for r in records(site) if r.get("name") == name), {})
    site_history.began(site.state, f"snapshot {name}", runs=taken.get("runs_before", []))
    echo(f"site {topo.name} healthy {total:.0f} s after the restore began "
         f"({', '.join(f'{step} {s:.0f} s' for step, s in phases.items())}; "
         f"guest clocks corrected by up to {skew[0]} s, then {skew[1]} s)")
    restored = {"name": name, "revert_seconds": phases["revert"], "healthy_seconds": round(total, 1),
                "clock_skew_s": skew, "phases": phases, "ended": utc_iso()}
    write_json(site.state.dir / RESTORE_RECORD, restored)   # the last restore, for benchmarks/bringup.py
    return restored


def delete(site, name, echo=print):
    topo = site.topo
    check_name(name)
    if name not in list_names(topo):
        raise TestbedError(f"no snapshot {name} of {topo.name}")
    _each(topo, lambda h: _virsh("snapshot-delete", domains.domain_name(topo, h), PREFIX + name))
    (record_dir(site.state) / f"{name}.json").unlink(missing_ok=True)
    echo(f"snapshot {name} deleted")
