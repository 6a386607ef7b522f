"""E5's capacity rule (`testbed plan --for e5:SCALE`): the submit host its ramp's shadows
need, and the sleeper workers for its running jobs."""
import math

from testbed.harness.capacity import base_site, round_mb, sleeper_workers
from testbed.model import constants as c

def site_for(p, host_mb, host_cpus):
    """The hosts E5 at parameters `p` needs, on machines of at most `host_mb` MB and
    `host_cpus` cores: ({group name: Group}, [notes])."""
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
