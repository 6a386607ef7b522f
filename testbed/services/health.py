"""Health of a running site: every VM, daemon, HA leader, CCB, slots, XRootD, RAID.

Each host answers one probe (a few shell commands printing `key=value`
lines); the pool-wide view comes from the gateway's pool probe (condor_status on the
submit host). `collect` parses all of it into one report; `format_report` makes the
table; `wait_healthy` waits through remote/poll.wait_for. In `services` (not `remote`)
so that it may use the HTCondor gateway; machines' bring-up and snapshot restore get it
passed in by their callers.
"""
import re
import time
from urllib.parse import unquote

from testbed.model import constants as c, tables
from testbed.model.errors import TestbedError
from testbed.remote.poll import wait_for
from testbed.services.gateway import Schedd

DAEMONS = {"submit": ["condor_master", "condor_shared_port", "condor_schedd"],
           "cm": ["condor_master", "condor_shared_port", "condor_collector", "condor_had",
                  "condor_replication"],
           "ccb": ["condor_master", "condor_collector"],
           "worker": ["condor_master", "condor_shared_port", "condor_startd"],
           "dtn": ["condor_master", "condor_collector", "condor_negotiator", "condor_schedd",
                   "condor_startd", "xrootd:redir", "cmsd:redir", "xrootd:data", "cmsd:data",
                   "xrootd:xcache", "xrootd:direct"],
           "origin": ["xrootd:origin"]}

HOST_PROBE = r"""
echo "up=1"
ps -eo comm= | sort | uniq -c | awk '{{print "proc:" $2 "=" $1}}'
ps -eo args= | awk '/^\/usr\/bin\/(xrootd|cmsd) /{{for(i=1;i<=NF;i++) if($i=="-n") print "xrd:" substr($1,10) ":" $(i+1) "=1"}}'
if [ -e {md}/array_state ]; then
  echo "md_state=$(cat {md}/array_state)"
  echo "md_level=$(cat {md}/level)"
  echo "md_disks=$(cat {md}/raid_disks)"
  echo "md_degraded=$(cat {md}/degraded)"
  echo "md_members=$(ls {md}/../slaves | tr '\n' ' ')"
  echo "md_stripe_cache_size=$(cat {md}/stripe_cache_size)"
  echo "raid_mounted=$(mountpoint -q {raid} && echo 1 || echo 0)"
fi
""".format(md=c.MD_SYSFS, raid=c.RAID_MOUNT)

POOL_PROBE = Schedd.pool_probe_script()

XROOTD_PROBE = r"""
for ep in {endpoints}; do
  ( if timeout 10 xrdfs "$ep" query config version >/dev/null 2>&1; then
      echo "xrootd:$ep=1"; else echo "xrootd:$ep=0"; fi ) &
done
wait
"""

# The submit host answers its own probe, the pool's and the XRootD endpoints' in one round
# trip, the last two side by side: each is mostly waiting on other guests under TCG.
POOL_MARK, XROOTD_MARK = "#POOL#", "#XROOTD#"
SUBMIT_PROBE_TAIL = r"""
d=$(mktemp -d)
( {pool} ) > "$d/pool" 2>/dev/null &
( {xrootd} ) >> "$d/xrootd" 2>/dev/null &
wait
echo '{pool_mark}'; cat "$d/pool"; echo '{xrootd_mark}'; cat "$d/xrootd"; rm -rf "$d"
"""


def ccb_contacts(sinful):
    """CCB servers a daemon registered with, from the CCBID in its address."""
    m = re.search(r"CCBID=([^&>]*)", sinful)
    if not m:
        return []
    return [c.split("?")[0].split("#")[0] for c in unquote(m.group(1)).split()]


def probes(topo, skip=()):
    """{host: probe script} of one health check: every host's own probe, the submit host's
    with the pool's and the XRootD endpoints' added."""
    scripts = {h: HOST_PROBE for h in topo.hosts if h not in skip}
    submit = topo.role_host("submit")
    if submit.name in scripts:
        endpoints = " ".join(xrootd_endpoints(topo, skip).values())
        scripts[submit.name] = HOST_PROBE + SUBMIT_PROBE_TAIL.format(
            pool=POOL_PROBE, xrootd=XROOTD_PROBE.format(endpoints=endpoints), pool_mark=POOL_MARK,
            xrootd_mark=XROOTD_MARK)
    return scripts


def parse_kv(text):
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def expected_daemons(host, cm_count):
    want = []
    for role in host.roles:
        for d in DAEMONS.get(role, []):
            if role == "cm" and cm_count < 2 and d in ("condor_had", "condor_replication"):
                continue
            if d not in want:
                want.append(d)
    if host.has("cm") and cm_count < 2:
        want.append("condor_negotiator")
    return want


def _daemon_alive(kv, daemon):
    if daemon.startswith(("xrootd:", "cmsd:")):
        prog, name = daemon.split(":")
        return f"xrd:{prog}:{name}" in kv
    return f"proc:{daemon[:15]}" in kv


