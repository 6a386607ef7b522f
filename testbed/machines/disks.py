"""The DTN's RAID members as disks of their own: per-member limits enforced
by the hypervisor, host caching of the member images off.

Each data disk (serial tb-data-N, set by the Vagrantfile) gets a libvirt <iotune>
(`virsh blkdeviotune DOMAIN TARGET --total-bytes-sec B --total-iops-sec N`): QEMU's
throttle sits above the image format and the host's page cache, so the guest's md sees
every member as a device of MB/s and IOPS of its own, whatever the host disk does. The
images are opened with cache='none' (O_DIRECT) where the pool's filesystem allows it,
so the host's page cache does not stand behind all members at once; the plan probes
the pool and falls back to 'writethrough' (recorded) where O_DIRECT is refused.

Limits of 0 mean "no limit" (libvirt's own meaning). `set_limits` is idempotent (reads the
limits back first, sets only what differs, reads them back again) and is run after
bring-up, after a snapshot revert (a snapshot carries the limits it was taken with),
and by a suite that changes them for a run (E2's --set member_mb_per_s=...).
"""
import errno
import mmap
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from testbed.machines import domains
from testbed.model.constants import DISK_CACHE_FALLBACK, DISK_CACHE_MODES, DISK_CACHE_PREFERRED
from testbed.model.errors import ConfigError, TestbedError

SERIAL_PREFIX = "tb-data-"
POOL_PATH = "/var/lib/libvirt/images"   # libvirt's `default` pool unless virsh says otherwise
MB = 1_000_000                          # MB/s here are 10^6 bytes per second, as everywhere in results


@dataclass(frozen=True)
class Limits:
    """One member's limits: sequential MB/s and operations per second (0: unlimited)."""
    mb_per_s: float
    iops: int

    @property
    def bytes_per_s(self):
        return int(round(self.mb_per_s * MB))

    @property
    def off(self):
        return not self.mb_per_s and not self.iops

    @property
    def label(self):
        """The `spindles` parameter of a metric: emulated, or off (the host's disk as it is)."""
        return "off" if self.off else "emulated"

    @classmethod
    def of(cls, disks, mb_per_s=None, iops=None):
        """The topology's limits, overridden by a run's (None: the topology's)."""
        return cls(float(disks.mb_per_s if mb_per_s is None else mb_per_s),
                   int(disks.iops if iops is None else iops))


# --- the host cache mode, chosen when the plan is written ----------------------------
def pool_path():
    """The directory of libvirt's `default` pool (read-only `virsh pool-dumpxml`)."""
    try:
        out = domains._virsh("pool-dumpxml", "default", timeout=30).stdout
        found = ET.fromstring(out).findtext("target/path") if out.strip() else None
    except Exception:  # no virsh, no libvirt, no such pool: the usual place
        found = None
    return found or POOL_PATH


def supports_o_direct(directory):
    """(True|False, why): can a file in `directory` be written with O_DIRECT (what
    cache='none' and 'directsync' need)? Writes one aligned 4 KiB block, then removes it."""
    if not os.path.isdir(directory):
        return False, f"{directory} does not exist here"
    path = os.path.join(directory, f".tb-odirect-probe-{os.getpid()}")
    buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT requires
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False, f"{directory}: the filesystem refuses O_DIRECT"
        return False, f"{directory}: cannot probe O_DIRECT ({exc.strerror})"
    try:
        os.write(fd, buf)
        return True, f"{directory}: O_DIRECT write works"
    except OSError as exc:
        return False, f"{directory}: O_DIRECT write failed ({exc.strerror})"
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass


def choose_cache_mode(env=None, probe=None):
    """{'mode', 'why'}: TESTBED_DISK_CACHE if set, else 'none' when the pool takes O_DIRECT,
    else 'writethrough' (the host's page cache then still holds the images' blocks)."""
    env = os.environ if env is None else env
    forced = (env.get("TESTBED_DISK_CACHE") or "").strip()
    if forced:
        if forced not in DISK_CACHE_MODES:
            raise ConfigError("environment", "TESTBED_DISK_CACHE",
                              f"{forced!r} is not a libvirt cache mode ({', '.join(DISK_CACHE_MODES)})")
        return {"mode": forced, "why": "TESTBED_DISK_CACHE"}
    ok, why = (probe or (lambda: supports_o_direct(pool_path())))()
    return {"mode": DISK_CACHE_PREFERRED if ok else DISK_CACHE_FALLBACK, "why": why}


# --- the DTN's data disks in libvirt --------------------------------------------------
def data_disks(topo, host=None):
    """{member index: {'target': 'vdb', 'cache': 'none'|..., 'iotune': {...}}} of the DTN's
    data disks, found by serial in the live domain XML (read-only `virsh dumpxml`)."""
    return _members(domains.of(topo, host or topo.role_host("dtn").name))


def _members(dom):
    """data_disks of one domain; its live XML holds the limits in force (`<iotune>`), as a
    `virsh blkdeviotune` query prints them, so one read gives every member's."""
    proc = dom.virsh("dumpxml", dom.name, timeout=60)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise TestbedError(f"cannot read domain {dom.name} "
                           f"({(proc.stderr or '').strip() or 'virsh dumpxml printed nothing'})")
    return parse_data_disks(proc.stdout)


