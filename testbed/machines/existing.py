"""Existing hosts (topology `existing:`): checked before anything changes, listed in a dry
run, deprovisioned by `down`, described in the results manifest.

The testbed never creates or destroys such a host. Before `up` changes anything anywhere,
`preflight` logs in to every existing host and refuses, with one line naming the host,
one that is unreachable, refuses the key, cannot sudo, runs an OS the provisioning does
not support, has too little memory, cores or disk for its roles, a clock out of step with
this machine, HTCondor the testbed did not install, a path a role would replace, or
belongs to another topology or checkout (its marker, TESTBED_MARKER). It then asks
provision/existing/prepare.sh, in its read-only `plan` mode, what provisioning would
change: the dry run prints exactly that. `deprovision` runs provision/existing/remove.sh,
which undoes what the ledger recorded and nothing else.
"""
import stat
import time
from concurrent.futures import ThreadPoolExecutor

from testbed.machines import ledger
from testbed.model import constants as c
from testbed.model.errors import ConfigError, TestbedError

PROBE = r"""
. /etc/os-release 2>/dev/null || true
echo "os_id=${ID:-unknown}"
echo "os_version=${VERSION_ID:-}"
echo "os=${PRETTY_NAME:-unknown}"
echo "kernel=$(uname -r)"
echo "mem_mb=$(awk '/^MemTotal:/ {print int($2/1024)}' /proc/meminfo)"
echo "cpus=$(nproc)"
echo "cpu_model=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
echo "disk_free_mb=$(df -Pm / /var | awk 'NR > 1 {print $4}' | sort -n | head -1)"
echo "virt=$(systemd-detect-virt 2>/dev/null || echo none)"
echo "ntp=$(timedatectl show -p NTPSynchronized --value 2>/dev/null || echo unknown)"
echo "chrony=$(chronyc tracking 2>/dev/null | awk -F': *' '/^Leap status/ {print $2}')"
echo "condor_package=$(dpkg-query -W -f '${Status}' condor 2>/dev/null || true)"
echo "condor_binary=$(command -v condor_master || true)"
echo "condor_etc=$([ -e /etc/condor ] && echo 1 || echo 0)"
sed 's/^/marker./' {marker} 2>/dev/null | grep '^marker\.[a-z]*=' || true
awk -v b='{begin}' -v e='{end}' 'index($0, b) == 1 {s = 1}
  !s && $1 !~ /^#/ {for (i = 2; i <= NF && $i !~ /^#/; i++) print "hostsname." $i "=" $1}
  index($0, e) == 1 {s = 0}' /etc/hosts 2>/dev/null || true
""".replace("{marker}", c.TESTBED_MARKER).replace("{begin}", c.HOSTS_BLOCK_BEGIN).replace("{end}", c.HOSTS_BLOCK_END)
FACTS = ("os", "kernel", "cpus", "cpu_model", "mem_mb", "disk_free_mb", "virt", "ntp", "chrony")


def parse_probe(text):
    """The probe's `key=value` lines -> {key: value} (the last of a key wins)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _int(facts, key):
    try:
        return int(facts.get(key, ""))
    except ValueError:
        return None


def disk_needed_mb(host):
    """Free disk an existing host needs on / and /var: packages, logs, spool, and the
    origin's generated files."""
    return c.EXISTING_DISK_MB + host.origin_files * host.origin_file_mb


