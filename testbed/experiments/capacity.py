"""The capacity planner (`testbed plan --for e5:full`): how many hosts of what size one
experiment needs at one scale, and the topology skeleton to write for them.

The arithmetic starts from the experiment's parameters at that scale (its registry entry)
and what a running job, a startd and each role cost (model/constants.py: measured on this
testbed where it was, taken from the papers or marked as an estimate where it was not).
Every host group carries the lines that say where its size comes from. Hosts that scale
(the sleeper workers, E4's whole nodes) are packed into machines no bigger than
`host_mb` and `host_cpus`; a group that cannot be split says so. The skeleton is a
valid topology (provision/templates/planner/topology.yaml.j2) of VMs; any of its hosts
becomes a machine the user already has by adding `existing:` (docs/existing-hosts.md).
"""
import math
from dataclasses import dataclass, field

import yaml

from testbed.experiments import registry
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
        "dtn": Group("dtn", ("dtn",), memory_mb=b["dtn"], fields={"slots": 8, "disks": _raid(2)},
                     why=["md's stripe cache at 32768 entries takes 768 MB (6 members)"]),
        "origin": Group("origin", ("origin",), memory_mb=b["origin"], fields={"files": 100, "file_mb": 8},
                        why=["100 files as in seed 001"]),
    }


def _raid(size_gb, count=6):
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


# --- each experiment ---------------------------------------------------------------------------
def _smoke(p, host_mb, host_cpus):
    return base_site(), ["the default site: one of each role, as topologies/default.yaml"]


def _faults(p, host_mb, host_cpus):
    site = base_site()
    return site, [f"{p['jobs']} sleep jobs through each fault and RAID6 losing members: the default site holds them"]


def _e1(p, host_mb, host_cpus):
    from testbed.experiments.e1_jobs import size_for_rate
    from testbed.experiments.e1_transfer import SHADOWS_PER_TCG_CPU
    site = base_site()
    jobs = p["saturation_jobs"] or c.E1_PAPER_JOBS
    size = size_for_rate(p["saturation_load"] * c.E1_LINK_MB_S, jobs, p["saturation_compute_s"], p["max_output_mb"])
    batch_gb = math.ceil(jobs * size / 1000)
    s = site["submit"]
    s.memory_mb = round_mb(c.ROLE_BASE_MB["submit"] + jobs * c.SHADOW_MB)
    s.cpus = max(1, math.ceil(jobs / c.E1_SHADOWS_PER_CORE))
    s.disk_gb = c.HOST_DISK_GB + batch_gb
    s.why = [f"{c.ROLE_BASE_MB['submit']} MB + {jobs} shadows x {c.SHADOW_MB:g} MB (measured)",
             f"{jobs} encrypting shadows / {c.E1_SHADOWS_PER_CORE} per core (seed 000's 40-core host)",
             f"one batch's output on disk: {jobs} x {size:g} MB = {batch_gb} GB"]
    site["worker"] = sleeper_workers(math.ceil(jobs / c.PLAN_SLOTS_PER_STARTD), host_mb, host_cpus,
                                     why=[f"{jobs} slots for the saturation test"])
    notes = [f"saturation: {jobs} jobs ({'every slot: seed 000 ran 4000' if not p['saturation_jobs'] else 'as set'}), "
             f"output {size:g} MB each for {p['saturation_load']:g} x a {c.E1_LINK_MB_S} MB/s link",
             f"under TCG an emulated CPU carries only {SHADOWS_PER_TCG_CPU} encrypting shadows: plan KVM "
             "or bare-metal hosts for this scale"]
    return site, notes


def _e2(p, host_mb, host_cpus):
    site = base_site()
    origin = site["origin"].fields
    clients = max(p["clients"])
    data_gb = (p["writers"] * p["write_mb"] + clients * p["reads_per_client"] * origin["file_mb"]) / 1000
    dtn = site["dtn"]
    dtn.fields["disks"] = _raid(raid_member_gb(2 * data_gb))
    dtn.why.append(f"RAID6 of 6 members for {p['writers']} writers x {p['write_mb']} MB and the cached reads "
                   f"({data_gb:.1f} GB, twice over)")
    site["worker"].why.append(f"up to {clients} xrdcp clients spread over the workers")
    return site, [f"read rounds of {', '.join(map(str, p['clients']))} clients through the DTN"]


def _e3(p, host_mb, host_cpus):
    site = base_site()
    jobs = max(p["concurrency"])
    file_mb = p["events"] * p["branches"] * c.E3_BYTES_PER_VALUE / 1e6
    data_gb = p["sites"] * p["files_per_site"] * file_mb / 1000
    cache = max(p["cache_mbs"])
    w = site["worker"]
    w.count, w.cpus = 1, jobs
    job_mb = max(c.E3_JOB_RSS_MB_GUESS[r] for r in p["readers"])   # the heaviest reader of the run
    w.memory_mb = round_mb(c.ROLE_BASE_MB["worker"] + jobs * (job_mb + cache))
    w.fields = {"startds": 1, "slots_per_startd": max(jobs, 8)}
    w.why = [f"one worker runs every compute site's jobs: {jobs} at once, one core each (CPU efficiency per cell)",
             f"{c.ROLE_BASE_MB['worker']} MB + {jobs} x ({job_mb} MB job + {cache:g} MB read-ahead)"]
    dtn = site["dtn"]
    dtn.fields["disks"] = _raid(raid_member_gb(2 * data_gb))
    dtn.why.append(f"{p['sites']} sites x {p['files_per_site']} files x {file_mb:.0f} MB = {data_gb:.1f} GB "
                   "(twice: the disk baseline's copies)")
    notes = [f"{p['sites']} x {p['sites']} cells, RTTs {', '.join(f'{r:g}' for r in p['rtts'])} ms"]
    if jobs > host_cpus:
        notes.append(f"the concurrency scan's {jobs} jobs want {jobs} cores on one worker, more than "
                     f"{host_cpus}: or --set concurrency=1,2,4,8")
    return site, notes


