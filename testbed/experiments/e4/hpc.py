"""E4: physics data production on HPC nodes (seed 003, STAR) - node efficiency with the
calibration DB on every node vs one node dedicated to it, the idle tail, a throughput
estimator, and the event-service back-fill the paper proposed.

Scaling to the testbed: an HPC node allocated whole is one startd of a worker VM,
switched for the run to one partitionable slot (`cpus_per_node` cpus) that one
whole-node job claims whole (request_cpus = all of them). The job runs
`provision/guest/e4_node.py` (shipped with it): start-up timed part by part (the paper's (T)),
then `tasks_per_node` tasks. The dedicated DB node is the DTN (a pool of its own,
another VM: its look-ups cross the site network); the shared software area and
the calibration dumps are an NFS export of the submit host (read-only, site network).

Honest generalisation of E2: the worker VMs have fewer real cores than tasks, so a
task's CPU/real is meaningless. E2 = sum of the tasks' CPU time / the real core
seconds the node could give them while they ran: the integral over its task phase of
min(running tasks, its share of the VM's cores), the share being the VM's cores over
the nodes running tasks on that VM at that moment. With one task per real core it is
the paper's sum(CPU)/sum(real). The idle tail is reported in the paper's terms (each
task one CPU slot: slot time between a task's end and the node's end, over the node's
allocated slot time) and in real cores (core seconds unused during the task phase).

Pure functions here are unit-tested; `HpcExperiment` runs the commands on the site.
"""
import json
import math
import shlex
import statistics
import time

from testbed import PROJECT_ROOT
from testbed.experiments.e4 import e4_capacity, e4_figures, e4_rows
from testbed.harness.registry import DAY_S, Experiment, Param
from testbed.machines.render import render_run_file
from testbed.model.constants import (E4_DB_PORT, E4_EXPORTS, E4_MOUNT, E4_NODES_CONF, E4_ROLE_ATTR,
                                     E4_SHARED_DIR, SUBMIT_HOME, JobStatus)
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.condor import submit_description
from testbed.services.gateway import ConfigFragment, Schedd

NODE_PROGRAM = PROJECT_ROOT / "provision" / "guest" / "e4_node.py"  # a guest program
LAYOUTS = ("colocated", "dedicated")
PARTS = ("copy", "install", "start", "load", "db_wait", "delay", "env")


def nodes_missing(params, topo):
    """None when the topology has a whole node for each of `nodes`: every worker startd
    becomes one node (a partitionable slot), and the dedicated layout's DB node is the DTN
    (or the submit host). Else one line saying what is missing; without it the node jobs
    would wait idle for job_timeout_s (4 hours at full)."""
    have = topo.planned_startds
    if params["nodes"] > have:
        return (f"nodes = {params['nodes']} whole nodes, but the topology's workers have {have} startds "
                f"(one node each): add workers or startds to the topology, or --set nodes={have}")
    return None


