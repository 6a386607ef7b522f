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
...               clients 1, 2, 4 (quick) or 1, 2, 4, 10 (full) run on the worker VMs, each
...               reading 2 (quick) or 5 (full) random files to /dev/null; 10 writers write
...               24 MB (quick) or 128 MB (full) each. The virtual disks of the RAID are files
...               on one physical host disk, so RAID6 here cannot show 12 spindles' parallelism;
...               the suite reports what it measures. Profiles: `default` (stripe cache 256)
...               and `raid-stripe-32768`; override with --set clients=1,2 etc.
Resource          ../resources/experiment.resource
Library           ../libraries/SiteInABoxLibrary.py    ${SCALE}
Suite Setup       Start Experiment On A Healthy Site    e2
Suite Teardown    Finish Experiment And Restore The Site

*** Test Cases ***
The Origin Sits Behind The WAN
    [Documentation]    WAN latency between the DTN and the remote origin site.
    Apply Profile    default
    ${client_list}    ${origin_rtt}=    E2 Parameters
    Set Origin Behind The WAN    ${origin_rtt}

Without Cache: Parallel Clients Read Remote Files Through The DTN
    [Documentation]    n clients each xrdcp random files of the origin through the DTN's
    ...    pass-through proxy to /dev/null; aggregate and per-client throughput.
    ${client_list}    ${origin_rtt}=    E2 Parameters
    FOR    ${n}    IN    @{client_list}
        Read Origin Files Through The DTN    ${n}    cached=False
    END

RAID6 Writes With Each Stripe Cache Setting
    [Documentation]    10 parallel dd writers with conv=fdatasync on the RAID6, once per profile
    ...    (stripe_cache_size 256, then 32768).
    ${profiles}=    Profiles To Compare
    FOR    ${profile}    IN    @{profiles}
        Apply Profile    ${profile}
        Write To RAID6 In Parallel
    END
    Summarise RAID Writes

With Cache: First Reads Fill The Cache On RAID6, Repeated Reads Hit It
    [Documentation]    The same clients through the caching proxy: first reads are misses that
    ...    write the cache on RAID6, repeated reads are hits; judged from the cache's own
    ...    records. Once per stripe cache setting.
    ${client_list}    ${origin_rtt}=    E2 Parameters
    ${n}=    Set Variable    ${client_list}[-1]
    ${profiles}=    Profiles To Compare
    FOR    ${profile}    IN    @{profiles}
        Apply Profile    ${profile}
        Clear The Cache
        ${first}    ${names}=    Read Origin Files Through The DTN    ${n}    cached=True    label=first_read
        Cache Should Report    ${names}    misses
        ${repeat}    ${names}=    Read Origin Files Through The DTN    ${n}    cached=True    label=repeat_read
        Cache Should Report    ${names}    hits
        Compare Cached With Uncached    ${n}    ${first}
        Cache Hit Rate Against Local Read    ${names}    ${repeat}
    END

Jobs Are Routed To The DTN With HTCondor-C And Flock Onward
    [Documentation]    A job sent by HTCondor-C to the DTN's schedd runs on the DTN's slots; one
    ...    whose requirements the DTN cannot meet flocks to the worker pool.
    ${host}=    Route A Job    dtn_can_run=True
    Should Be Equal    ${host}    dtn
    ${host}=    Route A Job    dtn_can_run=False
    Should Start With    ${host}    worker
