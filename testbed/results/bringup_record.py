"""Kept bring-up records: a site's `testbed up` record (machines/lifecycle.py's bringup.json:
the host's set-up, the box, each VM's boot and provisioning, the site healthy, the CPU
each guest cost) with the host it ran on, kept under results/benchmarks/bringup/ so the
first-run page's times come from runs, not from prose."""
import json
from pathlib import Path

from testbed.machines import hostload
from testbed.results.runs import RESULTS_ROOT, host_facts, write_json_atomic

KEPT_ROOT = RESULTS_ROOT / "benchmarks" / "bringup"


def when(record):
    """When the bring-up began; for a record made before bring-ups noted it, when the record
    was written (`written`, its file's time); None if neither is known."""
    return record.get("began") or record.get("written")


def keep(record, topo, root=None, accel=None, host=None):
    """Write `record` (a bring-up of `topo`) with its topology's size and the host's facts to
    `<root>/<topology>-<when>.json`; returns the path."""
    root = Path(root or KEPT_ROOT)
    stamp = str(when(record) or "unknown").replace(":", "").replace("-", "")
    path = root / f"{topo.name}-{stamp}.json"
    root.mkdir(parents=True, exist_ok=True)
    if accel is None:
        from testbed.machines import accel as accelerators
        accel = accelerators.detect()
    write_json_atomic(path, {**record, "vm_count": len(topo.vm_hosts), "guest_ram_mb": topo.total_memory_mb,
                             "accel": accel, "host": host or host_facts()})
    return path


def load_all(root=None):
    """The kept records, oldest first ([] when none)."""
    root = Path(root or KEPT_ROOT)
    return sorted((json.loads(p.read_text()) for p in root.glob("*.json")), key=lambda r: when(r) or "")


def figures(record):
    """A kept record's times: host set-up, the box (and whether it was built), every VM booted,
    provisioned, healthy (each since `up` began), and the CPU floor of the bring-up after the box."""
    ph, cpu = record.get("phases", {}), record.get("cpu") or {}
    box = ph.get("box") or 0.0
    out = {"setup": record.get("setup_seconds"), "box": ph.get("box"), "box_built": record.get("box_built"),
           "booted": ph.get("boot"), "provisioned": ph.get("provision"), "healthy": ph.get("healthy")}
    if cpu.get("guests") and ph.get("healthy"):
        out.update(hostload.floor(cpu, ph["healthy"] - box, cpu.get("cores")))
    return out
