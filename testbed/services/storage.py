"""DTN storage and XRootD operations on a running site."""
import json
import re
import shlex

from testbed.model.constants import CACHE_DIR, MD_SYSFS as MD_SYS, ORIGIN_CHECKSUMS, RAID_MOUNT
from testbed.model.errors import RemoteError

RECORD_MARK = "@@ cinfo "   # precedes each file's record in `cache_records_script`'s output


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
        cmd = (f"s=$(date +%s.%N); xrdcp -f -s -C adler32:print root://{endpoint}/{path} /dev/null 2>&1; "
               f"rc=$?; e=$(date +%s.%N); echo elapsed=$(echo \"$e - $s\" | bc -l 2>/dev/null || "
               f"python3 -c \"print($e-$s)\"); exit $rc")
        result = self.ssh.run(client, cmd, timeout=600)
        m = re.search(r"adler32:\s*([0-9a-f]+)", result.stdout)
        t = re.search(r"elapsed=([0-9.]+)", result.stdout)
        if not m:
            raise RemoteError(f"{client}: xrdcp from {endpoint} printed no checksum: {result.stdout.strip()[:200]}")
        return m.group(1).zfill(8), float(t.group(1)) if t else None

    def cache_record(self, path):
        """The caching proxy's own record of a file (xrdpfc_print -j on its .cinfo)."""
        out = self.ssh.run(self.dtn.name, f"xrdpfc_print -j {CACHE_DIR}/{path.lstrip('/')}.cinfo").stdout
        return json.loads(out)