def _e4(p, host_mb, host_cpus):
    site = base_site()
    nodes, cpn, tasks = p["nodes"], p["cpus_per_node"], p["tasks_per_node"]
    node_mb = tasks * c.E4_TASK_MB + c.E4_DB_MB + p["dump_mb"]
    base = c.ROLE_BASE_MB["worker"]
    per_host = max(1, min(host_cpus // cpn, int((host_mb - base) // node_mb), MAX_STARTDS_PER_HOST))
    hosts = math.ceil(nodes / per_host)
    each = math.ceil(nodes / hosts)
    site["worker"] = Group("worker", ("worker",), count=hosts, memory_mb=round_mb(base + each * node_mb),
                           cpus=each * cpn, disk_gb=c.HOST_DISK_GB + math.ceil(each * 2 * p["dump_mb"] / 1000),
                           fields={"startds": each, "slots_per_startd": cpn},
                           why=[f"{nodes} whole nodes of {cpn} cores, {each} per worker (one startd each)",
                                f"{base} MB + {each} x ({tasks} tasks x {c.E4_TASK_MB} MB + {c.E4_DB_MB} MB MariaDB + "
                                f"{p['dump_mb']} MB dump) (estimates)",
                                "one real core per task: the paper's event efficiency is CPU over real time"])
    dtn = site["dtn"]
    dtn.memory_mb = round_mb(c.ROLE_BASE_MB["dtn"] + c.E4_DB_MB + p["dump_mb"])
    dtn.why.append("the dedicated layout's DB node")
    sub = site["submit"]
    sub.disk_gb = c.HOST_DISK_GB + math.ceil((p["dump_mb"] + p["env_files"] * 4 / 1024) / 1000)
    sub.why.append(f"the NFS software area ({p['env_files']} small files) and the dump")
    notes = [f"colocated and dedicated layouts; the dedicated one uses the DTN as its DB node"]
    if cpn > host_cpus:
        notes.append(f"a node needs {cpn} cores, more than the {host_cpus} given: a worker per node with at "
                     f"least {cpn} cores, or --set cpus_per_node={host_cpus} tasks_per_node={host_cpus}")
    return site, notes


def _e5(p, host_mb, host_cpus):
    site = base_site()
    jobs = p["ramp_max"]
    startds = math.ceil(jobs / c.PLAN_SLOTS_PER_STARTD)
    s = site["submit"]
    s.memory_mb = round_mb(c.ROLE_BASE_MB["submit"] + jobs * c.SHADOW_MB)
    s.cpus = 1 + math.ceil(jobs / c.SCHEDD_JOBS_PER_CORE)
    s.why = [f"{c.ROLE_BASE_MB['submit']} MB + {jobs} shadows x {c.SHADOW_MB:g} MB (measured: E5's ramp)",
             f"1 + {jobs} running jobs / {c.SCHEDD_JOBS_PER_CORE} per schedd core (measured under TCG)"]
    site["worker"] = sleeper_workers(startds, host_mb, host_cpus, why=[f"{jobs} running sleep jobs (ramp_max)"])
    site["ccb"].why.append(f"{startds} startds registered with each")
    notes = [f"ramp to {jobs} running sleep jobs on {startds} startds; the paper: ~95k jobs on one 128 GB schedd"]
    if startds > 2000:
        notes.append(f"{startds} startds are more than one untuned collector holds (~2000, seed 004): "
                     "run the two-tier collector rows (collector-tuned)")
    return site, notes


RULES = {"smoke": _smoke, "e1": _e1, "e2": _e2, "e3": _e3, "e4": _e4, "e5": _e5, "faults": _faults}


def plan(spec, host_mb=DEFAULT_HOST_MB, host_cpus=DEFAULT_HOST_CPUS, sets=None):
    """The Plan of `spec` (EXPERIMENT:SCALE) with `--set` overrides, for machines of at most
    `host_mb` MB and `host_cpus` cores."""
    name, scale = parse_spec(spec)
    if host_mb < 2048 or host_cpus < 1:
        raise ConfigError("testbed plan", "--host-memory-mb/--host-cpus", "a host needs at least 2048 MB and one core")
    if name not in RULES:
        raise ConfigError("testbed plan", "--for", f"no capacity rule for {name} (testbed/experiments/capacity.py)")
    params = registry.get(name).parameters(scale, sets or {})
    site, notes = RULES[name](params, host_mb, host_cpus)
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
