"""Each guest's own record of its boot: kernel and userspace times from systemd-analyze,
and when sshd listened and the management lease arrived, from the journal."""
import re

BOOT_PROBE = r"""
systemd-analyze 2>/dev/null | head -1
journalctl -b -o short-monotonic --no-pager 2>/dev/null \
  | grep -E 'sshd\[[0-9]+\]: Server listening on 0.0.0.0|dhclient\[[0-9]+\]: (DHCPACK|bound to)|Reached target multi-user' \
  | head -5
echo "uptime=$(cut -d' ' -f1 /proc/uptime)"
"""
ANALYZE = re.compile(r"Startup finished in (?P<parts>.*?) = (?P<total>[0-9.]+(?:min )?[0-9.]*s)")
PART = re.compile(r"(?P<value>[0-9.]+(?:min )?[0-9.]*m?s) \((?P<name>[a-z]+)\)")
JOURNAL = re.compile(r"^\[\s*(?P<t>[0-9.]+)\]")


def seconds(text):
    """systemd's '1min 2.5s' / '13.908s' / '640ms' -> seconds."""
    total = 0.0
    for value, unit in re.findall(r"([0-9.]+)(min|ms|s)", text):
        total += float(value) * {"min": 60, "s": 1, "ms": 0.001}[unit]
    return round(total, 2)


def parse(text):
    """The probe's output -> {kernel, initrd?, userspace, total, sshd, lease, multi_user, uptime} s."""
    out = {}
    m = ANALYZE.search(text)
    if m:
        for part in PART.finditer(m.group("parts")):
            out[part.group("name")] = seconds(part.group("value"))
        out["total"] = seconds(m.group("total"))
    for line in text.splitlines():
        t = JOURNAL.match(line)
        if not t:
            if line.startswith("uptime="):
                out["uptime"] = float(line.split("=", 1)[1] or 0)
            continue
        when = float(t.group("t"))
        if "Server listening" in line:
            out.setdefault("sshd", when)
        elif "DHCPACK" in line or "bound to" in line:
            out.setdefault("lease", when)
        elif "multi-user" in line:
            out.setdefault("multi_user", when)
    return out


def collect(ssh, hosts):
    """{host: parsed record} for every host, in parallel."""
    results = ssh.run_many({h: BOOT_PROBE for h in hosts}, timeout=60)
    return {h: parse(r.stdout) if r.ok else {} for h, r in results.items()}
