"""E1's capacity rule (`testbed plan --for e1:SCALE`): the submit host its saturation test's
shadows need, and the sleeper workers for its slots; and what one emulated CPU carries."""
import math

from testbed.harness.capacity import base_site, round_mb, sleeper_workers
from testbed.experiments.e1.jobs import size_for_rate
from testbed.model import constants as c

# Under TCG one emulated CPU of the submit host carries about this many encrypting
# shadows: 8 already saturate its transfers (3-4 MB/s in all, the CPU is the limit),
# while 32 at once on `default`'s one-CPU submit host left its schedd not answering
# condor_q (AUTHENTICATE:1005) and no job done after 19 minutes.
SHADOWS_PER_TCG_CPU = 8


def site_for(p, host_mb, host_cpus):
    """The hosts E1 at parameters `p` needs, on machines of at most `host_mb` MB and
    `host_cpus` cores: ({group name: Group}, [notes])."""
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
