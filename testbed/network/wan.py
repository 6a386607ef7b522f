"""Apply, show, clear and measure the emulated WAN on a running site.

The tc command plans come from `netem.host_plans`; this module runs them on the
guests (on the interface that holds the site address), records what is in
force, and measures the round-trip time of every link with ping.
"""
import json
import re
import shlex
import statistics
import time

from testbed.network import netem
from testbed.model.clock import utc_iso
from testbed.model.errors import TestbedError

PING_COUNT = 20
RTT_RECHECK_WAITS_S = (30, 60)   # pauses before measuring a missed RTT again
DEV = "@DEV@"  # placeholder for the site interface, resolved on the guest


def device_lookup(ip):
    """Shell snippet: the interface holding `ip` (eth1 on Vagrant's layout)."""
    return (f"dev=$(ip -o -4 addr show | awk '$4 ~ /^{re.escape(ip)}\\// {{print $2; exit}}'); "
            f"[ -n \"$dev\" ] || {{ echo 'no interface has {ip}' >&2; exit 3; }}; ")


def host_script(host, commands):
    lines = [device_lookup(host.site_ip)]
    for argv in commands:
        text = " ".join(shlex.quote(a) for a in argv).replace(DEV, '"$dev"')
        if argv[:3] == ["tc", "qdisc", "del"]:
            text += " 2>/dev/null || true"
        lines.append(text)
    return "set -e\n" + "\n".join(lines) + "\n"


def apply(topo, ssh, links, skip=()):
    """Every host's side of `links` (the hosts in `skip`, paused for a run, keep theirs)."""
    plans = netem.host_plans(topo, links, device=DEV)
    results = ssh.run_many({name: host_script(topo.hosts[name], cmds) for name, cmds in plans.items()
                            if name not in skip}, timeout=60)
    bad = [f"{n}: {(r.stderr.strip() or 'no output').splitlines()[-1]}" for n, r in results.items() if not r.ok]
    if bad:
        raise TestbedError("wan: tc failed on " + "; ".join(bad))
    return plans


def effective_links(topo, links):
    """The topology's own links (its `wan:` section, always in force) with `links` on top:
    a link between the same two groups replaces the topology's, others are added."""
    merged = {frozenset((link.a, link.b)): link for link in topo.wan}
    for link in links:
        merged[frozenset((link.a, link.b))] = link
    return list(merged.values())


def set_links(topo, ssh, state, links, count=PING_COUNT, skip=()):
    """Put the links in place over the topology's own, measure each given link's RTT (each
    emulated topology link when none is given), record both; returns the measurements."""
    in_force_now = effective_links(topo, links)
    apply(topo, ssh, in_force_now, skip)
    probe = links or [link for link in in_force_now if link.rtt_ms]
    rows = measure(topo, ssh, probe, count)
    record(state, in_force_now, rows)
    return rows


def clear(topo, ssh, state, skip=()):
    """Back to the topology's own links (LAN where it declares none)."""
    links = effective_links(topo, [])
    apply(topo, ssh, links, skip)
    record(state, links)
    return links


def links_in_force(topo, state):
    """The links the site has now: the last recorded, else the topology's own."""
    recorded = in_force(state)["links"]
    return [netem.Link(**link) for link in recorded] if recorded else effective_links(topo, [])


def emulated_rtt(topo, links, a, b):
    """The RTT that `links` emulate between host groups (or hosts) a and b, 0 when none
    joins them: what a ping between them carries beyond the VMs' own latency."""
    side_a, side_b = ({h.name for h in topo.group(x)} for x in (a, b))
    for link in links:
        la, lb = ({h.name for h in topo.group(x)} for x in (link.a, link.b))
        if (side_a & la and side_b & lb) or (side_a & lb and side_b & la):
            return float(link.rtt_ms)
    return 0.0


def record(state, links, measured=None):
    state.wan_record.parent.mkdir(parents=True, exist_ok=True)
    state.wan_record.write_text(json.dumps({
        "links": [link.__dict__ for link in links], "measured": measured or [],
        "applied": utc_iso()}, indent=2))


def in_force(state):
    if not state.wan_record.exists():
        return {"links": [], "measured": []}
    return json.loads(state.wan_record.read_text())


def probe_pair(topo, link):
    """One host on each side of a link (the first of each group that differ)."""
    side_a, side_b = topo.group(link.a), topo.group(link.b)
    for a in side_a:
        for b in side_b:
            if a.name != b.name:
                return a, b
    raise TestbedError(f"wan: link {link.a} <-> {link.b} has no two distinct hosts")


def parse_ping(text):
    """Every `time=X ms` sample of ping's output."""
    return [float(x) for x in re.findall(r"time=([0-9.]+) ms", text)]


def measure(topo, ssh, links, count=PING_COUNT):
    """[{link, from, to, configured_ms, measured_ms (median), min, max}] per link."""
    rows = []
    for link in links:
        a, b = probe_pair(topo, link)
        out = ssh.run(a.name, f"ping -n -c {count} -i 0.2 -W 2 {b.site_ip}", check=False,
                      timeout=count + 30).stdout
        samples = parse_ping(out)
        if not samples:
            raise TestbedError(f"wan: no ping replies from {a.name} to {b.name} ({b.site_ip})")
        rows.append({"link": f"{link.a}<->{link.b}", "from": a.name, "to": b.name,
                     "configured_ms": link.rtt_ms, "measured_ms": round(statistics.median(samples), 3),
                     "min_ms": min(samples), "max_ms": max(samples), "samples": len(samples)})
    return rows


def baseline(topo, ssh, links, count=PING_COUNT):
    """The RTT of the same pairs with no emulation, to separate the VMs' own latency."""
    return {row["link"]: row["measured_ms"] for row in measure(topo, ssh, links, count)}


def within_target(configured, measured, base=0.0):
    """The WAN emulation's fidelity target: |measured - base - configured| <= 1 ms + 5%."""
    return abs(measured - base - configured) <= 1.0 + 0.05 * configured


def recheck(configured, measured, base, remeasure, waits=RTT_RECHECK_WAITS_S, sleep=None, say=print):
    """[measured RTT] of each attempt: the first, then one more after each pause of `waits`
    while the last missed the target. The emulation is not touched: under TCG a guest still
    busy from the previous point (E5's 200-job ramp leaves the submit host at load 6) delays
    netem's timers and ping's replies by tens of ms, and that passes."""
    attempts, sleep = [measured], sleep or time.sleep
    for wait in waits:
        if within_target(configured, attempts[-1], base):
            break
        say(f"  RTT {attempts[-1]} ms is not {configured:g} ms over the LAN's {base} ms: "
            f"measuring again in {wait} s (a busy guest delays netem's timers)")
        sleep(wait)
        attempts.append(remeasure())
    return attempts


def show(topo, ssh):
    """`tc qdisc show` of every host's site interface."""
    cmds = {name: device_lookup(h.site_ip) + ' tc qdisc show dev "$dev"' for name, h in topo.hosts.items()}
    return {name: r.stdout.strip() if r.ok else f"error: {r.stderr.strip()}"
            for name, r in ssh.run_many(cmds, timeout=60).items()}
