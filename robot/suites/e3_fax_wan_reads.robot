*** Settings ***
Documentation     E3 - FAX: reading ROOT files over the WAN through an XRootD federation
...               (seed 002_e7e8c88ce5ba9636, "Using FAX to test intra-US links", 2014).
...
...               Method, as the testbed runs it. Sites A, B, C (D at full): each storage
...               site is an XRootD data server on the DTN with its own port and read-only
...               export /e3/<site>, its cmsd subscribed to a federation redirector on the
...               DTN; a job opens /e3/<site>/<file> at the redirector and is redirected to
...               the owning server. Each compute site is a local user on the worker whose
...               packets leave from the site's own address (ip rule uidrange -> a routing
...               table with src), so each (compute, storage) cell crosses its own netem class
...               (u32 on source address and server port): 0 ms on the diagonal, the
...               suite's RTTs off it. The redirector belongs to site A: each compute site's
...               packets to its port cross the class of the site's cell with A, so a reader
...               at B or C pays its RTT to A on every open (recorded as redirect_rtt_ms on
...               each point). The files are TTrees of hundreds of float/int branches
...               in ZLIB baskets, written by uproot on the DTN and checksummed (sha256).
...
...               The analysis job (HTCondor, as the compute site's user) reads a subset of
...               the branches (the paper: 512 of 8543, 13% of the bytes) over root:// in
...               steps of the read-ahead cache (10 or 30 MB of baskets fetched with vectored
...               reads), decompresses and touches every event, and reports events/s, MB/s of
...               useful data and CPU efficiency. Every job's event count and content digest
...               are checked. Also: the concurrency scan in one off-diagonal cell, the
...               connectivity test (one job per file, 10% of the events, 30 MB cache) and
...               one job reading from the worker's disk and from memory.
...
...               Scales (testbed/experiments/e3_fax.py): ci 2x2 cells, 10 MB, jobs 1 and 4;
...               quick 3x3, 10 and 30 MB, jobs 1, 2, 4, 8; full 4x4, jobs up to 16.
...               Rows outside this run's scale are skipped with a message saying so.
Resource          ../resources/experiment.resource
Library           ../libraries/FaxLibrary.py
Suite Setup       Build The Sites
Suite Teardown    Remove The Sites And Finish
Test Tags         E3

*** Test Cases ***
rtt-per-cell
    [Documentation]    The RTT each cell's traffic sees, by TCP connect from the compute
    ...    site's source address to the storage site's server, matches the matrix; so does
    ...    the RTT to the redirector's port (the compute site's RTT to site A).
    [Tags]    rtt
    ${rows}=    Measure Every Cell RTT
    ${base}=    Evaluate    min(r['measured'] for r in $rows if r['configured'] == 0)
    FOR    ${r}    IN    @{rows}
        IF    $r['storage'] == 'redirector'
            Record Metric    e3.redirect_rtt_measured    ${r}[measured]    ms    compute=${r}[compute]
            ...    rtt_ms=${r}[configured]
        ELSE
            Record Metric    e3.rtt_measured    ${r}[measured]    ms    compute=${r}[compute]    storage=${r}[storage]
            ...    rtt_ms=${r}[configured]
        END
        Should Be True    abs($r['measured'] - $base - $r['configured']) <= 2 + 0.1 * $r['configured']
        ...    cell ${r}[compute]<-${r}[storage]: ${r}[measured] ms (base ${base}) for ${r}[configured] ms
    END

cell-a-reads-a-10mb
    [Tags]    matrix    compute:a    storage:a    cache:10
    [Template]    Matrix Cell
    a    a    10

cell-a-reads-b-10mb
    [Tags]    matrix    compute:a    storage:b    cache:10
    [Template]    Matrix Cell
    a    b    10

cell-a-reads-c-10mb
    [Tags]    matrix    compute:a    storage:c    cache:10
    [Template]    Matrix Cell
    a    c    10

cell-a-reads-d-10mb
    [Tags]    matrix    compute:a    storage:d    cache:10
    [Template]    Matrix Cell
    a    d    10

