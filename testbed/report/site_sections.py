"""The generated sections about the site itself: what each shipped topology needs from the
host, what a kept bring-up took, every knob of each shipped profile, what the guests' CPU
is, and the conditions of each kept reference run beside the papers' hardware (the
fidelity table), and the package's own layers."""
import ast
from pathlib import Path

from testbed import LAYERS, PROJECT_ROOT
from testbed.machines import accel
from testbed.model import profiles, topology
from testbed.model.schema import load_yaml
from testbed.report.markdown import code, table
from testbed.results import bringup_record, reference, release_record


def _gb(mb):
    return f"{mb / 1024:.1f} GB"


def topologies_section():
    """Per shipped topology: VMs, vCPUs, guest RAM and what `up` requires free."""
    rows = []
    for path in sorted(topology.TOPOLOGY_DIR.glob("*.yaml")):
        topo = topology.load(path.stem)
        need = topology.needed_memory_mb(topo)
        dtn = topo.role_host("dtn")
        raid = (f"{dtn.disks.count} x {dtn.disks.size_gb} GB" if dtn is not None and dtn.disks else "-")
        rows.append([f"`{topo.name}`", len(topo.hosts), sum(h.cpus for h in topo.hosts.values()),
                     f"{topo.total_memory_mb} MB ({_gb(topo.total_memory_mb)})", f"{need} MB ({_gb(need)})",
                     topo.planned_slots, raid, " ".join(topo.description.split())])
    return "\n".join([
        table(["topology", "VMs", "vCPUs", "guest RAM", "free RAM `up` requires", "execute slots",
               "RAID members", "what it is"], rows), "",
        f"`up` refuses a plan when the host's free RAM is below the guests' RAM plus "
        f"{topology.GUEST_OVERHEAD_MB} MB of QEMU's own per VM (`testbed -t NAME topology show` "
        f"prints the plan and the check)."])


def guest_cpu_section():
    """The CPU the guests get under each accelerator (testbed/machines/accel.py)."""
    return table(["accelerator", "guest CPU", "CPU features added", "TCG translation cache"], [
        ["KVM", "host-passthrough (the host's own CPU)", "-", "-"],
        ["TCG", f"`{accel.TCG_CPU_MODEL}`", ", ".join(f"`{f}`" for f in accel.TCG_CPU_FEATURES),
         f"{accel.TCG_TB_CACHE_MB} MiB (QEMU's default: 1 GiB)"]])


