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
...               clients 1, 2 (ci), 1, 2, 4 (quick) or 1, 2, 4, 10 (full) run on the worker VMs,
...               each reading 1 (ci), 2 (quick) or 5 (full) random files to /dev/null; 10 writers
...               write 8 MB (ci), 24 MB (quick) or 128 MB (full) each. The virtual disks of the
...               RAID are files on one physical host disk, so RAID6 here cannot show 12 spindles'
...               parallelism; the suite reports what it measures. Profiles: `default` (stripe
...               cache 256) and `raid-stripe-32768`; override with --set clients=1,2 etc.
...               (testbed/experiments/e2_site.py declares the parameters and their scales).
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
Suite Teardown    Finish Experiment And Restore The Site
Test Tags         E2

*** Test Cases ***
origin-behind-wan
    [Documentation]    WAN latency between the DTN and the remote origin site (set in the
    ...    Suite Setup) is measured within 1 ms + 5% of the configured RTT.
    [Tags]    wan
    Measured RTT Should Match    ${PARAMS}[origin_rtt_ms]    ${ORIGIN}[measured]    ${ORIGIN}[base]

uncached-1-clients
    [Documentation]    n clients each xrdcp random files of the origin through the DTN's
    ...    pass-through proxy to /dev/null; aggregate and per-client throughput.
    [Tags]    uncached    clients:1
    [Template]    Uncached Read Point
    1

uncached-2-clients
    [Tags]    uncached    clients:2
    [Template]    Uncached Read Point
    2

uncached-4-clients
    [Tags]    uncached    clients:4
    [Template]    Uncached Read Point
    4

uncached-10-clients
    [Tags]    uncached    clients:10
    [Template]    Uncached Read Point
    10

raid-write-default
    [Documentation]    10 parallel dd writers with conv=fdatasync on the RAID6 under a profile
    ...    (stripe_cache_size 256).
    [Tags]    raid    profile:default
    [Template]    RAID Write Point
    default

raid-write-raid-stripe-32768
    [Documentation]    The same writers with stripe_cache_size 32768.
    [Tags]    raid    profile:raid-stripe-32768
    [Template]    RAID Write Point
    raid-stripe-32768

raid-write-speedup
    [Documentation]    The RAID write rate at stripe cache 32768 over 256, from this run's points.
    [Tags]    raid    summary
    ${slow}=    Recorded Values    e2.raid_write_rate    stripe_cache_size=256
    ${fast}=    Recorded Values    e2.raid_write_rate    stripe_cache_size=32768
    Skip If    not $slow or not $fast    needs RAID writes at stripe cache 256 and 32768 in this run
    ${speedup}=    Evaluate    $fast[-1] / $slow[-1]
    Record Metric    e2.raid_write_speedup    ${speedup}    ratio
    Should Be True    $speedup > 0    speedup ${speedup}

cached-reads-default
    [Documentation]    The largest client count through the caching proxy: first reads are
    ...    misses that write the cache on RAID6, repeated reads are hits; judged from the
    ...    cache's own records. Stripe cache 256.
    [Tags]    cached    profile:default
    [Template]    Cached Read Point
    default

cached-reads-raid-stripe-32768
    [Documentation]    The same with stripe cache 32768.
    [Tags]    cached    profile:raid-stripe-32768
    [Template]    Cached Read Point
    raid-stripe-32768

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

*** Keywords ***
Put The Origin Behind The WAN
    [Documentation]    The site healthy, the run's folder open, `default` in force and the
    ...    origin behind the WAN: what every row needs.
    Start Experiment On A Healthy Site    e2
    ${params}=    Experiment Parameters    e2
    Set Suite Variable    ${PARAMS}    ${params}
    Apply Profile    default
    ${origin}=    Set Origin Behind The WAN    ${params}[origin_rtt_ms]
    Set Suite Variable    ${ORIGIN}    ${origin}

