"""Network faults: cut a host off the site network for a bounded time, always undone.

The cut is a pair of tc `clsact` filters on the host's site interface that drop every
IPv4 packet to or from the site network except the testbed host's own bridge address
(so the suite keeps its SSH session and can undo the cut). It leaves the root qdisc,
and with it any emulated WAN, alone. Before the cut is made, a guest-side systemd timer
(`systemd-run --on-active=`) is armed to remove it: a lost SSH session or a crashed suite
cannot leave a host cut off for longer than the bound plus DEADMAN_MARGIN_S.
"""
import re
import time

from testbed.model.constants import DEADMAN_MARGIN_S, FAULT_UNIT_PREFIX
from testbed.model.errors import RemoteError
from testbed.network.wan import device_lookup
from testbed.remote.poll import repeat_for

CUT_MARK = "cut-at="


def unit_name(kind, host):
    return f"{FAULT_UNIT_PREFIX}-{kind}-{host}"


def disarm(unit):
    """Shell: stop and forget a dead-man unit of an earlier fault (no error if none)."""
    return (f"systemctl stop {unit}.timer {unit}.service >/dev/null 2>&1 || true; "
            f"systemctl reset-failed {unit}.timer {unit}.service >/dev/null 2>&1 || true")


def cut_script(host, topo, seconds, margin=DEADMAN_MARGIN_S):
    """Shell run on `host`: arm the dead-man timer (removes the cut after seconds + margin),
    then drop site traffic both ways except to and from the testbed host's bridge."""
    unit = unit_name("cut", host.name)
    gateway, net = topo.site_gateway, str(topo.site_net)
    deadline = int(seconds) + int(margin)
    return "\n".join([
        "set -e",
        device_lookup(host.site_ip),
        disarm(unit),
        'tc qdisc del dev "$dev" clsact 2>/dev/null || true',
        'tcbin=$(command -v tc)',
        # the undo is armed first: whatever happens next, the host is reachable again in time
        f'systemd-run --quiet --unit={unit} --on-active={deadline}s "$tcbin" qdisc del dev "$dev" clsact',
        'trap \'tc qdisc del dev "$dev" clsact 2>/dev/null\' ERR',
        'tc qdisc add dev "$dev" clsact',
        f'tc filter add dev "$dev" ingress protocol ip prio 1 u32 match ip src {gateway}/32 action ok',
        f'tc filter add dev "$dev" ingress protocol ip prio 2 u32 match ip src {net} action drop',
        f'tc filter add dev "$dev" egress protocol ip prio 1 u32 match ip dst {gateway}/32 action ok',
        f'tc filter add dev "$dev" egress protocol ip prio 2 u32 match ip dst {net} action drop',
        f'echo {CUT_MARK}$(date +%s.%N) deadman={deadline}',
    ]) + "\n"


def heal_script(host):
    """Shell: remove the cut and its dead-man timer; prints `cut=0` when nothing is left."""
    unit = unit_name("cut", host.name)
    return "\n".join([
        device_lookup(host.site_ip),
        disarm(unit),
        'tc qdisc del dev "$dev" clsact 2>/dev/null || true',
        'if tc qdisc show dev "$dev" | grep -q clsact; then echo cut=1; else echo cut=0; fi',
    ]) + "\n"


def state_script(host):
    """Shell: `cut=1` while the cut's filters are in place, `deadman=1` while its timer is armed."""
    unit = unit_name("cut", host.name)
    return "\n".join([
        device_lookup(host.site_ip),
        'if tc filter show dev "$dev" egress 2>/dev/null | grep -q "action order"; then echo cut=1; '
        'else echo cut=0; fi',
        f'if systemctl is-active -q {unit}.timer; then echo deadman=1; else echo deadman=0; fi',
    ]) + "\n"


def parse_flags(text):
    return {k: v for k, v in re.findall(r"^(\w+)=(\S+)", text, re.MULTILINE)}


def ping_loss(text):
    """Packet loss in percent from ping's summary line (100.0 when there is none)."""
    m = re.search(r"([0-9.]+)% packet loss", text)
    return float(m.group(1)) if m else 100.0


class NetworkFaults:
    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh

    def cut(self, host, seconds):
        """Cut `host` off the site network; the guest removes the cut by itself after
        seconds + DEADMAN_MARGIN_S. Returns the guest's epoch of the cut. Undo: heal."""
        h = self.topo.hosts[host]
        res = self.ssh.run(host, cut_script(h, self.topo, seconds), check=False, timeout=60)
        if not res.ok or CUT_MARK not in res.stdout:
            self.heal(host)
            detail = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1]
            raise RemoteError(f"{host}: could not cut it off the site network: {detail}")
        return float(res.stdout.split(CUT_MARK, 1)[1].split()[0])

    def heal(self, host):
        """Remove the cut and its timer; RemoteError if the filters are still there."""
        h = self.topo.hosts[host]
        res = self.ssh.run(host, heal_script(h), check=False, timeout=60)
        if parse_flags(res.stdout).get("cut") != "0":
            raise RemoteError(f"{host}: the site-network cut is still in place "
                              f"({(res.stderr.strip() or res.stdout.strip())[:160]}); its dead-man timer "
                              f"removes it within {DEADMAN_MARGIN_S} s of the bound")
        return True

    def state(self, host):
        h = self.topo.hosts[host]
        return parse_flags(self.ssh.run(host, state_script(h), check=False, timeout=60).stdout)

    def reachable_from(self, source, target, count=3):
        """Ping loss (%) from one guest to another over the site network."""
        ip = self.topo.hosts[target].site_ip
        out = self.ssh.run(source, f"ping -n -c {count} -i 0.5 -W 1 {ip}", check=False,
                           timeout=count + 30).stdout
        return ping_loss(out)

    def cut_for(self, host, seconds, probe_from, during=None, poll=10):
        """The whole bounded fault: cut, check the cut holds (no ping from `probe_from`),
        call `during()` every `poll` s, heal when `seconds` are up (or as soon as `during()`
        returns False) - also on any error.
        Returns {seconds (cut to heal), loss_during (%), loss_after (%)}."""
        started = time.monotonic()
        self.cut(host, seconds)
        try:
            loss_during = self.reachable_from(probe_from, host)
            next_call = [0.0]

            def tick(t):  # `during` every `poll` s; ticks of 1 s keep the cut within 1 s of `seconds`
                if during and t >= next_call[0]:
                    next_call[0] = t + poll
                    return during()
            repeat_for(seconds - (time.monotonic() - started), tick, interval=min(1.0, poll))
        finally:
            self.heal(host)
        elapsed = time.monotonic() - started
        return {"seconds": elapsed, "loss_during": loss_during,
                "loss_after": self.reachable_from(probe_from, host)}
