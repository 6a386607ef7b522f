"""What each VM costs the host: its qemu process's resident memory and CPU share, the CPU
seconds a bring-up spent (the floor they put under its wall time on this host's cores), and
how long a VM's virtual CPUs waited for a host core."""
import os
import resource
import time
from pathlib import Path


def qemu_processes(topo, proc=Path("/proc")):
    """{host: pid} of the site's qemu processes (found by their `guest=tb-TOPO-HOST,` argument)."""
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not args or not args[0].endswith(b"qemu-system-x86_64"):
            continue
        text = b" ".join(args).decode(errors="replace")
        for host in topo.hosts:
            if f"guest=tb-{topo.name}-{host}," in text:
                found[host] = int(entry.name)
    return found


def _cpu_ticks(pid, proc):
    fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _rss_mb(pid, proc):
    for line in (proc / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


def usage(topo, window=5.0, proc=Path("/proc"), sleep=time.sleep):
    """{host: {"rss_mb", "cpu_pct" (of one host core)}} measured over `window` seconds,
    and the site's total as a share of all host cores under "total"."""
    pids = qemu_processes(topo, proc)
    hz = os.sysconf("SC_CLK_TCK")
    before = {h: _cpu_ticks(p, proc) for h, p in pids.items()}
    sleep(window)
    out = {}
    for host, pid in pids.items():
        try:
            ticks = _cpu_ticks(pid, proc) - before[host]
            out[host] = {"rss_mb": _rss_mb(pid, proc), "cpu_pct": round(100.0 * ticks / hz / window, 1)}
        except OSError:
            continue
    cores = os.cpu_count() or 1
    out["total"] = {"rss_mb": sum(v["rss_mb"] for v in out.values()),
                    "cpu_pct": round(sum(v["cpu_pct"] for v in out.values()) / cores, 1)}
    return out


def cpu_seconds(topo, proc=Path("/proc")):
    """{host: CPU seconds its qemu process has used since it started} of the site's running VMs."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for host, pid in qemu_processes(topo, proc).items():
        try:
            out[host] = round(_cpu_ticks(pid, proc) / hz, 1)
        except OSError:
            continue
    return out


def vcpu_schedstat(topo, host, proc=Path("/proc")):
    """{thread id: (seconds run, seconds waited runnable for a host core)} of `host`'s
    virtual CPU threads (qemu names them `CPU n/TCG` or `CPU n/KVM`), from each thread's
    schedstat; {} when `host` is not a qemu process of this machine. A guest does not see
    this wait: under TCG its clock runs on while its vCPU thread is off the host's cores."""
    pid = qemu_processes(topo, proc).get(host)
    out = {}
    if pid is None:
        return out
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            if not (task / "comm").read_text().startswith("CPU "):
                continue
            ran, waited = (task / "schedstat").read_text().split()[:2]
        except (OSError, ValueError):
            continue
        out[task.name] = (int(ran) / 1e9, int(waited) / 1e9)
    return out


def vcpu_wait_share(before, after, seconds):
    """The largest share of `seconds` that any one vCPU thread waited for a host core
    between two `vcpu_schedstat` readings; None without a thread read both times."""
    waits = [after[t][1] - before[t][1] for t in after if t in before]
    return max(waits) / seconds if waits and seconds > 0 else None


def own_cpu_seconds():
    """CPU seconds of this process and its finished children (Vagrant, ssh, virsh): the
    host-side tools of a bring-up."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def floor(cpu, seconds, cores=None):
    """What a bring-up's CPU record (`cpu`: {"guests": {host: s}, "tools": s}) says about its
    wall time (`seconds`): the CPU seconds, the floor they imply on `cores` host cores (all of
    them busy the whole time) and the wall time over that floor (1.0: CPU-bound throughout)."""
    cores = cores or os.cpu_count() or 1
    used = sum(cpu.get("guests", {}).values()) + cpu.get("tools", 0.0)
    least = used / cores
    return {"cpu_seconds": round(used, 1), "cores": cores, "floor_seconds": round(least, 1),
            "over_floor": round(seconds / least, 2) if least else None}