def xrootd_endpoints(topo, skip=()):
    eps = {}
    dtn, origin = topo.role_host("dtn"), topo.role_host("origin")
    if origin:
        eps["origin"] = f"{origin.name}:{c.XROOTD_ORIGIN_PORT}"
    if dtn:
        eps.update({"redirector": f"{dtn.name}:{c.XROOTD_REDIRECTOR_PORT}", "proxy": f"{dtn.name}:{c.XROOTD_CACHE_PORT}",
                    "direct": f"{dtn.name}:{c.XROOTD_DIRECT_PORT}"})
    return {label: ep for label, ep in eps.items() if ep.split(":")[0] not in skip}


def collect(topo, ssh, skip=()):
    """The health report; the hosts in `skip` (paused for a run) are listed as paused, not
    probed, and so are their XRootD endpoints."""
    results = ssh.run_many(probes(topo, skip), timeout=90)
    cm_count = len(topo.with_role("cm"))
    report = {"topology": topo.name, "hosts": {}, "problems": []}
    for name, host in topo.hosts.items():
        if name in skip:
            report["hosts"][name] = {"reachable": False, "paused": True, "roles": host.roles, "daemons": {},
                                     "negotiator": False}
            continue
        res = results[name]
        kv = parse_kv(res.stdout.split(POOL_MARK, 1)[0]) if res.ok else {}
        daemons = {d: _daemon_alive(kv, d) for d in expected_daemons(host, cm_count)}
        entry = {"reachable": res.ok, "roles": host.roles, "daemons": daemons,
                 "negotiator": "proc:condor_negotiat" in kv}
        if not res.ok:
            report["problems"].append(f"{name}: unreachable ({(res.stderr.strip() or 'no answer')[:80]})")
        for d, alive in daemons.items():
            if res.ok and not alive:
                report["problems"].append(f"{name}: {d} not running")
        if host.disks and res.ok:
            md = {k[3:]: v[0] for k, v in kv.items() if k.startswith("md_")}
            md["mounted"] = kv.get("raid_mounted", ["0"])[0] == "1"
            entry["md0"] = md
            want_level = f"raid{host.disks.raid_level}"
            members = md.get("members", "").split()
            if md.get("state") not in ("clean", "active", "active-idle"):
                report["problems"].append(f"{name}: md0 state {md.get('state', 'missing')}")
            elif md.get("level") != want_level or len(members) != host.disks.count or md.get("degraded") != "0":
                report["problems"].append(f"{name}: md0 is {md.get('level')} with {len(members)} members, "
                                          f"degraded {md.get('degraded')}; planned {want_level} x {host.disks.count}")
            if not md["mounted"]:
                report["problems"].append(f"{name}: {c.RAID_MOUNT} not mounted")
        report["hosts"][name] = entry
    submit = topo.role_host("submit")
    pool_text, _mark, xrootd_text = (results[submit.name].stdout.split(POOL_MARK, 1)[-1].partition(XROOTD_MARK)
                                     if submit.name in results else ("", "", ""))
    _pool(topo, pool_text, report)
    _xrootd(topo, xrootd_text, report, skip)
    report["healthy"] = not report["problems"]
    return report


def _pool(topo, text, report):
    """The pool's part of the report from the pool probe's output (`text`)."""
    submit = topo.role_host("submit")
    pool = {"had": {}, "slots": 0, "slots_planned": 0, "ccb": {}, "collectors": []}
    report["pool"] = pool
    if not report["hosts"][submit.name]["reachable"]:
        return
    kv = parse_kv(text)
    for line in kv.get("had", []):
        parts = line.split()
        if len(parts) >= 2:
            pool["had"][parts[0].split("@")[-1]] = parts[1].strip('"').lower() == "true"
    pool["collectors"] = sorted(set(kv.get("collector", [])))
    ccb_names = [h.name for h in (topo.with_role("ccb") or topo.with_role("cm"))]
    ccb_ips = {topo.hosts[n].site_ip: n for n in ccb_names}
    pool["ccb"] = {n: 0 for n in ccb_names}
    worker_names = {h.name for h in topo.with_role("worker")}
    for line in kv.get("slot", []):
        parts = line.split()
        if len(parts) >= 2 and parts[0].split(".")[0] in worker_names:
            pool["slots"] += 1
    startds = {}
    for line in kv.get("startd", []):
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].split(".")[0] in worker_names:
            startds[parts[1]] = parts[2]
    for address in startds.values():
        contacts = ccb_contacts(address)
        for ip, ccb in ccb_ips.items():
            if any(c.startswith(f"{ip}:") for c in contacts):
                pool["ccb"][ccb] += 1
    pool["startds"] = len(startds)
    workers = topo.with_role("worker")
    pool["slots_planned"] = sum(h.total_slots for h in workers)
    pool["startds_planned"] = topo.planned_startds
    cms = topo.with_role("cm")
    if len(cms) > 1:
        alive = {h.name for h in cms if report["hosts"][h.name]["reachable"]}
        active = [h for h, on in pool["had"].items() if on and h.split(".")[0] in alive]
        if len(active) != 1:
            report["problems"].append(f"HAD: {len(active)} active leaders (want 1): {pool['had'] or 'no HAD ads'}")
    running = [h.name for h in cms if report["hosts"][h.name].get("negotiator")]
    pool["negotiator_running_on"] = running
    if len(running) != 1:
        report["problems"].append(f"negotiator process running on {running or 'no CM'} (want exactly 1)")
    if pool["slots"] != pool["slots_planned"]:
        report["problems"].append(f"worker slots seen {pool['slots']} of {pool['slots_planned']} planned")
    for ccb, count in pool["ccb"].items():
        if count != pool["startds_planned"]:
            report["problems"].append(f"CCB {ccb}: {count} of {pool['startds_planned']} startds registered")