Uncached Read Point
    [Documentation]    n clients through the pass-through proxy, under `default`.
    [Arguments]    ${n}
    Skip Unless In This Run    ${PARAMS}    clients=${n}
    Apply Profile If Needed    default
    ${r}=    Read Origin Files Through The DTN    ${n}    cached=False
    Should Be Equal As Integers    ${r}[failed]    0    msg=${r}[failed] of ${r}[reads] reads through port ${r}[port] failed
    Record Metric    e2.uncached_rate    ${r}[aggregate]    MB/s    clients=${r}[clients]    profile=${r}[profile]
    Record Metric    e2.uncached_per_client_rate    ${r}[per_client]    MB/s    clients=${r}[clients]    profile=${r}[profile]
    Record Metric Series    e2.dtn_tx_rate    MB/s    ${r}[net_series]    column=2    phase=${r}[phase]    profile=${r}[profile]
    Should Be True    $r['aggregate'] > 0    aggregate ${r}[aggregate] MB/s

RAID Write Point
    [Arguments]    ${profile}
    Skip Unless In This Run    ${PARAMS}    profile=${profile}
    Apply Profile If Needed    ${profile}
    ${w}=    Write To RAID6 In Parallel
    Record Metric    e2.raid_write_rate    ${w}[rate]    MB/s
    ...    stripe_cache_size=${w}[stripe_cache_size]    writers=${w}[writers]    profile=${w}[profile]
    Record Metric Series    e2.raid_write_rate_over_time    MB/s    ${w}[series]    column=2
    ...    stripe_cache_size=${w}[stripe_cache_size]    profile=${w}[profile]
    Should Be True    $w['rate'] > 0    RAID write rate ${w}[rate] MB/s

Record Cached Round
    [Documentation]    One round through the caching proxy into the run's metrics.
    [Arguments]    ${r}    ${rate_metric}    ${per_client_metric}
    Record Metric    ${rate_metric}    ${r}[aggregate]    MB/s
    ...    clients=${r}[clients]    profile=${r}[profile]    stripe_cache_size=${r}[stripe_cache_size]
    Record Metric    ${per_client_metric}    ${r}[per_client]    MB/s
    ...    clients=${r}[clients]    profile=${r}[profile]    stripe_cache_size=${r}[stripe_cache_size]
    Record Metric Series    e2.dtn_tx_rate    MB/s    ${r}[net_series]    column=2    phase=${r}[phase]    profile=${r}[profile]
    Record Metric Series    e2.raid_read_rate_during    MB/s    ${r}[md_series]    column=1    phase=${r}[phase]    profile=${r}[profile]
    Record Metric Series    e2.raid_write_rate_during    MB/s    ${r}[md_series]    column=2    phase=${r}[phase]    profile=${r}[profile]

Cached Read Point
    [Arguments]    ${profile}
    Skip Unless In This Run    ${PARAMS}    profile=${profile}
    Apply Profile If Needed    ${profile}
    ${n}=    Set Variable    ${PARAMS}[clients][-1]
    Clear The Cache
    ${first}=    Read Origin Files Through The DTN    ${n}    cached=True    label=first_read
    Should Be Equal As Integers    ${first}[failed]    0    msg=${first}[failed] of ${first}[reads] first reads failed
    Record Cached Round    ${first}    e2.first_read_rate    e2.first_read_per_client_rate
    Cache Should Report    ${first}[names]    misses
    ${repeat}=    Read Origin Files Through The DTN    ${n}    cached=True    label=repeat_read
    Should Be Equal As Integers    ${repeat}[failed]    0    msg=${repeat}[failed] of ${repeat}[reads] repeated reads failed
    Record Cached Round    ${repeat}    e2.repeat_read_rate    e2.repeat_read_per_client_rate
    Cache Should Report    ${repeat}[names]    hits
    ${uncached}=    Recorded Values    e2.uncached_rate    clients=${n}
    IF    $uncached and $uncached[-1]
        Record Metric    e2.cached_over_uncached    ${{ $first['aggregate'] / $uncached[-1] }}    ratio
        ...    clients=${n}    stripe_cache_size=${first}[stripe_cache_size]    profile=${first}[profile]
    END
    ${local}=    DTN Local Read Rate    ${repeat}[names]
    Record Metric    e2.dtn_local_read_rate    ${local}    MB/s    stripe_cache_size=${repeat}[stripe_cache_size]    profile=${repeat}[profile]
    Record Metric    e2.hit_over_local_read    ${{ $repeat['aggregate'] / $local }}    ratio
    ...    stripe_cache_size=${repeat}[stripe_cache_size]    profile=${repeat}[profile]