EXPERIMENT = Experiment(
    name="e4", title="Physics data production on HPC nodes", seed="003_f655f760dfef3c99",
    suite="robot/suites/e4_hpc_production.robot",
    params={
        # one node per worker startd (nodes_missing checks the topology's)
        "nodes": Param("int", "task nodes (whole-node jobs) per layout; the dedicated layout allocates one more",
                       minimum=1, maximum=1000),
        "cpus_per_node": Param("int", "cpus of a node's partitionable slot (the whole-node job requests all)",
                               minimum=1, maximum=1024),
        "tasks_per_node": Param("int", "reconstruction tasks a node starts (paper: 60 Haswell, 100 KNL)",
                                minimum=1, maximum=1024),
        "events_mean": Param("int", "events per task, mean of a Gaussian", minimum=1, maximum=100000),
        "events_sigma": Param("int", "events per task, standard deviation", minimum=0, maximum=100000),
        "event_work": Param("int", "CPU work per event: sha256 rounds (Gaussian, sigma 20%)", minimum=1, maximum=10**7),
        # the production row checks that the DB answered look-ups: at least one per event
        "lookups_per_event": Param("int", "calibration look-ups per event (indexed time-range queries)",
                                   minimum=1, maximum=1000),
        # the dump and the software area are on the submit host's disk (constants.HOST_DISK_GB)
        "dump_mb": Param("int", "size of the generated calibration DB dump, MB", minimum=1, maximum=2048),
        "env_files": Param("int", "small files in the shared software area (metadata heavy)",
                           minimum=1, maximum=200000),
        "delay_max_s": Param("int", "random start delay, 1..this many seconds (paper 60)", minimum=1, maximum=DAY_S),
        "backfill_events": Param("int", "events of an event-service back-fill task (0 skips the row)",
                                 minimum=0, maximum=100000),
        "calib_tasks": Param("int", "tasks of the estimator's calibration run (0 skips the estimator)",
                             minimum=0, maximum=1024),
        "job_timeout_s": Param("int", "seconds a layout's jobs may take, start-up included", minimum=1, maximum=DAY_S),
    },
    scales={
        # ci on `small` (one 1-vCPU worker): one node, two tasks (2:1 on the core), a 2 MB dump,
        # 2 s delays; no estimator (its calibration run is quick's and full's), which keeps the
        # suite within CI's budget on a slow 2-core host.
        "ci": {"nodes": 1, "cpus_per_node": 2, "tasks_per_node": 2, "events_mean": 12, "events_sigma": 4,
               "event_work": 2000, "lookups_per_event": 2, "dump_mb": 2, "env_files": 300, "delay_max_s": 2,
               "backfill_events": 2, "calib_tasks": 0, "job_timeout_s": 420},
        "quick": {"nodes": 2, "cpus_per_node": 8, "tasks_per_node": 8, "events_mean": 60, "events_sigma": 15,
                  "event_work": 4000, "lookups_per_event": 4, "dump_mb": 50, "env_files": 3000,
                  "delay_max_s": 10, "backfill_events": 5, "calib_tasks": 4, "job_timeout_s": 1800},
        "full": {"nodes": 10, "cpus_per_node": 60, "tasks_per_node": 60, "events_mean": 200, "events_sigma": 40,
                 "event_work": 8000, "lookups_per_event": 10, "dump_mb": 300, "env_files": 20000,
                 "delay_max_s": 60, "backfill_events": 10, "calib_tasks": 8, "job_timeout_s": 14400},
    },
    profiles=("default",), row_profiles=("default",),
    metrics=("e4.startup_seconds", "e4.startup_cpu_busy", "e4.job_start_efficiency", "e4.event_efficiency", "e4.total_efficiency",
             "e4.nodes_allocated", "e4.nodes_running_tasks", "e4.node_seconds", "e4.lookups",
             "e4.lookups_answered", "e4.task_finish_fraction", "e4.idle_tail_slots", "e4.idle_tail_cores",
             "e4.backfill_tasks", "e4.backfill_overrun_seconds", "e4.backfill_recovered", "e4.total_dedicated_over_colocated",
             "e4.event_cpu_mean", "e4.event_cpu_sigma", "e4.predicted_seconds", "e4.estimator_error"),
    x_params=("t",),               # the task finish fractions by rank: e4_figures' idle-tail plot
    paper="results/paper/e4.yaml",
    figures=e4_figures.figures,
    doc_figures=e4_figures.DOC_FIGURES,   # the idle tail on its docs page
    fits=nodes_missing,            # whole nodes: one per worker startd
    rows=e4_rows.ROWS, points={"production": {"layout": None, "backfill": None}},
    # Whole-node jobs on the workers (matched by the CMs, reached through CCB) read the
    # software area the submit host exports over NFS; the dedicated-DB layout serves the
    # calibration DB from the DTN. The origin takes no part: it may be paused.
    uses=("submit", "cm", "ccb", "worker", "dtn"),
    measured=("worker", "dtn"),      # --pin: the task nodes apart from the DB node
    capacity=e4_capacity.site_for,   # testbed plan: the hosts its parameters need
)


# --- reports ---------------------------------------------------------------------------------
REPORT_KEYS = {"role", "layout", "node", "host", "start", "tasks_start", "end", "T", "parts", "errors"}
TASK_KEYS = {"id", "kind", "start", "end", "cpu", "events", "lookups", "answered", "event_cpu"}


