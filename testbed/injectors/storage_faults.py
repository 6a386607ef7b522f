"""Storage faults on the DTN and the origin: RAID members failed, removed and added back
(resync measured), a third failure that breaks the array and its restore, the origin's
XRootD stopped and started, the DTN rebooted; checksums of cached and origin files.

Members are named by the serials of the testbed's data disks (DATA_DISK_BY_ID + index), so
a reboot that renames vdb..vdg cannot confuse a before/after comparison, and nothing here
touches a disk that is not one of them. Nothing here ever creates an array or a file system.
"""
import re
import shlex

from testbed.model.constants import (CACHE_DIR, CACHE_UNIT, DATA_DISK_BY_ID, DTN_XROOTD_UNITS, MD_DEVICE, MD_MAX_DEGRADED,
                                     MD_SYSFS, ORIGIN_CHECKSUMS, ORIGIN_DIR, ORIGIN_UNIT, RAID_MOUNT, RAID_USERS,
                                     XROOTD_CACHE_PORT)
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.storage import XrootdUnits, read_cache_records, read_checksum, timed_read, timed_reads

STATUS_SCRIPT = r"""
md={md}
echo "level=$(cat $md/level 2>/dev/null)"
echo "array_state=$(cat $md/array_state 2>/dev/null || echo missing)"
echo "raid_disks=$(cat $md/raid_disks 2>/dev/null)"
echo "degraded=$(cat $md/degraded 2>/dev/null)"
echo "sync_action=$(cat $md/sync_action 2>/dev/null)"
echo "sync_completed=$(cat $md/sync_completed 2>/dev/null)"
echo "sync_speed=$(cat $md/sync_speed 2>/dev/null)"
echo "component_kb=$(cat $md/component_size 2>/dev/null)"
echo "uuid=$(mdadm --detail {dev} 2>/dev/null | awk '/UUID :/{{print $3}}')"
echo "detail_state=$(mdadm --detail {dev} 2>/dev/null | sed -n 's/^ *State : //p')"
echo "fs=$(findmnt -n -o FSTYPE {mount} 2>/dev/null)"
for link in {by_id}*; do
  [ -e "$link" ] || continue
  kname=$(basename "$(readlink -f "$link")")
  serial=${{link#{by_id}}}
  role=none
  [ -e $md/dev-$kname/state ] && role=$(cat $md/dev-$kname/state | tr ',' '+')
  echo "disk=$serial $kname $role"
done
""".format(md=MD_SYSFS, dev=MD_DEVICE, mount=RAID_MOUNT, by_id=DATA_DISK_BY_ID)

ADLER_PY = r"""
import sys, zlib
for p in sys.argv[1:]:
    a = 1
    try:
        with open(p, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                a = zlib.adler32(b, a)
        print("%08x %s" % (a & 0xffffffff, p.rsplit("/", 1)[-1]))
    except OSError as e:
        print("error %s %s" % (p.rsplit("/", 1)[-1], e.strerror))
"""


def adler_command(paths):
    """Shell: adler32 of each file computed by reading it (no stored checksum is trusted)."""
    return f"python3 -c {shlex.quote(ADLER_PY)} " + " ".join(shlex.quote(p) for p in paths)


def parse_checksums(text):
    """{file name: adler32 hex or 'error ...'} from adler_command's output."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == "error":
            out[parts[1]] = "error " + (parts[2] if len(parts) > 2 else "")
        elif len(parts) == 2 and re.fullmatch(r"[0-9a-f]{8}", parts[0]):
            out[parts[1]] = parts[0]
    return out


def checksum_mismatches(got, expected):
    """[(name, got, expected)] for files whose checksum differs from the origin's record."""
    return [(n, got.get(n, "missing"), expected.get(n, "no record")) for n in sorted(got)
            if got.get(n) != expected.get(n)]


def parse_status(text):
    """md0 as STATUS_SCRIPT prints it: levels, states, sync progress and the data disks
    {serial: (kernel name, md role or 'none')}."""
    info = {"disks": {}}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "disk":
            parts = value.split()
            if len(parts) == 3:
                info["disks"][parts[0]] = (parts[1], parts[2])
        else:
            info[key] = value.strip()
    info["level_n"] = int(info.get("level", "raid-1").replace("raid", "") or -1) \
        if info.get("level", "").startswith("raid") else None
    info["degraded_n"] = int(info["degraded"]) if info.get("degraded", "").isdigit() else None
    info["members"] = sorted(s for s, (_k, role) in info["disks"].items() if "in_sync" in role)
    info["faulty"] = sorted(s for s, (_k, role) in info["disks"].items() if "faulty" in role)
    info["outside"] = sorted(s for s, (_k, role) in info["disks"].items() if role == "none")
    return info