def _leading_comment(path):
    """The comment block a profile file starts with: why it sets what it sets."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return " ".join(" ".join(lines).split())


def _own_values(name):
    """{(role, section, key)} a profile file sets itself (not through `extends:`)."""
    data = load_yaml(profiles.profile_path(name))
    return {(role, section, key) for role, sections in (data.get("roles") or {}).items()
            for section, values in (sections or {}).items() for key in (values or {})}


def profiles_section():
    """Every shipped profile: what it is for, where it comes from, and every value it sets
    per role, with the profile in its `extends:` chain that sets it."""
    names = sorted(p.stem for p in profiles.PROFILE_DIR.glob("*.yaml"))
    names.sort(key=lambda n: n != "default")
    parts = []
    for name in names:
        prof = profiles.load(name)
        own = {n: _own_values(n) for n in prof.chain}
        rows = [[role, section, f"`{key}`", f"`{value}`",
                 next((n for n in prof.chain if (role, section, key) in own[n]), "?")]
                for role, section, key, value in profiles.flatten(prof)]
        parts += [f"### `{name}`", "", prof.description, ""]
        facts = [f"File: `profiles/{name}.yaml`."]
        if len(prof.chain) > 1:
            facts.append(f"Extends: {' <- '.join(f'`{n}`' for n in prof.chain[1:])}.")
        if prof.reference:
            facts.append(f"Source: {prof.reference}.")
        facts += [f"**Declares `{what}`** ({profiles.DECLARATIONS[what]}): {why}."
                  for what, why in sorted(prof.declares.items())]
        parts += [" ".join(facts), ""]
        why = _leading_comment(prof.source)
        if why:
            parts += [f"> {why}", ""]
        parts += [table(["role", "section", "key", "value", "set by"], rows), ""]
        for link in prof.wan:
            parts += [f"WAN: {link['between'][0]} <-> {link['between'][1]}, "
                      + ", ".join(f"{k} {v}" for k, v in link.items() if k != "between"), ""]
    return "\n".join(parts)


def topology_show_section(name="small"):
    """What `testbed -t NAME topology show --no-ram-check` prints (no VM needed)."""
    topo = topology.load(name)
    return code("\n".join(topology.show_lines(topo)))


PAPER_HARDWARE = {  # what each paper measured on (its own words in results/paper/ and the seeds)
    "e1": "submit host with 40 cores, 128 GB, 10 Gb/s NIC, SSD + RAID6; 4000 jobs",
    "e2": "a DTN with 40 slots, 12 disks in RAID6 with XFS, 2 x 10 Gb/s",
    "e3": "real ATLAS sites in the US and Germany over the real WAN, ROOT's TTreeCache",
    "e4": "Cori's KNL and Haswell nodes (60-100 tasks a node), STAR's MySQL calibration DB",
    "e5": "20k real cores running 150k startds, a schedd with 128 GB and an SSD spool",
}


def fidelity_section(root=None):
    """One row per kept reference: the conditions it ran under beside the paper's hardware."""
    refs = reference.listing(root)
    rows = []
    for ref in refs:
        m = ref.manifest()
        host, versions, disks = m.get("host") or {}, m.get("versions") or {}, m.get("disks") or {}
        hosts = ((m.get("topology") or {}).get("hosts") or {})
        limits = disks.get("limits") or {}
        raid = (f"{disks.get('count')} members, {limits.get('mb_per_s') or 'no'} MB/s + "
                f"{limits.get('iops') or 'no'} IOPS each, cache {disks.get('cache') or '?'}") if disks else "-"
        rows.append([f"`{ref.experiment}/{ref.key}`", str(m.get("accel", "?")).upper(),
                     f"{host.get('cores', '?')} cores, {host.get('ram_mb', '?')} MB", len(hosts) or "?",
                     versions.get("condor", "?"), versions.get("xrootd", "?"), versions.get("qemu") or host.get("qemu", "?"),
                     raid, PAPER_HARDWARE.get(ref.experiment, "-")])
    kept = {r.experiment for r in refs}
    missing = [name for name in PAPER_HARDWARE if name not in kept]
    lines = []
    if rows:
        lines += [table(["reference", "CPU", "host", "VMs", "HTCondor", "XRootD", "QEMU", "RAID", "the paper's hardware"],
                        rows), ""]
    if missing:
        lines.append("No reference run kept yet for " + ", ".join(f"`{n}`" for n in missing)
                     + ": their conditions appear here once one is kept (`./tb reference save RUN`, then "
                       "`./tb report docs`).")
    return "\n".join(lines)


def _s(value):
    return "-" if value is None else f"{value:.0f} s"


