"""DTN storage and XRootD operations on a running site."""
import json
import re
import shlex

from testbed.model.constants import CACHE_DIR, MD_SYSFS as MD_SYS, ORIGIN_CHECKSUMS, RAID_MOUNT
from testbed.model.errors import RemoteError

RECORD_MARK = "@@ cinfo "   # precedes each file's record in `cache_records_script`'s output
READ_LINE = re.compile(r"^read (\S+) (\S+) ([0-9.]+) ([0-9.]+) (\d+)$", re.M)
CHECKSUM = re.compile(r"adler32:\s*([0-9a-f]+)")


def timed_read(url, client="c1", name="-", env="", bound=None, checksum=False):
    """One shell line that xrdcp's `url` to /dev/null timed by the client host's clock, then
    prints `read CLIENT NAME START END RC` (read back by `timed_reads`); with `checksum` the
    client prints the file's adler32 first. `bound`: the client gives up after `bound` s
    (XRD_REQUESTTIMEOUT) and the shell kills it 30 s later."""
    if bound:
        env += f"XRD_REQUESTTIMEOUT={int(bound)} XRD_STREAMTIMEOUT={int(bound)} "
    wrap = f"timeout -k 5 {int(bound) + 30} " if bound else ""
    flags = "-f -s -C adler32:print" if checksum else "-f -s"
    return (f"s=$(date +%s.%N); {env}{wrap}xrdcp {flags} {url} /dev/null; rc=$?; "
            f"e=$(date +%s.%N); echo read {client} {name} $s $e $rc")


def timed_reads(text):
    """[(client, name, start, end, rc)] of the `read` lines `timed_read` printed in `text`."""
    return [(c, n, float(s), float(e), int(rc)) for c, n, s, e, rc in READ_LINE.findall(text)]


def read_checksum(text):
    """The adler32 (8 hex digits) xrdcp printed in `text`, or None."""
    m = CHECKSUM.search(text)
    return m.group(1).zfill(8) if m else None


def cache_records_script(names, cache_dir=CACHE_DIR):
    """One shell command printing the caching proxy's record (`xrdpfc_print -j` on the
    .cinfo) of every named file under the cache's data/, each after a RECORD_MARK line."""
    return "; ".join(f"echo {shlex.quote(RECORD_MARK + n)}; xrdpfc_print -j "
                     f"{shlex.quote(f'{cache_dir}/data/{n}.cinfo')} 2>/dev/null" for n in names)


def parse_cache_records(text):
    """{name: record} from `cache_records_script`'s output; a file without a readable record
    (no .cinfo yet, or unparsable JSON) is left out."""
    out = {}
    for chunk in text.split(RECORD_MARK)[1:]:
        name, _, body = chunk.partition("\n")
        try:
            record = json.loads(body)
        except ValueError:
            continue
        if isinstance(record, dict):
            out[name.strip()] = record
    return out


def read_cache_records(ssh, host, names):
    """The caching proxy's records of `names` on `host`, in one remote command."""
    if not names:
        return {}
    return parse_cache_records(ssh.run(host, cache_records_script(sorted(set(names))), check=False,
                                       timeout=300).stdout)


def xrdcp_command(url, dest):
    """One xrdcp of `url` to `dest` (a local path), overwriting it, without progress output."""
    return f"xrdcp -f -s {url} {dest}"


def units_command(action, units, tolerant=False):
    """`systemctl ACTION` of XRootD/cmsd units (names without `.service`, e.g. xrootd@xcache),
    in the order given; `tolerant`: a unit that is not there or will not stop is no error."""
    return f"systemctl {action} {' '.join(f'{u}.service' for u in units)}" + (" || true" if tolerant else "")


class XrootdUnits:
    """The XRootD and cmsd services of one host: what an experiment or a fault stops, starts,
    empties or asks is running through here, never a systemctl of its own."""

    def __init__(self, ssh, host):
        self.ssh, self.host = ssh, host

    def stop(self, units, tolerant=False, timeout=180):
        return self.ssh.run(self.host, units_command("stop", units, tolerant), timeout=timeout)

    def start(self, units, timeout=300):
        return self.ssh.run(self.host, units_command("start", units), timeout=timeout)

    def restart_without(self, unit, paths, settle_s=2):
        """Stop `unit`, remove `paths` (files or folders, shell-quoted here), start it again
        and give it `settle_s` to open its port: a cache emptied of those files."""
        quoted = " ".join(shlex.quote(p) for p in paths)
        self.ssh.run(self.host, f"{units_command('stop', [unit])}; rm -rf {quoted}; "
                                f"{units_command('start', [unit])}; sleep {int(settle_s)}")

    def active(self, units):
        """{unit: active?}."""
        cmd = "; ".join(f"echo {u}=$(systemctl is-active {u}.service)" for u in units)
        out = self.ssh.run(self.host, cmd, check=False, timeout=60).stdout
        got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return {u: got.get(u) == "active" for u in units}


class Storage:
    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh
        self.dtn = topo.role_host("dtn")
        self.origin = topo.role_host("origin")

    def raid(self):
        cmd = (f"echo level=$(cat {MD_SYS}/level); echo state=$(cat {MD_SYS}/array_state); "
               f"echo disks=$(cat {MD_SYS}/raid_disks); echo degraded=$(cat {MD_SYS}/degraded); "
               f"echo members=$(ls /sys/block/md0/slaves | tr '\\n' ' '); "
               f"echo chunk=$(cat {MD_SYS}/chunk_size); echo fs=$(findmnt -n -o FSTYPE {RAID_MOUNT})")
        out = self.ssh.run(self.dtn.name, cmd).stdout
        info = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        info["members"] = info.get("members", "").split()
        return info

    def origin_checksums(self):
        out = self.ssh.run(self.origin.name, f"cat {ORIGIN_CHECKSUMS}").stdout
        return {name: value for value, name in (line.split() for line in out.splitlines() if line.strip())}

    def read_via(self, endpoint, path, client=None):
        """xrdcp a file to /dev/null from a client host; returns (adler32, seconds)."""
        client = client or self.topo.role_host("submit").name
        result = self.ssh.run(client, timed_read(f"root://{endpoint}/{path}", checksum=True), timeout=600)
        got, reads = read_checksum(result.stdout + result.stderr), timed_reads(result.stdout)
        if not got or not reads or reads[0][4] != 0:
            raise RemoteError(f"{client}: xrdcp from {endpoint} printed no checksum: "
                              f"{(result.stdout + result.stderr).strip()[:200]}")
        _c, _n, start, end, _rc = reads[0]
        return got, end - start

    def cache_record(self, path):
        """The caching proxy's own record of a file (xrdpfc_print -j on its .cinfo)."""
        out = self.ssh.run(self.dtn.name, f"xrdpfc_print -j {CACHE_DIR}/{path.lstrip('/')}.cinfo").stdout
        return json.loads(out)
