"""E2's capacity rule (`testbed plan --for e2:SCALE`): the DTN's RAID for its writes and
cached reads, the workers for its clients."""
from testbed.harness.capacity import base_site, raid_disks, raid_member_gb

def site_for(p, host_mb, host_cpus):
    """The hosts E2 at parameters `p` needs, on machines of at most `host_mb` MB and
    `host_cpus` cores: ({group name: Group}, [notes])."""
    site = base_site()
    origin = site["origin"].fields
    clients = max(p["clients"])
    data_gb = (p["writers"] * p["write_mb"] + clients * p["reads_per_client"] * origin["file_mb"]) / 1000
    dtn = site["dtn"]
    dtn.fields["disks"] = raid_disks(raid_member_gb(2 * data_gb))
    dtn.why.append(f"RAID6 of 6 members for {p['writers']} writers x {p['write_mb']} MB and the cached reads "
                   f"({data_gb:.1f} GB, twice over)")
    site["worker"].why.append(f"up to {clients} xrdcp clients spread over the workers")
    return site, [f"read rounds of {', '.join(map(str, p['clients']))} clients through the DTN"]