def refusals(topo, host, facts, identity, skew_s=None):
    """Why the testbed must not provision this existing host, from what the probe read
    (`facts`) and the clock skew measured; [] when nothing stands in the way."""
    out = []
    versions = c.EXISTING_OS.get(facts.get("os_id"), ())
    if facts.get("os_version") not in versions:
        supported = ", ".join(f"{name.capitalize()} {v}" for name, vs in c.EXISTING_OS.items() for v in vs)
        out.append(f"runs {facts.get('os', 'an unknown OS')}; provisioning supports {supported} only "
                   "(the templates are written for its HTCondor 23.9 and XRootD 5.8)")
    mem, cpus, disk = _int(facts, "mem_mb"), _int(facts, "cpus"), _int(facts, "disk_free_mb")
    if mem is None or mem < host.memory_mb:
        out.append(f"has {mem if mem is not None else '?'} MB of RAM, its roles need {host.memory_mb} MB "
                   f"(hosts.{host.name}.memory_mb)")
    if cpus is None or cpus < host.cpus:
        out.append(f"has {cpus if cpus is not None else '?'} cores, its roles need {host.cpus} "
                   f"(hosts.{host.name}.cpus)")
    if disk is None or disk < disk_needed_mb(host):
        out.append(f"has {disk if disk is not None else '?'} MB free on / or /var, its roles need "
                   f"{disk_needed_mb(host)} MB")
    if skew_s is None or abs(skew_s) > c.CLOCK_SKEW_MAX_S:
        sync = facts.get("ntp") == "yes" or facts.get("chrony") == "Normal"
        out.append(("its clock could not be read" if skew_s is None else
                    f"its clock is {skew_s:+.1f} s off this machine's (at most {c.CLOCK_SKEW_MAX_S:g} s)")
                   + ("" if sync else "; it runs no synchronised time service (timedatectl, chronyc)"))
    clashes = [f"{name} ({facts[f'hostsname.{name}']})" for h in topo.hosts.values()
               for name in (h.name, f"{h.name}.{topo.trust_domain}")
               if f"hostsname.{name}" in facts and facts[f"hostsname.{name}"] != h.site_ip]
    if clashes:
        out.append(f"its /etc/hosts already names {', '.join(clashes)}: the site's host names would clash")
    marker = {k[len("marker."):]: v for k, v in facts.items() if k.startswith("marker.")}
    if marker:
        if marker.get("owner") != identity or marker.get("topology") != topo.name:
            out.append(f"is claimed by topology {marker.get('topology', '?')} of {marker.get('owner', '?')} "
                       f"({c.TESTBED_MARKER}); `down` that one first")
    elif (facts.get("condor_package", "").endswith(" installed") or facts.get("condor_binary")
          or facts.get("condor_etc") == "1"):
        out.append(f"runs HTCondor the testbed did not install (no {c.TESTBED_MARKER}); "
                   "provisioning would take over its configuration")
    return out


def ssh_problem(host, result):
    """One line for an SSH or sudo failure of the first command, or None when it worked."""
    if result.ok:
        return None
    spec = host.existing
    text = (result.stderr or result.stdout or "").strip()
    last = text.splitlines()[-1] if text else f"exit code {result.rc}"
    if "sudo" in text and ("password" in text or "not in the sudoers" in text or "not allowed" in text):
        return f"user {spec.user} cannot run sudo without a password ({last})"
    if "Permission denied" in text:
        return f"refuses key {spec.key} for user {spec.user} ({last})"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text:
        return f"its SSH host key is not the one recorded in the testbed's known_hosts ({last})"
    if result.rc in (124, 255):
        return f"unreachable: {last}"
    return f"the first command failed: {last}"


def check_key(topo, host):
    """The private key exists and only its owner can read it (ssh ignores it otherwise)."""
    key, field = host.existing.key, f"hosts.{host.name}.existing.key"
    if not key.is_file():
        raise ConfigError(topo.source, field, f"{key}: no such file")
    if key.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(topo.source, field, f"{key} is readable by others and ssh ignores such a key "
                                              f"(chmod 600 {key})")


def clock_skew(ssh, name, clock=time.time):
    """The host's clock minus this machine's, in seconds (the midpoint of the call), or None."""
    before = clock()
    res = ssh.run(name, "date -u +%s.%N", check=False, timeout=30)
    after = clock()
    try:
        return float(res.stdout.strip()) - (before + after) / 2 if res.ok else None
    except ValueError:
        return None