def event_cpu_times(reports, kind="task"):
    """Every event's CPU seconds in the reports' tasks of `kind` (the estimator's sample)."""
    return [ev for r in reports for t in r.get("tasks", []) if t["kind"] == kind for ev in t.get("event_cpu", [])]


def parse_report(text):
    """A node's e4-report.json -> dict; ValueError naming what is missing or wrong."""
    try:
        rep = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"report is not JSON: {exc}") from None
    if not isinstance(rep, dict):
        raise ValueError("report is not a JSON object")
    missing = REPORT_KEYS - set(rep)
    if missing:
        raise ValueError(f"report lacks {', '.join(sorted(missing))}")
    for task in rep.get("tasks", []):
        if TASK_KEYS - set(task):
            raise ValueError(f"task {task.get('id')} lacks {', '.join(sorted(TASK_KEYS - set(task)))}")
    if not rep["start"] <= rep["tasks_start"] <= rep["end"]:
        raise ValueError("report times out of order (start <= tasks_start <= end)")
    return rep


def split_reports(text, marker="#E4REPORT"):
    """Reports printed one after another, each after a `marker` line -> [dict]."""
    return [parse_report(part) for part in text.split(marker) if part.strip()]


# --- efficiencies ---------------------------------------------------------------------------
def job_start_efficiency(total, startup):
    """E1 = (total - T) / total."""
    if total <= 0 or startup < 0 or startup > total:
        raise ValueError(f"E1 needs 0 <= T <= total > 0, got T={startup}, total={total}")
    return (total - startup) / total


def total_efficiency(nodes_running, nodes_allocated, e1, e2):
    """The paper's Total = (nodes running tasks / nodes allocated) x E1 x E2."""
    if nodes_allocated <= 0 or not 0 <= nodes_running <= nodes_allocated:
        raise ValueError(f"need 0 <= nodes running ({nodes_running}) <= allocated ({nodes_allocated}) > 0")
    return nodes_running / nodes_allocated * e1 * e2


def _integrate(pieces, t0, t1, f):
    """Integral over [t0, t1] of f(t), f constant between the breakpoints `pieces`."""
    points = sorted({t0, t1, *(p for p in pieces if t0 < p < t1)})
    return sum((b - a) * f((a + b) / 2) for a, b in zip(points, points[1:]))


def available_core_seconds(rep, vm_nodes, vm_cpus):
    """Real core seconds the node could give its tasks: the integral over its task phase of
    min(tasks running, vm_cpus / nodes of the same VM in their task phase)."""
    tasks = rep.get("tasks", [])
    if not tasks:
        return 0.0
    t0, t1 = rep["tasks_start"], max(t["end"] for t in tasks)
    breaks = [t["start"] for t in tasks] + [t["end"] for t in tasks]
    phases = [(n["tasks_start"], max((t["end"] for t in n.get("tasks", [])), default=n["tasks_start"]))
              for n in vm_nodes]
    breaks += [p for ph in phases for p in ph]

    def f(t):
        running = sum(1 for x in tasks if x["start"] <= t < x["end"])
        nodes = max(1, sum(1 for a, b in phases if a <= t < b))
        return min(running, vm_cpus / nodes)
    return _integrate(breaks, t0, t1, f)


def node_figures(rep, vm_nodes=None, vm_cpus=1):
    """One task node: {total, T, E1, cpu, available, E2, lookups, answered, events}; total
    runs from the job's start to its last task's end (the node is released then)."""
    tasks = rep.get("tasks", [])
    end = max((t["end"] for t in tasks), default=rep["end"])
    total = end - rep["start"]
    cpu = sum(t["cpu"] for t in tasks)
    avail = available_core_seconds(rep, vm_nodes or [rep], vm_cpus)
    return {"total": total, "T": rep["T"], "E1": job_start_efficiency(total, rep["T"]), "cpu": cpu,
            "available": avail, "E2": cpu / avail if avail > 0 else 0.0,
            "lookups": sum(t["lookups"] for t in tasks), "answered": sum(t["answered"] for t in tasks),
            "events": sum(t["events"] for t in tasks), "tasks": len(tasks)}


