"""The capacity planner (`testbed plan --for e5:full`): how many hosts of what size one
experiment needs at one scale, and the topology skeleton to write for them.

The arithmetic starts from the experiment's parameters at that scale (its registry entry),
its own rule (the entry's `capacity`: the host groups its parameters need, built from the
default site and the helpers here), and what a running job, a startd and each role cost
(model/constants.py: measured on this testbed where it was, taken from the papers or
marked as an estimate where it was not).
Every host group carries the lines that say where its size comes from. Hosts that scale
(the sleeper workers, E4's whole nodes) are packed into machines no bigger than
`host_mb` and `host_cpus`; a group that cannot be split says so. The skeleton is a
valid topology (provision/templates/planner/topology.yaml.j2) of VMs; any of its hosts
becomes a machine the user already has by adding `existing:` (docs/existing-hosts.md).
"""
import math
from dataclasses import dataclass, field

import yaml

from testbed.harness import registry
from testbed.model import constants as c
from testbed.model.errors import ConfigError

DEFAULT_HOST_MB = 32768      # a lab server or a large cloud VM
DEFAULT_HOST_CPUS = 16
MAX_STARTDS_PER_HOST = 64    # the topology schema's limit (hosts.NAME.startds)
MAX_HOST_MB = 65536          # ... and its limit on memory_mb
MEMORY_STEP_MB = 256
TEMPLATE = "planner/topology.yaml.j2"


@dataclass
class Group:
    """`count` hosts of one kind: their roles, size and why."""
    name: str                # the host's name, or the prefix of worker1..N
    roles: tuple
    count: int = 1
    memory_mb: int = 512
    cpus: int = 1
    disk_gb: int = c.HOST_DISK_GB
    why: list = field(default_factory=list)
    fields: dict = field(default_factory=dict)   # startds, slots_per_startd, slots, files, file_mb, disks

    def names(self):
        return [self.name] if self.count == 1 and self.name != "worker" else \
            [f"{self.name}{i}" for i in range(1, self.count + 1)]


@dataclass
class Plan:
    experiment: str
    scale: str
    params: dict
    groups: list
    notes: list
    host_mb: int
    host_cpus: int

    @property
    def hosts(self):
        return sum(g.count for g in self.groups)

    @property
    def memory_mb(self):
        return sum(g.count * g.memory_mb for g in self.groups)

    @property
    def cpus(self):
        return sum(g.count * g.cpus for g in self.groups)

    @property
    def disk_gb(self):
        return sum(g.count * g.disk_gb for g in self.groups)


def round_mb(mb):
    """Memory rounded up to a whole 256 MB."""
    return int(math.ceil(mb / MEMORY_STEP_MB) * MEMORY_STEP_MB)


def parse_spec(text):
    """`e5:full` -> ('e5', 'full'); ConfigError naming the option otherwise."""
    name, sep, scale = str(text).partition(":")
    if not sep or scale not in registry.SCALES:
        raise ConfigError("testbed plan", "--for", f"{text!r}: give EXPERIMENT:SCALE, e.g. e5:full "
                                                   f"(scales: {', '.join(registry.SCALES)})")
    known = registry.experiments()
    if name not in known:
        raise ConfigError("testbed plan", "--for", f"unknown experiment {name!r} (known: {', '.join(known)})")
    return name, scale


# --- the site every experiment starts from: topologies/default.yaml's roles ------------------
def base_site():
    b = c.ROLE_BASE_MB
    return {
        "submit": Group("submit", ("submit",), memory_mb=b["submit"], why=[f"{b['submit']} MB: the default site's"]),
        "cm": Group("cm", ("cm",), count=2, memory_mb=b["cm"], why=["two central managers in HA (HAD)"]),
        "ccb": Group("ccb", ("ccb",), count=2, memory_mb=b["ccb"],
                     why=["two CCB servers, every startd registered with both (seed 004)"]),
        "worker": Group("worker", ("worker",), count=2, memory_mb=b["worker"],
                        fields={"startds": 2, "slots_per_startd": c.PLAN_SLOTS_PER_STARTD},
                        why=["the default site's two sleeper workers"]),
        "dtn": Group("dtn", ("dtn",), memory_mb=b["dtn"], fields={"slots": 8, "disks": raid_disks(2)},
                     why=["md's stripe cache at 32768 entries takes 768 MB (6 members)"]),
        "origin": Group("origin", ("origin",), memory_mb=b["origin"], fields={"files": 100, "file_mb": 8},
                        why=["100 files as in seed 001"]),
    }


