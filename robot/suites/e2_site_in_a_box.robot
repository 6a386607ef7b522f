*** Settings ***
Documentation     E2 - Site in a box (seed 001_a7ff0cb7e5a8d9a4).
...
...               A Data Transfer Node runs a full HTCondor pool of its own, an XRootD
...               redirector and data server, and a caching proxy whose cache lives on
...               software RAID6. Files of a remote site (the origin, behind an emulated WAN)
...               are read by parallel clients through the DTN without and with the cache;
...               10 parallel writers measure what md's stripe cache does to RAID6 writes;
...               jobs are routed to the DTN with HTCondor-C and flock onward to the pool.
...
...               Scaling to the testbed: the paper's 100 remote files are the origin's files
...               (count and size from the topology: small = 20 x 8 MB, default = 100 x 8 MB);
...               clients 2 (ci), 1, 2, 4 (quick) or 1, 2, 4, 10 (full) run on the worker VMs,
...               each reading 1 (ci), 2 (quick) or 5 (full) random files to /dev/null; 10 writers
...               write 32 MB (ci), 64 MB (quick) or 128 MB (full) each. The virtual disks of the
...               RAID are files on one physical host disk; each is made a disk of its own by
...               per-member MB/s and IOPS limits (libvirt iotune, the topology's disks.mb_per_s
...               and disks.iops, or --set member_mb_per_s=... member_iops=...; 0 lifts a limit)
...               with host caching off, checked with read-only fio on one member. The RAID
...               writes run with those emulated spindles and again with the limits lifted
...               (unlimited_rows=1), so the stripe cache's speed-up is measured both ways in one
...               run; the cached reads run with the spindles. Reads and writes then compete on the
...               array as the paper saw after its fix (cached reads capped ~700 MB/s while the cache
...               was written): direct readers alone, the writers alone, both at once (fio, rw_seconds
...               a phase). Profiles: `default` (stripe
...               cache 256) and `raid-stripe-32768`; override with --set clients=1,2 etc.
...               (testbed/experiments/e2/e2_site.py declares the parameters and their scales).
...
...               One test per measured point: a row per client count of the full scale
...               (uncached reads) and per profile (RAID writes, cached reads); a row that is
...               not a point of this run's scale and --set parameters, or whose profile is not
...               compared, is skipped with a message saying so. The origin's WAN latency is set
...               once in the Suite Setup (`origin-behind-wan` checks it), so any row reruns on
...               its own, e.g. `--test uncached-4-clients` or `--include profile:default`.
...               Summaries (`raid-write-speedup`, cached over uncached) read the points this
...               run recorded.
Resource          ../resources/experiment.resource
Library           ../libraries/SiteInABoxLibrary.py    ${SCALE}
Suite Setup       Put The Origin Behind The WAN
Suite Teardown    Finish E2 And Restore The Site
Test Tags         E2

*** Test Cases ***
origin-behind-wan
    [Documentation]    WAN latency between the DTN and the remote origin site (set in the
    ...    Suite Setup) is measured within 1 ms + 5% of the configured RTT.
    [Tags]    wan
    Measured RTT Should Match    ${PARAMS}[origin_rtt_ms]    ${ORIGIN}[measured]    ${ORIGIN}[base]

