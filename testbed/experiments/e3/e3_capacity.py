"""E3's capacity rule (`testbed plan --for e3:SCALE`): the one worker that runs every
compute site's jobs, the DTN's RAID for every site's files; and how many analysis jobs the
worker a run has holds at once."""
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


def concurrency_misfit(jobs, rss_mb, available_mb, host, private_mb=None):
    """Why `jobs` concurrent analysis jobs do not fit in `available_mb` of `host`'s memory
    (None when they fit): the first job's peak RSS, and each further one's private memory
    (`private_mb`; ROOT's libraries and dictionaries are file pages the jobs share; None:
    the whole RSS). Past that the scan would measure the guest's swapping, not a link or a
    server: quick's 8 uproot jobs on a 512 MB worker thrashed for 900 s."""
    rss = float(rss_mb)
    each = rss if private_mb is None else min(rss, float(private_mb))
    need = rss + (int(jobs) - 1) * each
    if need <= available_mb:
        return None
    how = (f"{jobs} jobs x {rss:.0f} MB (an analysis job's peak RSS)" if each == rss else
           f"{rss:.0f} MB (a job's peak RSS) + {int(jobs) - 1} x {each:.0f} MB (each further job's private memory)")
    return (f"{how} = {need:.0f} MB > {available_mb} MB available on {host}: the scan stops at the worker's "
            f"memory; a worker with more memory_mb in the topology runs this point")


def jobs_that_fit(rss_mb, available_mb, private_mb=None):
    """How many analysis jobs run at once in `available_mb` (at least 1): the first with its
    peak RSS, each further one with its private memory (None: its RSS)."""
    rss = max(1.0, float(rss_mb))
    each = rss if private_mb is None else max(1.0, min(rss, float(private_mb)))
    return max(1, 1 + int((available_mb - rss) // each)) if available_mb >= rss else 1
