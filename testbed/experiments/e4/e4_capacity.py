"""E4's capacity rule (`testbed plan --for e4:SCALE`): its whole nodes packed into workers,
the DTN as the dedicated layout's DB node, the submit host's NFS software area."""
import math

from testbed.harness.capacity import MAX_STARTDS_PER_HOST, Group, base_site, round_mb
from testbed.model import constants as c

def site_for(p, host_mb, host_cpus):
    """The hosts E4 at parameters `p` needs, on machines of at most `host_mb` MB and
    `host_cpus` cores: ({group name: Group}, [notes])."""
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