def layout_figures(reports, db_reports=(), vm_cpus=None):
    """A layout's figures over its task nodes: E1 = sum(total - T) / sum(total), E2 = sum
    CPU / sum available core seconds, nodes running tasks / allocated (task nodes + DB
    nodes), Total. vm_cpus: {host: real cores} (default each report's `cpus`)."""
    by_host = {}
    for r in reports:
        by_host.setdefault(r["host"], []).append(r)
    nodes = [node_figures(r, by_host[r["host"]], (vm_cpus or {}).get(r["host"], r.get("cpus") or 1))
             for r in reports]
    total = sum(n["total"] for n in nodes)
    e1 = sum(n["total"] - n["T"] for n in nodes) / total if total > 0 else 0.0
    avail = sum(n["available"] for n in nodes)
    e2 = min(1.0, sum(n["cpu"] for n in nodes) / avail) if avail > 0 else 0.0
    running = sum(1 for n in nodes if n["tasks"] > 0)
    allocated = len(reports) + len(db_reports)
    return {"E1": e1, "E2": e2, "total": total_efficiency(running, allocated, e1, e2) if allocated else 0.0,
            "nodes_running": running, "nodes_allocated": allocated, "nodes": nodes,
            "T": statistics.mean(n["T"] for n in nodes) if nodes else 0.0,
            "startup_cpu_busy": statistics.mean(busy) if (busy := [r["startup_cpu_busy"] for r in reports
                                                                    if "startup_cpu_busy" in r]) else None,
            "parts": {p: statistics.mean(r["parts"].get(p, 0.0) for r in reports) for p in PARTS
                      if any(p in r["parts"] for r in reports)}}


# --- the idle tail and back-fill ------------------------------------------------------------
def production_end(rep):
    """When the node's production ends: its last original task's end (the node's own end
    when it ran none). The allocation the idle tail is measured against ends here; a
    back-fill task still running then overran it (backfill_overrun)."""
    original = [t["end"] for t in rep.get("tasks", []) if t["kind"] == "task"]
    return max(original) if original else rep["end"]


def _within(t, end):
    """Seconds of task `t` that ran before `end`."""
    return max(0.0, min(t["end"], end) - t["start"])


def finish_fractions(rep):
    """The original tasks' end times, in order, as fractions of the node's time (start to
    its production's end): the paper's 15.5 h / 17 h / 18 h of a job."""
    tasks = rep.get("tasks", [])
    span = production_end(rep) - rep["start"]
    return sorted((t["end"] - rep["start"]) / span for t in tasks if t["kind"] == "task") if span > 0 else []


def idle_tail_slots(rep):
    """The paper's idle tail: each original task holds one CPU slot of the node; the slot
    time between a task's end and the production's end, less what back-fill tasks ran
    there before that end, over the node's allocated slot time (slots x the node's time)."""
    tasks = rep.get("tasks", [])
    original = [t for t in tasks if t["kind"] == "task"]
    if not original:
        return 0.0
    end = production_end(rep)
    span = end - rep["start"]
    idle = sum(end - t["end"] for t in original) - sum(_within(t, end) for t in tasks if t["kind"] != "task")
    return max(0.0, idle) / (len(original) * span) if span > 0 else 0.0


def idle_tail_cores(rep, cores):
    """Real core seconds unused during the task phase (cores x phase - CPU used), over the
    node's allocated core seconds (cores x the node's time), both up to the production's
    end; a back-fill task's CPU counts in proportion to its run before that end."""
    tasks = rep.get("tasks", [])
    if not tasks or cores <= 0:
        return 0.0
    end = production_end(rep)
    used = sum(t["cpu"] * (_within(t, end) / (t["end"] - t["start"]) if t["end"] > t["start"] else 1.0)
               for t in tasks)
    return max(0.0, cores * (end - rep["tasks_start"]) - used) / (cores * (end - rep["start"]))


def backfill_overrun_seconds(rep):
    """Seconds a back-fill task ran past the production's end: time the event service's
    length prediction added to the node's allocation instead of filling it."""
    end = production_end(rep)
    return max([0.0] + [t["end"] - end for t in rep.get("tasks", []) if t["kind"] != "task"])


def backfill_recovered(without, with_backfill):
    """Idle-tail fraction the event service took back (points of allocated slot time)."""
    return without - with_backfill