def bringup_costs_section(root=None):
    """Per kept bring-up (results/benchmarks/bringup/): the host's set-up, the box, the VMs
    booted, provisioned and healthy, and the bring-up's wall time over its CPU floor."""
    rows = []
    for rec in bringup_record.load_all(root):
        f, host = bringup_record.figures(rec), rec.get("host") or {}
        built = {True: " (built)", False: " (cached)"}.get(f["box_built"], "")   # older records do not say
        box = "-" if f["box"] is None else f"{f['box']:.0f} s{built}"
        floor = ("-" if f.get("over_floor") is None else
                 f"{f['cpu_seconds']:.0f} CPU s / {f['cores']} cores = {f['floor_seconds']:.0f} s; "
                 f"{f['over_floor']}x")
        rows.append([f"`{rec.get('topology')}`", rec.get("vm_count", "?"), str(bringup_record.when(rec) or "?")[:10],
                     _s(f["setup"]), box, _s(f["booted"]), _s(f["provisioned"]), _s(f["healthy"]), floor,
                     f"{str(rec.get('accel', '?')).upper()}, {host.get('cores', '?')} cores"])
    if not rows:
        return "No bring-up is kept yet (`benchmarks/bringup.py --keep` keeps the site's last one)."
    return "\n".join([
        table(["topology", "VMs", "day", "host set-up", "box", "VMs booted", "provisioned", "healthy",
               "CPU floor after the box; wall time over it", "host"], rows), "",
        "Each time is seconds from the start of `up` (the host set-up: before it, from `./tb`'s start; "
        "\"-\" where the record has none). The box is built once per recipe and cached after. The floor "
        "is the CPU seconds the guests and the host's tools spent from the box to a healthy site over "
        "the host's cores: 1.0x means every core was busy the whole time. Kept by "
        "`benchmarks/bringup.py --keep` in `results/benchmarks/bringup/`."])


def _value(value):
    return "(none)" if value is None else f"`{value}`" if value != "" else "(empty)"


def release_knobs_section(root=None):
    """The kept releases side by side: each HTCondor knob the testbed sets whose built-in
    default differs between them, what the site had in force, and what XRootD logged
    against the rendered configuration."""
    records = release_record.load_all(root)
    if not records:
        return "No release is kept yet (`testbed box knobs --keep` on a running site keeps its release's)."
    names = [release_record.release_name(r.get("versions")) for r in records]
    kept = ", ".join(f"{n} (box `{r.get('box', '?')}`)" for n, r in zip(names, records))
    out = [f"Kept: {kept}; {len(records[0].get('defaults', {}))} HTCondor knobs the testbed sets.", ""]
    diffs = release_record.differences(records)
    if len(records) < 2:
        out.append("One release is kept: nothing to compare yet.")
    elif not diffs:
        out.append("Every knob the testbed sets has the same built-in default in each release.")
    else:
        rows = []
        for knob, defaults, where, forced in diffs:
            in_force = "; ".join(f"{n.split(' / ')[0]}: " + ", ".join(f"{roles} {_value(v)}" for roles, v in f.items())
                                 for n, f in zip(names, forced))
            rows.append([f"`{knob}`"] + [_value(d) for d in defaults] + [in_force, ", ".join(where)])
        out.append(table(["knob"] + [f"default, {n}" for n in names] + ["in force on the site", "set by"], rows))
        out += ["", f"{len(diffs)} of {len(records[0].get('defaults', {}))} knobs differ. A default is the "
                "release's own (condor_config_val with no configuration file, raw); \"(none)\" is a knob "
                "without one. The testbed's value in force is the one that counts for its runs."]
    out += ["", table(["release", "XRootD's lines on the rendered configuration (count, line)"],
                      [[n, "<br>".join(line for lines in r.get("xrootd_lines", {}).values() for line in lines)
                        or "none"] for n, r in zip(names, records)])]
    return "\n".join(out)


def package_layers_section(root=None):
    """The package's layers, lowest first (testbed.LAYERS), each with what its `__init__.py`
    says it holds and its modules (an experiment's package: its name and modules)."""
    root = Path(root or PROJECT_ROOT / "testbed")
    rows = []
    for layer in LAYERS:
        folder = root / layer
        what = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        names = [f"`{p.stem}`" for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"]
        names += [f"`{pkg.name}/` ({', '.join(p.stem for p in sorted(pkg.glob('*.py')) if p.name != '__init__.py')})"
                  for pkg in sorted(folder.iterdir()) if (pkg / "__init__.py").exists()]
        rows.append([str(LAYERS.index(layer) + 1), f"`testbed/{layer}/`", " ".join(what.split()), ", ".join(names)])
    return table(["layer", "folder", "what it holds", "modules"], rows)