def array_failed(info):
    """True when md0 has lost more members than its level survives (or says it is broken)."""
    limit = MD_MAX_DEGRADED.get(info.get("level_n"), 0)
    return (info.get("array_state") in ("broken", "inactive", "missing")
            or "FAILED" in info.get("detail_state", "").upper()
            or (info.get("degraded_n") is not None and info["degraded_n"] > limit))


def sync_fraction(text):
    """`sync_completed` ("123 / 456" sectors, or "none") -> 0..1, or None when idle."""
    m = re.match(r"^\s*(\d+)\s*/\s*(\d+)", text or "")
    if not m or int(m.group(2)) == 0:
        return None
    return int(m.group(1)) / int(m.group(2))


def resync_rate(component_kb, seconds):
    """MB/s at which a member was rebuilt: its size over the time from add to in sync."""
    return component_kb * 1024 / 1e6 / seconds if seconds > 0 else 0.0


def pick_members(info, n):
    """The last n in-sync members by serial (reproducible); ValueError if too few."""
    members = info["members"]
    if len(members) < n:
        raise ValueError(f"md0 has {len(members)} members in sync, cannot fail {n}")
    return members[-n:]


CLIENT_EXPIRED = ("Operation expired", "operation expired")


def error_source(result, bound):
    """Who ended a failed read: 'server' (the proxy answered with an error), 'client-timeout'
    (the client's own request timeout or the shell's kill after `bound` s), or 'none' (it worked)."""
    if result["ok"]:
        return "none"
    if result["rc"] in (124, 137) or any(m in result["error"] for m in CLIENT_EXPIRED) or not result["error"]:
        return "client-timeout"
    return "server"


def read_error(stdout, stderr, rc):
    """The error a failed xrdcp printed ([ERROR] / [FATAL] line), or '' if none."""
    for line in (stderr + "\n" + stdout).splitlines():
        if "[ERROR]" in line or "[FATAL]" in line or "Run:" in line:
            return line.strip()
    return ""