# --- throughput estimator ------------------------------------------------------------------
def gaussian_fit(values):
    """Maximum-likelihood Gaussian (mean, standard deviation) of per-event CPU times."""
    values = [float(v) for v in values]
    if len(values) < 2:
        raise ValueError("a Gaussian fit needs at least two values")
    mu = sum(values) / len(values)
    return mu, math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))


def expected_max_z(n):
    """E[max of n standard normals] (Blom's approximation); 0 for one."""
    if n <= 1:
        return 0.0
    return statistics.NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def predict_node_seconds(mu, events_mean, events_sigma, tasks, cores, startup):
    """A node's job length from the calibration's per-event CPU time `mu`: start-up, then
    the longer of the node's whole work spread over its cores and its longest task (events
    at the expected maximum of `tasks` Gaussian draws) on one core."""
    longest = (events_mean + events_sigma * expected_max_z(tasks)) * mu / min(1.0, cores)
    spread = tasks * events_mean * mu / cores
    return startup + max(longest, spread)


def estimator_error(predicted, measured):
    """Relative error of the prediction (+: predicted too long)."""
    if measured <= 0:
        raise ValueError("measured job length must be positive")
    return (predicted - measured) / measured


# --- what runs on the site -----------------------------------------------------------------
def mysql_host_pattern(site_net):
    """'10.160.0.0/24' -> '10.160.0.%' (MariaDB accounts for the site network)."""
    net = str(site_net)
    addr, prefix = net.split("/")
    keep = int(prefix) // 8
    octets = addr.split(".")
    return ".".join(octets[:keep] + ["%"]) if keep < 4 else addr


def node_config(p, role, layout, cnf, password, site_net, db_host="", backfill=True):
    """node.json for the whole-node job."""
    return {"role": role, "layout": layout, "node": 0, "port": E4_DB_PORT, "seed": 3, "cnf": cnf,
            "shared": E4_MOUNT, "password": password, "network": mysql_host_pattern(site_net),
            "tasks": p["tasks_per_node"], "events_mean": p["events_mean"], "events_sigma": p["events_sigma"],
            "event_work": p["event_work"], "event_work_sigma": 0.2, "lookups_per_event": p["lookups_per_event"],
            "delay_max_s": p["delay_max_s"], "backfill_events": p["backfill_events"] if backfill else 0,
            "db_host": db_host, "db_port": E4_DB_PORT, "db_wait_s": p["job_timeout_s"],
            "serve_s": p["job_timeout_s"], "idle_s": 10, "tasks_expected": p["nodes"] * p["tasks_per_node"]}


def node_job(cpus, count, tag, requirements=None, memory_mb=256):
    """The whole-node job: every cpu of the node's slot, the node program and its inputs."""
    desc = submit_description("/usr/bin/python3", "e4_node.py node.json $(Process)", count=count,
                              requirements=requirements,
                              extra={"request_cpus": cpus, "transfer_input_files": "e4_node.py,node.json,node.cnf",
                                     "transfer_output_files": "e4-report.json",
                                     "transfer_output_remaps": '"e4-report.json = report.$(Process).json"',
                                     f"+{E4_ROLE_ATTR}": f'"{tag}"'})
    return desc.replace("request_memory = 32", f"request_memory = {memory_mb}")


def nfs_export_script(text, generate_args):
    """On the exporting host: the area generated, the export installed, the NFS server on."""
    return (f"mkdir -p {E4_SHARED_DIR} /etc/exports.d && cd {E4_SHARED_DIR} && "
            f"python3 /tmp/e4_node.py generate {E4_SHARED_DIR} {generate_args} && "
            f"printf %s {shlex.quote(text)} > {E4_EXPORTS} && systemctl start nfs-server && exportfs -ra")


def nfs_mount_script(server_ip):
    return (f"mkdir -p {E4_MOUNT} && (mountpoint -q {E4_MOUNT} || "
            f"mount -t nfs -o ro,vers=4.2,actimeo=0 {server_ip}:{E4_SHARED_DIR} {E4_MOUNT})")


UNMOUNT_SCRIPT = f"mountpoint -q {E4_MOUNT} && umount -l {E4_MOUNT}; true"
UNEXPORT_SCRIPT = f"rm -f {E4_EXPORTS}; exportfs -ra 2>/dev/null; systemctl stop nfs-server 2>/dev/null; true"