cell-b-reads-a-10mb
    [Tags]    matrix    compute:b    storage:a    cache:10
    [Template]    Matrix Cell
    b    a    10

cell-b-reads-b-10mb
    [Tags]    matrix    compute:b    storage:b    cache:10
    [Template]    Matrix Cell
    b    b    10

cell-b-reads-c-10mb
    [Tags]    matrix    compute:b    storage:c    cache:10
    [Template]    Matrix Cell
    b    c    10

cell-b-reads-d-10mb
    [Tags]    matrix    compute:b    storage:d    cache:10
    [Template]    Matrix Cell
    b    d    10

cell-c-reads-a-10mb
    [Tags]    matrix    compute:c    storage:a    cache:10
    [Template]    Matrix Cell
    c    a    10

cell-c-reads-b-10mb
    [Tags]    matrix    compute:c    storage:b    cache:10
    [Template]    Matrix Cell
    c    b    10

cell-c-reads-c-10mb
    [Tags]    matrix    compute:c    storage:c    cache:10
    [Template]    Matrix Cell
    c    c    10

cell-c-reads-d-10mb
    [Tags]    matrix    compute:c    storage:d    cache:10
    [Template]    Matrix Cell
    c    d    10

cell-d-reads-a-10mb
    [Tags]    matrix    compute:d    storage:a    cache:10
    [Template]    Matrix Cell
    d    a    10

cell-d-reads-b-10mb
    [Tags]    matrix    compute:d    storage:b    cache:10
    [Template]    Matrix Cell
    d    b    10

cell-d-reads-c-10mb
    [Tags]    matrix    compute:d    storage:c    cache:10
    [Template]    Matrix Cell
    d    c    10

cell-d-reads-d-10mb
    [Tags]    matrix    compute:d    storage:d    cache:10
    [Template]    Matrix Cell
    d    d    10

cell-a-reads-a-30mb
    [Tags]    matrix    compute:a    storage:a    cache:30
    [Template]    Matrix Cell
    a    a    30

cell-a-reads-b-30mb
    [Tags]    matrix    compute:a    storage:b    cache:30
    [Template]    Matrix Cell
    a    b    30

cell-a-reads-c-30mb
    [Tags]    matrix    compute:a    storage:c    cache:30
    [Template]    Matrix Cell
    a    c    30

cell-a-reads-d-30mb
    [Tags]    matrix    compute:a    storage:d    cache:30
    [Template]    Matrix Cell
    a    d    30

cell-b-reads-a-30mb
    [Tags]    matrix    compute:b    storage:a    cache:30
    [Template]    Matrix Cell
    b    a    30

cell-b-reads-b-30mb
    [Tags]    matrix    compute:b    storage:b    cache:30
    [Template]    Matrix Cell
    b    b    30

cell-b-reads-c-30mb
    [Tags]    matrix    compute:b    storage:c    cache:30
    [Template]    Matrix Cell
    b    c    30

cell-b-reads-d-30mb
    [Tags]    matrix    compute:b    storage:d    cache:30
    [Template]    Matrix Cell
    b    d    30

cell-c-reads-a-30mb
    [Tags]    matrix    compute:c    storage:a    cache:30
    [Template]    Matrix Cell
    c    a    30

cell-c-reads-b-30mb
    [Tags]    matrix    compute:c    storage:b    cache:30
    [Template]    Matrix Cell
    c    b    30

cell-c-reads-c-30mb
    [Tags]    matrix    compute:c    storage:c    cache:30
    [Template]    Matrix Cell
    c    c    30

cell-c-reads-d-30mb
    [Tags]    matrix    compute:c    storage:d    cache:30
    [Template]    Matrix Cell
    c    d    30

cell-d-reads-a-30mb
    [Tags]    matrix    compute:d    storage:a    cache:30
    [Template]    Matrix Cell
    d    a    30

cell-d-reads-b-30mb
    [Tags]    matrix    compute:d    storage:b    cache:30
    [Template]    Matrix Cell
    d    b    30

