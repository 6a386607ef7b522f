"""Counters sampled once a second on a guest, turned into rates over time.

A background shell loop on the guest appends `epoch value...` lines; stopping
it returns the lines, and `rates` turns consecutive samples into per-second
rates. Sources: the site interface's rx/tx bytes, md0's read/write sectors.
"""
import shlex

from testbed.network.wan import device_lookup

SOURCES = {
    "net": lambda host: (device_lookup(host.site_ip),
                         'cat /sys/class/net/$dev/statistics/rx_bytes /sys/class/net/$dev/statistics/tx_bytes'),
    # /sys/block/md0/stat: field 3 = sectors read, field 7 = sectors written (512 B each)
    "md": lambda host: ("", "awk '{print $3*512, $7*512}' /sys/block/md0/stat"),
}
COLUMNS = {"net": ("rx", "tx"), "md": ("read", "write")}


def _paths(name):
    return f"/run/tb-sampler-{name}.log", f"/run/tb-sampler-{name}.pid"


def start_command(host, source, name, interval=1.0):
    prelude, reader = SOURCES[source](host)
    log, pid = _paths(name)
    loop = f"{prelude} while :; do echo $(date +%s.%N) $({reader}); sleep {interval}; done"
    return (f"[ -f {pid} ] && kill $(cat {pid}) 2>/dev/null; rm -f {log}; "
            f"nohup bash -c {shlex.quote(loop)} > {log} 2>/dev/null < /dev/null & echo $! > {pid}")


def stop_command(name):
    log, pid = _paths(name)
    return f"[ -f {pid} ] && kill $(cat {pid}) 2>/dev/null; rm -f {pid}; cat {log} 2>/dev/null; rm -f {log}"


def parse(text):
    rows = []
    for line in text.splitlines():
        parts = line.split()
        try:
            rows.append([float(p) for p in parts])
        except ValueError:
            continue
    width = max((len(r) for r in rows), default=0)
    return [r for r in rows if len(r) == width]


def rates(samples, scale=1e-6):
    """[(t since first sample, rate of column 1, rate of column 2, ...)] in units/s x scale."""
    out = []
    for prev, cur in zip(samples, samples[1:]):
        dt = cur[0] - prev[0]
        if dt <= 0:
            continue
        out.append((cur[0] - samples[0][0],) + tuple((c - p) / dt * scale for p, c in zip(prev[1:], cur[1:])))
    return out


def in_window(series, started_at, first, last, slack=1.0):
    """The rows of a series (t relative to the first sample, taken at epoch `started_at`)
    that fall within [first, last] epoch seconds (1 s resolution, hence the slack); the
    whole series when none does or the times are unknown."""
    if started_at is None or first is None or last is None:
        return list(series)
    rows = [row for row in series if first - slack <= started_at + row[0] <= last + slack]
    return rows or list(series)


def active_mean(series, column=1, threshold=0.1):
    """Mean rate over the samples above `threshold` x peak: the sustained rate while busy."""
    values = [row[column] for row in series]
    if not values or max(values) <= 0:
        return 0.0
    busy = [v for v in values if v >= threshold * max(values)]
    return sum(busy) / len(busy)


class Sampler:
    def __init__(self, ssh, host, source, name=None):
        self.ssh, self.host, self.source = ssh, host, source
        self.name = name or f"{source}-{host.name}"
        self.started_at = None

    def start(self):
        self.ssh.run(self.host.name, start_command(self.host, self.source, self.name))
        return self

    def stop(self):
        """Per-second rates in MB/s: [(t, col1, col2)], t since the first sample, which was
        taken at epoch `self.started_at` (the sampled host's clock)."""
        out = self.ssh.run(self.host.name, stop_command(self.name), check=False).stdout
        samples = parse(out)
        self.started_at = samples[0][0] if samples else None
        return rates(samples)