class StorageFaults:
    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh
        self.dtn = topo.role_host("dtn")
        self.origin = topo.role_host("origin")
        self.client = topo.role_host("submit")
        self.dtn_units = XrootdUnits(ssh, self.dtn.name)

    # --- md0 ------------------------------------------------------------------------------------
    def status(self):
        return parse_status(self.ssh.run(self.dtn.name, STATUS_SCRIPT, check=False, timeout=60).stdout)

    def _kname(self, info, serial):
        if serial not in info["disks"]:
            raise RemoteError(f"{self.dtn.name}: no data disk {DATA_DISK_BY_ID}{serial}")
        return info["disks"][serial][0]

    def fail(self, serials, remove=True):
        """mdadm --fail (and --remove) members given by serial. Undo: add_back."""
        info = self.status()
        for serial in serials:
            dev = f"/dev/{self._kname(info, serial)}"
            cmd = f"mdadm {MD_DEVICE} --fail {dev}"
            if remove:
                cmd += f" && sleep 1 && mdadm {MD_DEVICE} --remove {dev}"
            self.ssh.run(self.dtn.name, cmd, timeout=60)
        return self.status()

    def add_back(self, serials):
        """Put failed/removed members back: --re-add when md can, else wipe the old member's
        superblock and --add them all at once (one rebuild for all). Only the testbed's data
        disks that are out of the array are touched: a faulty member is removed first, a
        spare being rebuilt is left alone. Returns the status after."""
        info = self.status()
        out = []
        for serial in serials:
            kname = self._kname(info, serial)
            role = info["disks"][serial][1]
            if "in_sync" in role or "spare" in role:
                continue
            if "faulty" in role:  # still listed: take it out first
                self.ssh.run(self.dtn.name, f"mdadm {MD_DEVICE} --remove /dev/{kname}", timeout=60)
            out.append(kname)
        if not out:
            return info
        guard = "; ".join(f"[ ! -e {MD_SYSFS}/dev-{k} ] || {{ echo '/dev/{k} is still in md0' >&2; exit 1; }}"
                          for k in out)
        readd = "; ".join(f"mdadm {MD_DEVICE} --re-add /dev/{k} 2>/dev/null || "
                          f"{{ mdadm --zero-superblock /dev/{k} && add=\"$add /dev/{k}\"; }}" for k in out)
        self.ssh.run(self.dtn.name, f"set -e; {guard}; add=; {readd}; "
                                    f"[ -z \"$add\" ] || mdadm {MD_DEVICE} --add $add", timeout=120)
        return self.status()

    def wait_resync(self, timeout=900, poll=3):
        """Wait until md0 has no degraded member and no recovery runs. Returns {seconds,
        speeds (md's sync_speed samples, K/s), component_kb, rate (MB/s per member)}."""
        speeds, last = [], {}

        def whole():
            info = last["info"] = self.status()
            if info.get("sync_speed", "").isdigit():
                speeds.append(int(info["sync_speed"]))
            idle = info.get("sync_action") in ("idle", "") and sync_fraction(info.get("sync_completed")) is None
            return info.get("degraded_n") == 0 and idle

        def failed():
            info = last.get("info", {})
            return f"md0 failed while resyncing ({info.get('detail_state')})" if array_failed(info) else None

        def state():
            info = last.get("info", {})
            return f"degraded {info.get('degraded')}, sync {info.get('sync_completed')}"
        seconds = wait_for("md0 whole and idle (no degraded member, no recovery)", whole, timeout, poll,
                           host=self.dtn.name, state=state, fail_fast=failed)
        info = last["info"]
        kb = int(info.get("component_kb") or 0)
        return {"seconds": float(seconds), "speeds": speeds, "component_kb": kb,
                "rate": resync_rate(kb, float(seconds)), "status": info}

    def raw_read_error(self):
        """Read 64 MiB of /dev/md0 bypassing the page cache (stripes whose data sit on every
        member); '' if it worked, else the error."""
        res = self.ssh.run(self.dtn.name, f"LC_ALL=C dd if={MD_DEVICE} of=/dev/null bs=1M count=64 iflag=direct 2>&1",
                           check=False, timeout=60)
        return "" if res.ok else (res.stdout.strip().splitlines() or ["no output"])[0]

    def release_raid(self):
        """Stop what uses /raid and unmount it (before an array is broken on purpose)."""
        self.dtn_units.stop(RAID_USERS, tolerant=True)
        self.ssh.run(self.dtn.name, f"sync; umount {RAID_MOUNT}", timeout=180)

    def restore_array(self, serials_all):
        """Bring a failed md0 back: stop it, assemble it by force from every data disk (the
        freshest members win; never --create), add back whatever it left out, mount /raid
        and start the XRootD units. Returns the status after assembly (resync may run)."""
        disks = " ".join(f"{DATA_DISK_BY_ID}{s}" for s in serials_all)
        self.dtn_units.stop(RAID_USERS, tolerant=True)
        self.ssh.run(self.dtn.name,
                     f"mountpoint -q {RAID_MOUNT} && umount {RAID_MOUNT} || true; "
                     # udev may have assembled a part of it under another name (md127)
                     f"for md in /dev/md[0-9]*; do [ -e \"$md\" ] && mdadm --stop \"$md\" >/dev/null 2>&1; done; "
                     f"mdadm --assemble --force --run {MD_DEVICE} {disks}",
                     timeout=300)
        info = self.status()
        if array_failed(info):
            raise RemoteError(f"{self.dtn.name}: md0 did not come back from a forced assembly: "
                              f"{info.get('detail_state') or info.get('array_state')}")
        left_out = [s for s in serials_all if s not in info["members"]]
        if left_out:
            info = self.add_back(left_out)
        self.mount_and_serve()
        return info

    def mount_and_serve(self):
        """/raid mounted and every XRootD unit of the DTN running."""
        self.ssh.run(self.dtn.name, f"mountpoint -q {RAID_MOUNT} || mount {RAID_MOUNT}", timeout=300)
        self.dtn_units.start(DTN_XROOTD_UNITS)

    # --- files ----------------------------------------------------------------------------------
    def origin_records(self):
        """{file: adler32} as the origin recorded them when it made its files."""
        out = self.ssh.run(self.origin.name, f"cat {ORIGIN_CHECKSUMS}").stdout
        return {name: value.zfill(8) for value, name in (l.split() for l in out.splitlines() if l.strip())}

    def origin_checksums(self, names):
        """{file: adler32} of the origin's files computed now from their bytes."""
        paths = [f"{ORIGIN_DIR}/data/{n}" for n in names]
        return parse_checksums(self.ssh.run(self.origin.name, adler_command(paths), timeout=600).stdout)

    def cache_checksums(self, names):
        """{file: adler32} of the caching proxy's copies on the RAID (page cache dropped first,
        so the bytes come from the array)."""
        paths = [f"{CACHE_DIR}/data/{n}" for n in names]
        cmd = "sync; echo 3 > /proc/sys/vm/drop_caches; " + adler_command(paths)
        return parse_checksums(self.ssh.run(self.dtn.name, cmd, check=False, timeout=600).stdout)

    def cache_complete(self, names, timeout=60, poll=3):
        """Wait until the proxy records every file as complete in its cache; returns the
        names that are not complete when the time is up."""
        incomplete = list(names)

        def complete():
            records = read_cache_records(self.ssh, self.dtn.name, names)
            incomplete[:] = [n for n in names if records.get(n, {}).get("state_complete") != "complete"]
            return not incomplete
        try:
            wait_for("the proxy's cache to hold every file complete", complete, timeout, poll,
                     host=self.dtn.name, state=lambda: f"incomplete: {', '.join(incomplete)}")
        except RemoteError:
            pass  # the caller reports what is still incomplete (the return value), not a failure
        return incomplete

    def read_through_proxy(self, name, bound=None):
        """xrdcp one origin file through the DTN's caching proxy from the client host.
        Returns {ok, adler32, seconds, error}. With `bound`, the client gives up after
        `bound` s (XRD_REQUESTTIMEOUT) and the shell kills it 30 s later."""
        url = f"root://{self.dtn.name}:{XROOTD_CACHE_PORT}//data/{name}"
        res = self.ssh.run(self.client.name, timed_read(url, self.client.name, name, bound=bound, checksum=True),
                           check=False, timeout=(bound or 600) + 90)
        reads = timed_reads(res.stdout)
        rc = reads[0][4] if reads else res.rc
        seconds = reads[0][3] - reads[0][2] if reads else None
        got = read_checksum(res.stdout + res.stderr)
        return {"ok": rc == 0 and got is not None, "rc": rc, "adler32": got,
                "seconds": seconds, "error": read_error(res.stdout, res.stderr, rc)}

    # --- origin ---------------------------------------------------------------------------------
    def stop_origin(self):
        """Stop the origin's XRootD. Undo: start_origin."""
        XrootdUnits(self.ssh, self.origin.name).stop([ORIGIN_UNIT])

    def start_origin(self):
        XrootdUnits(self.ssh, self.origin.name).start([ORIGIN_UNIT])

    def evict(self, names):
        """Drop files from the proxy's cache (proxy stopped meanwhile) so reads of them are misses."""
        self.dtn_units.restart_without(CACHE_UNIT, [f"{CACHE_DIR}/data/{n}{ext}" for n in names for ext in ("", ".cinfo")])

    # --- reboot ---------------------------------------------------------------------------------
    def boot_id(self, host):
        res = self.ssh.run(host, "cat /proc/sys/kernel/random/boot_id", check=False, timeout=30)
        return res.stdout.strip() if res.ok else None

    def reboot(self, host, timeout=900, poll=5):
        """Reboot a guest from inside (a timer, so the SSH session returns first) and wait
        until it answers with a new boot id. Returns the seconds that took."""
        before = self.boot_id(host)
        if not before:
            raise RemoteError(f"{host}: not reachable before the reboot")
        self.ssh.run(host, "systemd-run --quiet --on-active=2s systemctl reboot", timeout=30)

        seen = [before]

        def rebooted():
            seen[0] = now = self.boot_id(host)
            return bool(now) and now != before

        return float(wait_for("back after the reboot (a new boot id)", rebooted, timeout, poll, host=host,
                              state=lambda: "no SSH answer" if not seen[0] else f"the old boot id {seen[0]}"))