cell-d-reads-c-30mb
    [Tags]    matrix    compute:d    storage:c    cache:30
    [Template]    Matrix Cell
    d    c    30

cell-d-reads-d-30mb
    [Tags]    matrix    compute:d    storage:d    cache:30
    [Template]    Matrix Cell
    d    d    30

diagonal-vs-rtt-10mb
    [Documentation]    Off-diagonal over diagonal events/s per RTT from this run's cells; the
    ...    diagonal may not be slower than the farthest cell beyond 25% (TCG noise).
    [Tags]    matrix    summary    cache:10
    [Template]    Diagonal Versus RTT
    10

diagonal-vs-rtt-30mb
    [Documentation]    Off-diagonal over diagonal events/s per RTT from this run's cells; the
    ...    diagonal may not be slower than the farthest cell beyond 25% (TCG noise).
    [Tags]    matrix    summary    cache:30
    [Template]    Diagonal Versus RTT
    30

concurrency-1
    [Tags]    concurrency    jobs:1
    [Template]    Concurrency Point
    1

concurrency-2
    [Tags]    concurrency    jobs:2
    [Template]    Concurrency Point
    2

concurrency-4
    [Tags]    concurrency    jobs:4
    [Template]    Concurrency Point
    4

concurrency-8
    [Tags]    concurrency    jobs:8
    [Template]    Concurrency Point
    8

concurrency-16
    [Tags]    concurrency    jobs:16
    [Template]    Concurrency Point
    16

concurrency-spread
    [Documentation]    max / min events/s per job over the scan (the paper: 301-378, flat).
    [Tags]    concurrency    summary
    ${all}=    Recorded Values    e3.concurrency_events_per_s
    Skip If    not $all    no concurrency point ran
    ${s}=    Spread Of    ${all}
    Record Metric    e3.concurrency_spread    ${s}    ratio
    Log    concurrency spread (max/min events/s per job): ${s}    console=True

connectivity
    [Documentation]    One job per file of every storage site at compute site A, 10% of the
    ...    events, 30 MB cache; every job must read its events.
    [Tags]    connectivity
    ${rows}=    Connectivity Test    a
    FOR    ${r}    IN    @{rows}
        Record Metric    e3.connectivity_mb_per_s    ${r}[mb_per_s]    MB/s    storage=${r}[storage]    compute=a
        ...    redirect_rtt_ms=${r}[redirect_rtt_ms]
    END

baselines-disk-and-memory
    [Documentation]    One job reading a file from the worker's disk (page cache dropped) and
    ...    one from memory (tmpfs); the paper: 600 vs 1300 events/s.
    [Tags]    baseline
    ${b}=    Read Baselines
    FOR    ${kind}    IN    disk    memory
        Record Metric    e3.baseline_events_per_s    ${b}[${kind}][events_per_s]    ev/s    source=${kind}
        Record Metric    e3.baseline_mb_per_s    ${b}[${kind}][mb_per_s]    MB/s    source=${kind}
        Record Metric    e3.baseline_cpu_eff    ${b}[${kind}][cpu_eff]    ratio    source=${kind}
    END
    Record Metric    e3.disk_over_memory    ${{ $b['disk']['events_per_s'] / $b['memory']['events_per_s'] }}    ratio