def raid_disks(size_gb, count=6):
    """The DTN's `disks:` field: a RAID6 of `count` members of `size_gb` each."""
    return {"count": count, "size_gb": int(size_gb), "raid_level": 6, "chunk_kb": 512,
            "mb_per_s": c.DISK_MB_PER_S, "iops": c.DISK_IOPS}


def raid_member_gb(data_gb, count=6, minimum=2):
    """Each RAID6 member's size for `data_gb` of data (count - 2 data members)."""
    return max(minimum, int(math.ceil(data_gb / (count - 2))))


def sleeper_workers(startds, host_mb, host_cpus, per_startd_mb=None, why=()):
    """`startds` sleeper startds (PLAN_SLOTS_PER_STARTD slots each) packed into as few workers
    as fit `host_mb` and `host_cpus`: each startd costs its own memory, a starter per slot
    when every slot runs a job, and STARTD_CORES."""
    slots = c.PLAN_SLOTS_PER_STARTD
    per_mb = per_startd_mb if per_startd_mb is not None else c.STARTD_MB + slots * c.STARTER_MB
    base = c.ROLE_BASE_MB["worker"]
    per_host = max(1, min(MAX_STARTDS_PER_HOST, int((host_mb - base) // per_mb),
                          int(host_cpus // c.STARTD_CORES)))
    hosts = max(1, math.ceil(startds / per_host))
    each = math.ceil(startds / hosts)
    return Group("worker", ("worker",), count=hosts, memory_mb=round_mb(base + each * per_mb),
                 cpus=max(1, math.ceil(each * c.STARTD_CORES)),
                 fields={"startds": each, "slots_per_startd": slots},
                 why=[*why, f"{startds} startds x {slots} slots, {each} per worker (at most {per_host} fit "
                            f"{host_mb} MB / {host_cpus} cores)",
                      f"{base} MB + {each} x ({c.STARTD_MB} MB startd + {slots} x {c.STARTER_MB:g} MB starters); "
                      f"{c.STARTD_CORES:g} core per startd (measured under TCG: an upper bound)"])


def plan(spec, host_mb=DEFAULT_HOST_MB, host_cpus=DEFAULT_HOST_CPUS, sets=None):
    """The Plan of `spec` (EXPERIMENT:SCALE) with `--set` overrides, for machines of at most
    `host_mb` MB and `host_cpus` cores."""
    name, scale = parse_spec(spec)
    if host_mb < 2048 or host_cpus < 1:
        raise ConfigError("testbed plan", "--host-memory-mb/--host-cpus", "a host needs at least 2048 MB and one core")
    exp = registry.get(name)
    if exp.capacity is None:
        raise ConfigError("testbed plan", "--for", f"no capacity rule for {name} (its registry entry's capacity)")
    params = exp.parameters(scale, sets or {})
    site, notes = exp.capacity(params, host_mb, host_cpus)
    groups = list(site.values())
    for g in groups:
        if g.memory_mb > host_mb or g.cpus > host_cpus:
            notes.append(f"{g.name}: {g.memory_mb} MB / {g.cpus} cores is more than one {host_mb} MB / "
                         f"{host_cpus}-core host and cannot be split")
        if g.memory_mb > MAX_HOST_MB:
            notes.append(f"{g.name}: {g.memory_mb} MB is above a topology's {MAX_HOST_MB} MB per host")
    return Plan(name, scale, params, groups, notes, host_mb, host_cpus)


def table_rows(p):
    return [[g.name if g.count == 1 else f"{g.name} x{g.count}", ", ".join(g.roles), g.count, g.memory_mb,
             g.cpus, g.disk_gb, "; ".join(g.why)] for g in p.groups]


def skeleton(p):
    """The topology to write for the plan (YAML text that `topology.parse` accepts)."""
    from testbed.machines.render import render_run_file
    hosts = []
    for g in p.groups:
        spec = {"roles": list(g.roles), "memory_mb": min(g.memory_mb, MAX_HOST_MB), "cpus": min(g.cpus, 64)}
        spec.update(g.fields)
        flow = yaml.safe_dump(spec, default_flow_style=True, sort_keys=False, width=1000).strip()
        hosts += [{"name": n, "spec": flow} for n in g.names()]
    name = f"{p.experiment}{p.scale}"[:10]
    site_net = "10.170.0.0/24" if len(hosts) <= 200 else "10.170.0.0/20"
    return render_run_file(TEMPLATE, topology=name, spec=f"{p.experiment}:{p.scale}", hosts=hosts, site_net=site_net,
                           total=p.hosts, host_mb=p.host_mb, host_cpus=p.host_cpus,
                           origin=any("origin" in g.roles for g in p.groups))