member-disk-model
    [Documentation]    Read-only fio on one RAID member (O_DIRECT; sequential 1 MiB reads and
    ...    random 4 KiB reads, a few seconds each) beside its configured limits: the limits
    ...    hold (not more than 20% above, QEMU's throttle allows a short burst).
    [Tags]    disks
    ${f}=    Check One Member With Fio    0
    Record Metric    e2.member_seq_mb_per_s    ${f}[seq_mb_per_s]    MB/s
    ...    configured_mb_per_s=${f}[member_mb_per_s]    spindles=${f}[spindles]    cache=${DISKS}[cache]
    Record Metric    e2.member_rand_iops    ${f}[rand_iops]    IOPS
    ...    configured_iops=${f}[member_iops]    spindles=${f}[spindles]    cache=${DISKS}[cache]
    IF    $f['seq_ratio'] is not None
        Record Metric    e2.member_seq_over_limit    ${f}[seq_ratio]    ratio    configured_mb_per_s=${f}[member_mb_per_s]
    END
    IF    $f['iops_ratio'] is not None
        Record Metric    e2.member_iops_over_limit    ${f}[iops_ratio]    ratio    configured_iops=${f}[member_iops]
    END
    Should Be True    $f['seq_within']    member read ${f}[seq_mb_per_s] MB/s, above its limit ${f}[member_mb_per_s] MB/s
    Should Be True    $f['iops_within']    member did ${f}[rand_iops] IOPS, above its limit ${f}[member_iops]

# BEGIN GENERATED ROWS reads-and-writes (testbed suites --write)
uncached-1-clients
    [Documentation]    n clients each xrdcp random files of the origin through the DTN's
    ...    pass-through proxy to /dev/null; aggregate and per-client throughput.
    [Tags]    uncached    clients:1
    [Template]    Measure Point
    uncached    n=1

uncached-2-clients
    [Tags]    uncached    clients:2
    [Template]    Measure Point
    uncached    n=2

uncached-4-clients
    [Tags]    uncached    clients:4
    [Template]    Measure Point
    uncached    n=4

uncached-10-clients
    [Tags]    uncached    clients:10
    [Template]    Measure Point
    uncached    n=10

raid-write-default
    [Documentation]    10 parallel dd writers with conv=fdatasync on the RAID6 under a profile
    ...    (stripe_cache_size 256).
    [Tags]    raid    profile:default
    [Template]    Measure Point
    raid-write    profile=default

raid-write-default-unlimited
    [Documentation]    The same writers at stripe_cache_size 256 with every member's limits
    ...    lifted (the host's disk as it is), then the run's limits back.
    [Tags]    raid    profile:default    unlimited
    [Template]    Measure Point
    raid-write-unlimited    profile=default

raid-write-raid-stripe-32768
    [Documentation]    The same writers with stripe_cache_size 32768.
    [Tags]    raid    profile:raid-stripe-32768
    [Template]    Measure Point
    raid-write    profile=raid-stripe-32768

raid-write-raid-stripe-32768-unlimited
    [Tags]    raid    profile:raid-stripe-32768    unlimited
    [Template]    Measure Point
    raid-write-unlimited    profile=raid-stripe-32768
# END GENERATED ROWS reads-and-writes

direct-read-round-trips
    [Documentation]    What a read through each path waits for on the WAN: one client reads one
    ...    origin file through the pass-through proxy and, with the cache emptied, through the
    ...    caching proxy (a miss that fills it), with the origin at 0 ms and at the suite's RTT
    ...    (then back at it). The extra seconds at the RTT over the RTT and the MB read are the
    ...    round trips per MB: the pass-through forwards the client's reads as they come, the
    ...    cache fetches blocks ahead (`pfc.prefetch`). The pass-through is read twice, with the
    ...    run's read requests (`client_pgread`) and with the other kind: with kXR_pgread an
    ...    XrdCl before 5.9.2 re-reads pages of the pieces the proxy answers out of order, one
    ...    origin round trip each. Every read at both RTTs must succeed.
    [Tags]    uncached    mechanism
    ${near}=    Time One Read Each Way    0
    ${far}=    Time One Read Each Way    ${PARAMS}[origin_rtt_ms]
    ${other}=    Set Variable If    ${far}[pgread]    direct-read    direct-pgread
    FOR    ${r}    IN    ${near}    ${far}
        Record Metric    e2.single_read_seconds    ${r}[direct_s]    s    path=direct    origin_rtt_ms=${r}[rtt_ms]
        Record Metric    e2.single_read_seconds    ${r}[direct_other_s]    s    path=${other}    origin_rtt_ms=${r}[rtt_ms]
        Record Metric    e2.single_read_seconds    ${r}[miss_s]    s    path=cache-miss    origin_rtt_ms=${r}[rtt_ms]
    END
    ${trips}=    Round Trips Per MB    ${near}    ${far}
    FOR    ${path}    IN    direct    ${other}    cache-miss
        Record Metric    e2.round_trips_per_mb    ${trips}[${path}]    round trips/MB    path=${path}
        ...    origin_rtt_ms=${far}[rtt_ms]
    END
    Log    round trips per MB at ${far}[rtt_ms] ms: direct ${trips}[direct], ${other} ${trips}[${other}], cache miss ${trips}[cache-miss]    console=True
    [Teardown]    Set Origin Behind The WAN    ${PARAMS}[origin_rtt_ms]

raid-write-speedup
    [Documentation]    The RAID write rate at stripe cache 32768 over 256 with the run's member
    ...    limits (emulated spindles), from this run's points; beside the paper's 11.7x.
    [Tags]    raid    summary
    RAID Write Speedup    ${DISKS}[spindles]

raid-write-speedup-unlimited
    [Documentation]    The same speed-up with the member limits lifted.
    [Tags]    raid    summary    unlimited
    Skip If    $DISKS['spindles'] == 'off'    the run's members have no limits: raid-write-speedup is the unlimited one
    RAID Write Speedup    off

# BEGIN GENERATED ROWS cache-and-competition (testbed suites --write)
cached-reads-default
    [Documentation]    The largest client count through the caching proxy: first reads are
    ...    misses that write the cache on RAID6, repeated reads are hits; judged from the
    ...    cache's own records. Stripe cache 256.
    [Tags]    cached    profile:default
    [Template]    Measure Point
    cached    profile=default

raid-read-write-default
    [Documentation]    Reads and writes compete on RAID6: direct readers alone, the writers
    ...    alone, then both at once for as long (fio on the array's filesystem); the rate of
    ...    each side together over alone. Stripe cache 256.
    [Tags]    raid    competition    profile:default
    [Template]    Measure Point
    read-write    profile=default

cached-reads-array-bound-default
    [Documentation]    The cache when the array, not the network, is the slow part: the members'
    ...    MB/s limit calibrated (two RAID writes) so that the array writes at the
    ...    paper's 60 of 1300 MB/s of the network measured in the row, then first
    ...    reads through the emptied cache. Stripe cache 256.
    [Tags]    cached    array-bound    profile:default
    [Template]    Measure Point
    array-bound    profile=default

cached-reads-raid-stripe-32768
    [Documentation]    The same with stripe cache 32768.
    [Tags]    cached    profile:raid-stripe-32768
    [Template]    Measure Point
    cached    profile=raid-stripe-32768

raid-read-write-raid-stripe-32768
    [Documentation]    The same at stripe cache 32768, the paper's setting when its cached
    ...    reads stopped at ~700 MB/s while the cache was being written.
    [Tags]    raid    competition    profile:raid-stripe-32768
    [Template]    Measure Point
    read-write    profile=raid-stripe-32768

cached-reads-array-bound-raid-stripe-32768
    [Documentation]    The same at stripe cache 32768, against the paper's 700 of 1300 MB/s.
    [Tags]    cached    array-bound    profile:raid-stripe-32768
    [Template]    Measure Point
    array-bound    profile=raid-stripe-32768
# END GENERATED ROWS cache-and-competition

route-to-dtn
    [Documentation]    A job sent by HTCondor-C to the DTN's schedd runs on the DTN's slots.
    [Tags]    routing
    ${r}=    Route A Job    dtn_can_run=True
    Record Metric    e2.submit_to_start    ${r}[seconds]    s    route=${r}[route]
    Should Be Equal    ${r}[host]    dtn

flock-to-pool
    [Documentation]    A job whose requirements the DTN cannot meet flocks to the worker pool.
    [Tags]    routing
    ${r}=    Route A Job    dtn_can_run=False
    Record Metric    e2.submit_to_start    ${r}[seconds]    s    route=${r}[route]
    Should Start With    ${r}[host]    worker

# BEGIN GENERATED ROWS claims (testbed suites --write)
e2-stripe-cache-speeds-up-raid-writes
    [Documentation]    seed 001, section 3 (System scalability), Figures 4 and 5: "Writing 10 files simultaneously revealed that on average, our RAID 6 speeds couldn't exceed 60 MB/s. ... We discovered that by increasing `/sys/block/md0/md/stripe_cache_size` from the default size of 256 pages to the maximum 32768 pages, we were able to remove the bottleneck. As shown in Figure 5, after the change, our write performance averages at 700 MB/s, which is more than a factor of 10 increase in performance."
    ...    A claim, judged over every trial of the run (e2.raid_write_rate{spindles=emulated,stripe_cache_size=32768,writers=10} / e2.raid_write_rate{spindles=emulated,stripe_cache_size=256,writers=10}, paper > 1 (11.7, band x2)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e2-stripe-cache-speeds-up-raid-writes

e2-reads-drop-under-raid-writes
    [Documentation]    seed 001, section 3 (System scalability), Figures 6(b) and 6(c): "This is because the incoming network is bound by the cache write speed, and also because read performance in RAID 6 degrades when there are simultaneous reads and writes (Figures 6(c) and 6(b)) happening."
    ...    Checked in every trial of the run (e2.raid_read_under_writes{spindles=emulated,stripe_cache_size=32768,writers=10}, paper < 1).
    [Tags]    claim    check
    [Template]    Paper Claim Should Hold
    e2-reads-drop-under-raid-writes

e2-cache-slower-than-direct
    [Documentation]    seed 001, section 3 (System scalability), Figures 2 and 3 (default stripe cache of 256): "Next we ran a test with 10 clients in parallel, and as expected we were able to saturate the network interface at 10 gbps as shown in Figure 2. ... Next, we enabled the xrootd cache at UCI. Surprisingly, we hit a major bottleneck ... Except for occasional peaks, on average we could not download files faster than 300 MB/s or 2.4 gbps from UCSC. ... The write speed of the RAID 6 turned out to be the culprit responsible for choking our system."
    ...    A claim, judged over every trial of the run (e2.cached_over_uncached{spindles=emulated,stripe_cache_size=256}, paper < 0.23).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e2-cache-slower-than-direct

e2-cache-slower-than-direct-stripe-32768
    [Documentation]    seed 001, section 3 (System scalability), Figure 6(a) (stripe cache 32768): "Figure 6 shows the test with caching enabled, repeated after the RAID tweak. ... The downloads started around 640MB/s. ... Notice also that whether served from the network, or off disk, the read speed did not appear to exceed 700 MB/s, even though our tests without cache got up to 1.3 GB/s. This is because the incoming network is bound by the cache write speed"
    ...    A claim, judged over every trial of the run (e2.cached_over_uncached{spindles=emulated,stripe_cache_size=32768}, paper < 1 (0.49, band x1.5)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e2-cache-slower-than-direct-stripe-32768

e2-cache-slower-than-direct-array-bound
    [Documentation]    seed 001, section 3 (System scalability), Figures 2 and 3 (default stripe cache of 256): "Next we ran a test with 10 clients in parallel, and as expected we were able to saturate the network interface at 10 gbps as shown in Figure 2. ... Next, we enabled the xrootd cache at UCI. Surprisingly, we hit a major bottleneck ... Except for occasional peaks, on average we could not download files faster than 300 MB/s or 2.4 gbps from UCSC. ... The write speed of the RAID 6 turned out to be the culprit responsible for choking our system."
    ...    A claim, judged over every trial of the run (e2.cached_over_uncached{spindles=array-bound,stripe_cache_size=256}, paper < 0.23).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e2-cache-slower-than-direct-array-bound

e2-cache-slower-than-direct-stripe-32768-array-bound
    [Documentation]    seed 001, section 3 (System scalability), Figure 6(a) (stripe cache 32768): "Figure 6 shows the test with caching enabled, repeated after the RAID tweak. ... The downloads started around 640MB/s. ... Notice also that whether served from the network, or off disk, the read speed did not appear to exceed 700 MB/s, even though our tests without cache got up to 1.3 GB/s. This is because the incoming network is bound by the cache write speed"
    ...    A claim, judged over every trial of the run (e2.cached_over_uncached{spindles=array-bound,stripe_cache_size=32768}, paper < 1 (0.49, band x1.5)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e2-cache-slower-than-direct-stripe-32768-array-bound
# END GENERATED ROWS claims

*** Keywords ***
Put The Origin Behind The WAN
    [Documentation]    The site healthy, the run's folder open, `default` in force and the
    ...    origin behind the WAN: what every row needs.
    Start Experiment On A Healthy Site    e2
    ${params}=    Experiment Parameters    e2
    Set Suite Variable    ${PARAMS}    ${params}
    Apply Profile If Needed    default
    ${disks}=    Apply The Member Disk Limits
    Set Suite Variable    ${DISKS}    ${disks}
    ${origin}=    Set Origin Behind The WAN    ${params}[origin_rtt_ms]
    Set Suite Variable    ${ORIGIN}    ${origin}

Finish E2 And Restore The Site
    [Documentation]    The topology's member limits back (a --set may have changed them), then
    ...    what every experiment restores.
    Restore Step    Restore The Topology Disk Limits
    Finish Experiment And Restore The Site

RAID Write Speedup
    [Arguments]    ${spindles}
    ${speedup}=    Stripe Cache Speedup    ${spindles}
    Skip If    $speedup is None    needs RAID writes at stripe cache 256 and 32768 with spindles ${spindles} in this run
    Record Metric    e2.raid_write_speedup    ${speedup}    ratio    spindles=${spindles}
    ...    member_mb_per_s=${DISKS}[member_mb_per_s]    member_iops=${DISKS}[member_iops]
    Should Be True    $speedup > 0    speedup ${speedup}