e3-diagonal-beats-off-diagonal
    [Documentation]    seed 002, the site x site matrix: "off-diagonal (remote) reads are slower than reads at the storage's own site"
    ...    Judged over every trial of the run (e3.off_over_diag{cache_mb=10,rtt_ms=40}, paper < 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e3-diagonal-beats-off-diagonal

e3-penalty-grows-with-rtt
    [Documentation]    seed 002, RTT penalty vs RTT: "the RTT penalty grows with the round-trip time"
    ...    Judged over every trial of the run (e3.off_over_diag{cache_mb=10,rtt_ms=80} / e3.off_over_diag{cache_mb=10,rtt_ms=5}, paper < 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e3-penalty-grows-with-rtt

e3-larger-cache-lowers-penalty
    [Documentation]    seed 002, 10 MB vs 30 MB TTreeCache: "suboptimal TTC size and learning phase result in larger than optimal RTT penalty"
    ...    Judged over every trial of the run (e3.off_over_diag{cache_mb=30,rtt_ms=80} / e3.off_over_diag{cache_mb=10,rtt_ms=80}, paper > 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e3-larger-cache-lowers-penalty

e3-rate-flat-with-concurrency
    [Documentation]    seed 002, concurrency test (spread 1.26): "the per-job event rate stays flat as concurrent jobs are added, up to the server's limit"
    ...    Judged over every trial of the run (e3.concurrency_spread, paper < 1.5).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e3-rate-flat-with-concurrency

e3-disk-slower-than-memory
    [Documentation]    seed 002, baselines (600 vs 1300 events/s): "reading from disk is slower than from memory"
    ...    Judged over every trial of the run (e3.disk_over_memory, paper < 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e3-disk-slower-than-memory

*** Keywords ***
Build The Sites
    Start Experiment On A Healthy Site    e3
    ${params}=    Experiment Parameters    e3
    Set Suite Variable    ${PARAMS}    ${params}
    Build The Federation And Its Data

Remove The Sites And Finish
    Run Keyword And Ignore Error    Remove The Federation And Routing
    Finish Experiment And Restore The Site

Matrix Cell
    [Arguments]    ${compute}    ${storage}    ${cache}
    Skip Unless In This Run    ${PARAMS}    cache_mbs=${cache}
    ${n}=    Evaluate    ord('${compute}') - ord('a') + 1
    ${m}=    Evaluate    ord('${storage}') - ord('a') + 1
    Skip If    max(${n}, ${m}) > ${PARAMS}[sites]    site beyond the ${PARAMS}[sites] sites of ${SCALE} scale
    ${r}=    Read Cell    ${compute}    ${storage}    ${cache}
    Record Metric    e3.events_per_s    ${r}[events_per_s]    ev/s    storage=${storage}    compute=${compute}
    ...    rtt_ms=${r}[rtt_ms]    cache_mb=${cache}    redirect_rtt_ms=${r}[redirect_rtt_ms]
    Record Metric    e3.cpu_eff    ${r}[cpu_eff]    ratio    storage=${storage}    compute=${compute}
    ...    rtt_ms=${r}[rtt_ms]    cache_mb=${cache}    redirect_rtt_ms=${r}[redirect_rtt_ms]
    Record Metric    e3.mb_per_s    ${r}[mb_per_s]    MB/s    storage=${storage}    compute=${compute}
    ...    rtt_ms=${r}[rtt_ms]    cache_mb=${cache}    redirect_rtt_ms=${r}[redirect_rtt_ms]
    Should Be True    $r['events_per_s'] > 0    no events read in cell ${compute}<-${storage}

Diagonal Versus RTT
    [Arguments]    ${cache}
    Skip Unless In This Run    ${PARAMS}    cache_mbs=${cache}
    ${ratios}=    Off Diagonal Over Diagonal    ${cache}
    Skip If    not $ratios    needs diagonal and off-diagonal cells at ${cache} MB in this run
    FOR    ${rtt}    IN    @{ratios}
        Record Metric    e3.off_over_diag    ${ratios}[${rtt}]    ratio    rtt_ms=${rtt}    cache_mb=${cache}
    END
    ${far}=    Evaluate    max($ratios)
    Should Be True    $ratios[$far] <= 1.25
    ...    the ${far} ms cells read ${ratios}[${far}] x the diagonal's events/s: the diagonal is slower beyond noise

Concurrency Point
    [Arguments]    ${jobs}
    Skip Unless In This Run    ${PARAMS}    concurrency=${jobs}
    ${r}=    Read Concurrently    ${jobs}
    FOR    ${v}    IN    @{r}[per_job]
        Record Metric    e3.concurrency_events_per_s    ${v}    ev/s    jobs=${jobs}    rtt_ms=${r}[rtt_ms]
        ...    redirect_rtt_ms=${r}[redirect_rtt_ms]
    END
    Length Should Be    ${r}[per_job]    ${jobs}
