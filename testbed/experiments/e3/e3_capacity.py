"""E3's capacity rule (`testbed plan --for e3:SCALE`): the one worker that runs every
compute site's jobs, the DTN's RAID for every site's files."""
from testbed.harness.capacity import base_site, raid_disks, raid_member_gb, round_mb
from testbed.model import constants as c

def site_for(p, host_mb, host_cpus):
    """The hosts E3 at parameters `p` needs, on machines of at most `host_mb` MB and
    `host_cpus` cores: ({group name: Group}, [notes])."""
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
    dtn.fields["disks"] = raid_disks(raid_member_gb(2 * data_gb))
    dtn.why.append(f"{p['sites']} sites x {p['files_per_site']} files x {file_mb:.0f} MB = {data_gb:.1f} GB "
                   "(twice: the disk baseline's copies)")
    notes = [f"{p['sites']} x {p['sites']} cells, RTTs {', '.join(f'{r:g}' for r in p['rtts'])} ms"]
    if jobs > host_cpus:
        notes.append(f"the concurrency scan's {jobs} jobs want {jobs} cores on one worker, more than "
                     f"{host_cpus}: or --set concurrency=1,2,4,8")
    return site, notes