def parse_data_disks(xml_text):
    found = {}
    for disk in ET.fromstring(xml_text).iter("disk"):
        serial = (disk.findtext("serial") or "").strip()
        target = disk.find("target")
        if not serial.startswith(SERIAL_PREFIX) or target is None:
            continue
        driver = disk.find("driver")
        tune = disk.find("iotune")
        found[int(serial[len(SERIAL_PREFIX):])] = {
            "target": target.get("dev"),
            "cache": (driver.get("cache") if driver is not None else None) or "default",
            "iotune": {child.tag: int(child.text) for child in tune} if tune is not None else {},
        }
    return dict(sorted(found.items()))


def in_force(disk):
    """The limits a member of data_disks has (no `<iotune>`: none)."""
    return Limits(disk["iotune"].get("total_bytes_sec", 0) / MB, disk["iotune"].get("total_iops_sec", 0))


def blkdeviotune_argv(domain, target, limits, live=True, config=True):
    """virsh arguments that set one disk's limits (0 lifts a limit)."""
    argv = ["blkdeviotune", domain, target, "--total-bytes-sec", str(limits.bytes_per_s),
            "--total-iops-sec", str(int(limits.iops))]
    return argv + (["--live"] if live else []) + (["--config"] if config else [])


def matches(got, want):
    return got.bytes_per_s == want.bytes_per_s and int(got.iops) == int(want.iops)


def set_limits(topo, limits=None, echo=print):
    """Give every data disk of the DTN these limits (default: the topology's), live and in
    the persistent definition, unless it has them already; read them back. Returns the
    record the manifest keeps (see `describe`)."""
    dtn = topo.role_host("dtn")
    if dtn is None or dtn.disks is None:
        return None
    limits = limits or Limits.of(dtn.disks)
    dom = domains.of(topo, dtn.name)
    disks = _members(dom)
    missing = [i for i in range(dtn.disks.count) if i not in disks]
    if missing:
        raise TestbedError(f"{dtn.name}: no disk with serial {SERIAL_PREFIX}{missing[0]} in domain {dom.name} "
                           f"({len(disks)} of {dtn.disks.count} data disks found)")
    running = dom.state() == "running"
    changed = []
    for index, disk in disks.items():
        if running and matches(in_force(disk), limits):
            continue
        proc = dom.virsh(*blkdeviotune_argv(dom.name, disk["target"], limits, live=running), timeout=60)
        if proc.returncode != 0:
            raise TestbedError(f"{dtn.name}: could not limit {disk['target']} ({SERIAL_PREFIX}{index}): "
                               f"{(proc.stderr or '').strip()}")
        changed.append(disk["target"])
    if running and changed:
        disks = _members(dom)
        wrong = {d["target"]: in_force(d) for d in disks.values() if not matches(in_force(d), limits)}
        if wrong:
            target, got = next(iter(wrong.items()))
            raise TestbedError(f"{dtn.name}: {target} reads back {got.mb_per_s:g} MB/s, {got.iops} IOPS "
                               f"after setting {limits.mb_per_s:g} MB/s, {limits.iops} IOPS")
    record = describe(topo, limits, disks, running)
    what = "lifted" if limits.off else f"{limits.mb_per_s:g} MB/s, {limits.iops} IOPS each"
    echo(f"{dtn.name}: {len(disks)} RAID members {what} (cache {record['cache']}; "
         f"{'set on ' + ', '.join(changed) if changed else 'already in force'})")
    return record


def describe(topo, limits=None, disks=None, running=None):
    """The manifest's `disks` section: geometry from the topology, the limits of the run,
    and what libvirt has in force (cache mode, limits read back) when the domain is there.
    `disks` and `running`: the DTN's members and whether it runs, when the caller read them."""
    dtn = topo.role_host("dtn")
    if dtn is None or dtn.disks is None:
        return None
    d = dtn.disks
    limits = limits or Limits.of(d)
    record = {"host": dtn.name, "count": d.count, "size_gb": d.size_gb, "raid_level": d.raid_level,
              "chunk_kb": d.chunk_kb, "data_disks": d.data_disks,
              "limits": {"mb_per_s": limits.mb_per_s, "iops": limits.iops},
              "spindles": limits.label, "enforced_by": "libvirt iotune (QEMU block throttling)",
              "cache": None, "in_force": None}
    if disks is None:
        dom = domains.of(topo, dtn.name)
        try:
            disks = _members(dom)
        except (TestbedError, OSError):
            return record  # no domain here (unit tests, a site that is down): the plan only
        running = dom.state() == "running"
    modes = sorted({disk["cache"] for disk in disks.values()})
    record["cache"] = modes[0] if len(modes) == 1 else ",".join(modes)
    record["targets"] = {f"{SERIAL_PREFIX}{i}": disk["target"] for i, disk in disks.items()}
    if running and disks:
        got = in_force(next(iter(disks.values())))
        record["in_force"] = {"mb_per_s": got.mb_per_s, "iops": got.iops}
    return record