def fragment_script(path, text):
    """Install (text) or remove ('') a condor config fragment and restart HTCondor when it
    changed: a slot layout change needs a startd restart, not a reconfig."""
    return ConfigFragment(None, None, path).script(text, restart=True)


E4_WAIT_ATTRS = ["ClusterId", "ProcId", "JobStatus", "HoldReason"]


def job_states(ads):
    """{JobStatus: count} of job ads."""
    out = {}
    for ad in ads:
        out[ad.get("JobStatus")] = out.get(ad.get("JobStatus"), 0) + 1
    return out


class HpcExperiment:
    """Runs E4's commands on a site: shared area, whole-node slots, the layouts' jobs."""

    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool
        self.submit = topo.role_host("submit")
        self.workers = topo.with_role("worker")
        self.db_host = topo.role_host("dtn") or topo.role_host("submit")

    # --- shared software area (NFS from the submit host) ------------------------------------
    def share_area(self, p):
        text = render_run_file("e4/exports.j2", path=E4_SHARED_DIR, site_net=str(self.topo.site_net))
        self.ssh.run(self.submit.name, "cat > /tmp/e4_node.py", input_bytes=NODE_PROGRAM.read_bytes())
        t = time.monotonic()
        self.ssh.run(self.submit.name, nfs_export_script(text, f"{p['dump_mb']} {p['env_files']}"), timeout=1800)
        nodes = [h.name for h in self.workers] + [self.db_host.name]
        res = self.ssh.run_many({h: nfs_mount_script(self.submit.site_ip) for h in nodes if h != self.submit.name},
                                timeout=300)
        bad = {h: (r.stderr or r.stdout).strip()[-200:] for h, r in res.items() if not r.ok}
        if bad:
            raise RemoteError(f"mounting the E4 shared area failed: {bad}")
        return time.monotonic() - t

    def unshare_area(self):
        nodes = [h.name for h in self.workers] + [self.db_host.name]
        self.ssh.run_many({h: UNMOUNT_SCRIPT for h in nodes if h != self.submit.name}, timeout=120)
        self.ssh.run(self.submit.name, UNEXPORT_SCRIPT, check=False, timeout=120)

    # --- whole-node slots --------------------------------------------------------------------
    def use_nodes(self, cpus, timeout=900):
        """Every worker startd one partitionable slot of `cpus` cpus; waits until the
        collector lists them. Returns the seconds it took."""
        t = time.monotonic()
        cmds = {h.name: fragment_script(E4_NODES_CONF, render_run_file(
            "e4/nodes.conf.j2", host=h, cpus=cpus, memory_mb=max(256, h.memory_mb // max(1, h.startds) - 64)))
            for h in self.workers}
        res = self.ssh.run_many(cmds, timeout=300)
        bad = {h: (r.stderr or r.stdout).strip()[-200:] for h, r in res.items() if not r.ok}
        if bad:
            raise RemoteError(f"installing the E4 node slots failed: {bad}")
        want = self.topo.planned_startds
        wait_for(f"{want} E4 node slots in the collector", lambda: self.node_slots() >= want, timeout, 10,
                 host=self.submit.name,
                 message=lambda: f"{self.node_slots()} of {want} E4 node slots in the collector after {timeout} s")
        return time.monotonic() - t

    def node_slots(self):
        out = Schedd(self.ssh, self.submit.name).status("-const 'E4Node =?= True && PartitionableSlot' "
                                                        "-af Name 2>/dev/null; true", timeout=120).stdout
        return len([line for line in out.splitlines() if line.strip()])

    def restore_slots(self):
        self.ssh.run_many({h.name: fragment_script(E4_NODES_CONF, "") for h in self.workers}, timeout=300)

    # --- jobs ----------------------------------------------------------------------------------
    def _files(self, cfg, cnf_text):
        return {"e4_node.py": (NODE_PROGRAM.read_text(), "0644"), "node.json": (json.dumps(cfg), "0644"),
                "node.cnf": (cnf_text, "0644")}

    def submit_db_node(self, p, password, tag):
        """The dedicated DB node: a job in the DTN's own pool, on the DTN's site address."""
        cfg = node_config(p, "db", "dedicated", "node.cnf", password, self.topo.site_net)
        cnf = render_run_file("e4/node.cnf.j2", layout="dedicated", bind_address=self.db_host.site_ip,
                              max_connections=p["nodes"] * p["tasks_per_node"] + 20, key_buffer_mb=32)
        workdir = f"{SUBMIT_HOME}/e4/{tag}-db"
        # IsDTN: on the DTN's own slots. Without it the DTN's schedd flocked the job to the
        # workers' pool when its slots were slow to match (seen in CI: the DB ran on
        # worker1 while the task node waited for it at the DTN's address)
        job = node_job(1, 1, tag + "-db", requirements="(TARGET.IsDTN =?= True)", memory_mb=64)
        jobs = Schedd(self.ssh, self.db_host.name).submit(job, workdir, files=self._files(cfg, cnf), timeout=300)
        return jobs.cluster, workdir

    def submit_task_nodes(self, p, layout, password, tag, backfill):
        db = self.db_host.site_ip if layout == "dedicated" else ""
        cfg = node_config(p, "tasks", layout, "node.cnf", password, self.topo.site_net, db, backfill)
        cnf = render_run_file("e4/node.cnf.j2", layout="colocated", bind_address="", max_connections=0,
                              key_buffer_mb=16)
        workdir = f"{SUBMIT_HOME}/e4/{tag}"
        desc = node_job(p["cpus_per_node"], p["nodes"], tag, requirements="(TARGET.E4Node =?= True)")
        cluster = self.pool.submit(desc, workdir, files=self._files(cfg, cnf))
        return cluster, workdir

    def wait_done(self, waits, timeout, poll=10):
        """waits: [(host, cluster, count)], each on the schedd of `host` (the submit host's,
        the DTN's); until every job completed. RemoteError on held jobs or when out of time."""
        pending = []

        def all_done():
            pending.clear()
            for host, cluster, count in waits:
                ads = Schedd(self.ssh, host).jobs(cluster, E4_WAIT_ATTRS, as_user=False)
                states = job_states(ads)
                if states.get(JobStatus.HELD):
                    reasons = {a.get("HoldReason") for a in ads if a.get("HoldReason")}
                    raise RemoteError(f"E4 jobs held on {host} (cluster {cluster}): {reasons}")
                if states.get(JobStatus.COMPLETED, 0) < count:
                    pending.append(f"{host} cluster {cluster}: {states}")
            return not pending

        return float(wait_for("every E4 job complete", all_done, timeout, poll,
                              message=lambda: f"E4 jobs not done after {timeout} s: {'; '.join(pending)}"))

    def reports(self, host, workdir):
        out = self.ssh.run(host, f"cd {workdir} && for f in report.*.json; do echo '#E4REPORT'; cat $f; done",
                           check=False, timeout=120).stdout
        return split_reports(out) if "#E4REPORT" in out else []

    def remove(self, tag):
        cmd = Schedd.rm_quiet_command(f'regexp("^{tag}", {E4_ROLE_ATTR})')
        self.ssh.run_many({self.submit.name: cmd, self.db_host.name: cmd}, timeout=120)

    def run_layout(self, p, layout, backfill, nodes=None):
        """One layout's production: the DB node (dedicated) and `nodes` whole-node jobs, to
        their end. Returns (task node reports, DB node reports)."""
        p = dict(p, nodes=nodes or p["nodes"])
        tag = f"e4-{layout}{'-bf' if backfill else ''}-{time.time_ns()}"
        password = f"e4{time.time_ns() % 10**9}"
        waits, db_dir = [], None
        try:
            if layout == "dedicated":
                db_cluster, db_dir = self.submit_db_node(p, password, tag)
                waits.append((self.db_host.name, db_cluster, 1))
            cluster, workdir = self.submit_task_nodes(p, layout, password, tag, backfill)
            waits.append((self.submit.name, cluster, p["nodes"]))
            self.wait_done(waits, float(p["job_timeout_s"]))
        except Exception:
            self.remove(tag)
            raise
        return self.reports(self.submit.name, workdir), (self.reports(self.db_host.name, db_dir) if db_dir else [])