def _xrootd(topo, text, report, skip=()):
    """The XRootD endpoints' part of the report from the XRootD probe's output (`text`)."""
    eps = xrootd_endpoints(topo, skip)
    report["xrootd"] = {}
    client = topo.role_host("submit")
    if not eps or not report["hosts"][client.name]["reachable"]:
        return
    kv = parse_kv(text)
    for label, ep in eps.items():
        ok = kv.get(f"xrootd:{ep}", ["0"])[0] == "1"
        report["xrootd"][label] = ok
        if not ok:
            report["problems"].append(f"XRootD {label} ({ep}) not answering")


def format_report(report):
    rows = []
    for name, h in report["hosts"].items():
        alive = [d.replace("condor_", "") for d, ok in h["daemons"].items() if ok]
        dead = [d.replace("condor_", "") for d, ok in h["daemons"].items() if not ok]
        md = h.get("md0")
        md_text = (f"{md.get('level')} {md.get('state')} {len(md.get('members', '').split())} disks"
                   if md else "")
        rows.append([name, ",".join(h["roles"]), "paused" if h.get("paused") else "yes" if h["reachable"] else "NO",
                     " ".join(alive), " ".join(dead) or "-", md_text])
    out = [tables.render(["VM", "roles", "up", "daemons alive", "missing", "md0"], rows)]
    pool = report.get("pool", {})
    if pool:
        leader = [h for h, on in pool.get("had", {}).items() if on]
        out.append(f"HA: negotiator running on {', '.join(pool.get('negotiator_running_on') or ['none'])}; "
                   f"HAD leader {', '.join(leader) or 'none'}")
        ccb = ", ".join(f"{k} {v}/{pool.get('startds_planned', 0)}" for k, v in pool.get("ccb", {}).items())
        out.append(f"slots: {pool.get('slots', 0)} seen of {pool.get('slots_planned', 0)} planned; "
                   f"startds registered per CCB: {ccb}")
    if report.get("xrootd"):
        out.append("XRootD: " + ", ".join(f"{k} {'ok' if v else 'DOWN'}" for k, v in report["xrootd"].items()))
    out.append("healthy" if report.get("healthy") else "problems:\n  " + "\n  ".join(report["problems"]))
    return "\n".join(out)


def wait_healthy(topo, ssh, timeout=900, interval=10, started=None, echo=print, skip=()):
    """The health report once the site is healthy (the hosts in `skip` paused, not probed);
    every new set of problems is echoed while waiting. TestbedError with the last report
    after `timeout` s."""
    started = started or time.monotonic()
    last = {"summary": None, "report": None}

    def healthy():
        report = last["report"] = collect(topo, ssh, skip)
        if report["healthy"]:
            return report
        summary = "; ".join(report["problems"][:3]) + (" ..." if len(report["problems"]) > 3 else "")
        if summary != last["summary"]:
            echo(f"[{time.monotonic() - started:6.0f}s] waiting: {summary}")
            last["summary"] = summary
        return None

    return wait_for(f"site {topo.name} healthy", healthy, timeout, interval, error=TestbedError,
                    message=lambda: f"site {topo.name} not healthy after {timeout} s:\n"
                                    f"{format_report(last['report'])}").value


VERSIONS_SCRIPT = ("echo condor=$(condor_version | head -1 | awk '{print $2}'); "
                   "echo xrootd=$(xrootd -v 2>&1 | head -1); echo kernel=$(uname -r); "
                   "echo os=$(. /etc/os-release; echo $PRETTY_NAME); "
                   # a box built with `box build --patch`: its patches, NAME:SHA256 (the version
                   # string is the package's: the rebuilt daemon links the packaged library)
                   f"[ -r {c.BOX_PATCHES_FILE} ] && echo condor_patches=$(paste -sd' ' {c.BOX_PATCHES_FILE}); true")


def guest_versions(ssh, host):
    """{condor, xrootd, kernel, os} of one guest, as its own tools report them, and
    condor_patches on a patched box."""
    out = ssh.run(host, VERSIONS_SCRIPT).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