def check_host(topo, profile, host, ssh, identity=None, clock=time.time):
    """(facts, the plan's lines) of one existing host, or TestbedError with its refusal."""
    from testbed.machines import render
    where = f"existing host {host.name} ({host.existing.target})"
    problem = ssh_problem(host, ssh.run(host.name, "true", check=False, timeout=60))
    if problem:
        raise TestbedError(f"{where}: {problem}")
    facts = parse_probe(ssh.run(host.name, PROBE, check=False, timeout=60).stdout)
    problems = refusals(topo, host, facts, identity or ledger.owner(), clock_skew(ssh, host.name, clock))
    if problems:
        raise TestbedError(f"{where}: " + "; ".join(problems))
    changes = render.existing_changes(topo, profile, host).encode()
    res = ssh.run(host.name, ledger.plan_command(), check=False, input_bytes=changes, timeout=120)
    if res.rc == ledger.REFUSED:
        raise TestbedError(f"{where}: " + "; ".join(ledger.conflicts(res.stdout)))
    if not res.ok:
        raise TestbedError(f"{where}: listing its changes failed: "
                           f"{(res.stderr.strip() or res.stdout.strip() or 'no output').splitlines()[-1]}")
    return {k: facts.get(k, "") for k in FACTS}, ledger.describe_plan(res.stdout)


def preflight(topo, profile, ssh, identity=None):
    """Every existing host checked at once; {host: (facts, plan lines)}. TestbedError naming
    each host refused (one line) before anything is changed anywhere."""
    hosts = topo.existing_hosts
    for host in hosts:
        check_key(topo, host)
    if not hosts:
        return {}
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        futures = {h.name: pool.submit(check_host, topo, profile, h, ssh, identity) for h in hosts}
    out, refused = {}, []
    for name, future in futures.items():
        try:
            out[name] = future.result()
        except TestbedError as exc:
            refused.append(str(exc))
    if refused:
        raise TestbedError("; ".join(refused) + " (nothing was changed)")
    return out


def dry_run_lines(topo, checked):
    """What `up --dry-run` prints: the VMs it would create, then every change on each
    existing host."""
    lines = []
    for h in topo.vm_hosts:
        on = f" on hypervisor {topo.hypervisor_of(h.name).name}" if topo.hypervisors else ""
        lines.append(f"VM {h.name}: would create it{on} ({h.memory_mb} MB, {h.cpus} vCPU, site address {h.site_ip})")
    for name, (facts, plan) in checked.items():
        host = topo.hosts[name]
        lines.append(f"existing host {name} ({host.existing.target}, {facts.get('os')}, {facts.get('cpus')} "
                     f"cores, {facts.get('mem_mb')} MB): " + ("would change:" if plan else "nothing to change"))
        lines += [f"  {line}" for line in plan]
    return lines


def facts(ssh, name):
    """Hardware and OS read off one existing host, for the results manifest."""
    got = parse_probe(ssh.run(name, PROBE, check=False, timeout=60).stdout)
    return {k: got.get(k, "") for k in FACTS}


def deprovision(topo, ssh, echo=print, identity=None):
    """Undo what the testbed recorded on every existing host (remove.sh), all at once;
    echo what each one did. Returns the hosts left as they were (unreachable, claimed by
    another checkout, or with something kept) -> their reasons."""
    hosts = topo.existing_hosts
    if not hosts:
        return {}
    command = ledger.remove_command(identity)
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        results = dict(zip([h.name for h in hosts],
                           pool.map(lambda h: ssh.run(h.name, command, check=False, timeout=1800), hosts)))
    left = {}
    for name, res in results.items():
        host = topo.hosts[name]
        where = f"existing host {name} ({host.existing.target})"
        problem = ssh_problem(host, res) if res.rc in (124, 255) else None
        if problem:
            left[name] = problem
            echo(f"{where}: {problem}; what the testbed installed there stays until `down` reaches it")
            continue
        if res.rc == ledger.REFUSED:
            left[name] = "; ".join(ledger.conflicts(res.stdout))
            echo(f"{where}: left untouched: {left[name]}")
            continue
        done, kept = ledger.describe_removal(res.stdout)
        for line in done + kept:
            echo(f"{where}: {line}")
        if not res.ok or kept:
            left[name] = "; ".join(kept) or (res.stderr.strip().splitlines() or [f"rc {res.rc}"])[-1]
    return left
