*** Settings ***
Documentation     E1 - Limits of the HTCondor transfer system (seed 000_0d45099a021f325e).
...
...               Can the schedd's own file transfer bring job output back to the submit
...               host at the rate the jobs produce it, and what does WAN latency cost?
...               Jobs on the oversubscribed sleeper workers "compute" for T seconds and
...               then leave S MB of output, which HTCondor transfers to the submit host.
...               The required write rate is W(n, l, s) = n jobs x size / length (eq. 1).
...
...               Scaling to the testbed: the paper saturated a 10 Gb/s NIC with 4000 jobs
...               x 250 MB / 30 min. Here every worker slot (at most 8 at ci scale, 32 at quick)
...               runs one job, and S is chosen so that W is 1.5x (ci, quick) or 2x (full) the
...               raw TCP rate measured between the same VMs in the same run (output capped at
...               4 MB ci, 16 MB quick, 256 MB full), because a VM link under TCG is bounded by the
...               emulated CPU, not by a NIC. The latency sweep uses W = 0.25x the rate HTCondor
...               achieved in the saturation test (the paper's W was a fraction of its schedd's) and 2W,
...               RTT 0 and 80 ms (ci: 2W only; quick: W and 2W) or 0, 10, 20, 40, 80 ms (full), for
...               every profile given (`testbed run e1 --profile default --profile wan-tuned`).
...               Override any parameter with --set, e.g. `--set rtts=0,20,40 --set sweep_jobs=16`
...               (testbed/experiments/e1/transfer.py declares them and their scales).
...
...               Scale model (docs/scaling.md): under TCG HTCondor moves a few MB/s in all, while one
...               stream with Table 4's 4 MB send window carries ~50 MB/s at 80 ms, so the paper's
...               window/RTT mechanism never binds on the unscaled rows. The rows of
...               table4-default-scaled and table4-updated-scaled keep the RTTs and multiply every
...               bandwidth-like quantity by k = HTCondor's achieved rate in this run's saturation test
...               (trial 1's in a repeated run) / the paper's 555 MB/s: both columns' socket buffer
...               limits (tcp_rmem/tcp_wmem maxima, rmem_max/wmem_max; the min field, counts and flags
...               kept) and the sweep's W (k x 55 MB/s, 2W k x 110), with the paper's 10 concurrent
...               transfers. The Suite Setup makes them after the saturation test, applies them through
...               the same profile apply and read-back, and writes k, the rates and every scaled value
...               into the run's manifest (`scale_model`, `profile_contents`). The number the model keeps
...               is R = concurrency x window / RTT / demand (concurrency: MAX_CONCURRENT_DOWNLOADS, at
...               most the point's jobs; window: the smaller of the workers' tcp_wmem and the submit
...               host's tcp_rmem maximum; demand: the point's W): above 1 the windows carry the demand,
...               and its inverse is about the share of compute time a job's output spends in flight when
...               they bind. testbed/experiments/e1/e1_scale.py computes it: the Suite Setup prints the
...               paper's R beside this site's for every profile, rate and RTT of the run, each point
...               records its own (e1.window_capacity_over_demand, at the measured RTT) and
...               `testbed compare` prints them beside the paper's. Over the paper's R at the same RTT,
...               this site's is (concurrency here / 10) x (55 MB/s / W here) x (window here / Table 4's):
...               unscaled that is 55 MB/s over sweep_load x a few MB/s; scaled, (concurrency here) / 10.
...
...               Metric of the sweep (paper, section 3.1): CPU efficiency lost = wall time a
...               job holds its slot for transfers (input + output; ActivationSetupDuration +
...               ActivationTeardownDuration) / wall time it computes (ActivationExecutionDuration).
...
...               One test per measured point. The raw TCP rate and the saturation test size the
...               sweep's W, so they run once in the Suite Setup (recorded there, passed on as
...               ${TCP} and ${SATURATION}); the tests `raw-tcp` and `saturation` assert on them.
...               The sweep has one row per point of the full scale (RTT x rate x profile, for the
...               paper's two Table 4 columns table4-default and table4-updated, on an HTCondor 8.6-like
...               site: 10 concurrent uploads, unencrypted transfers; the same two scaled to this site
...               (table4-default-scaled, table4-updated-scaled); and this site's own default,
...               wan-tuned and transfer-plain); a row that is not a point of this
...               run's scale and --set parameters, or whose profile is not compared, is skipped
...               with a message saying so. Rerun one point with e.g. `--test rtt80-2W-wan-tuned` or
...               `--include RTT80AND2W`. `latency-shape` computes the paper's ratios from the
...               points recorded in this run.
Resource          ../resources/experiment.resource
Library           ../libraries/TransferLibrary.py    ${SCALE}
Suite Setup       Measure The Ceilings
Suite Teardown    Finish Experiment And Restore The Site
Test Tags         E1

*** Test Cases ***
raw-tcp
    [Documentation]    iperf3 between the same VMs that carry the job output: the ceiling
    ...    (measured in the Suite Setup, under the first profile given; a scaled one's base).
    [Tags]    tcp
    Should Be True    $TCP['rate'] > 0    raw TCP ${TCP}[sender] -> submit measured ${TCP}[rate] MB/s

saturation
    [Documentation]    Table 3 and Figure 1: expected W beside the achieved rate; the submit
    ...    host's receive rate over time; HTCondor's sustained rate as a fraction of raw TCP.
    ...    Every job completes and its output arrives whole; the rates are within physical
    ...    bounds (the sustained receive rate, sampled every second, at most 1.1 x raw TCP).
    [Tags]    saturation
    Should Be Equal As Integers    ${SATURATION}[completed]    ${SATURATION}[jobs]
    ...    msg=${SATURATION}[completed] of ${SATURATION}[jobs] saturation jobs completed
    Should Be Empty    ${SATURATION}[bad_outputs]
    ...    msg=jobs ${SATURATION}[bad_outputs] did not return ${SATURATION}[size_mb] MB of output
    Should Be True    $SATURATION['achieved'] > 0 and $SATURATION['sustained'] > 0
    ...    achieved ${SATURATION}[achieved] MB/s, sustained ${SATURATION}[sustained] MB/s
    Should Be True    $SATURATION['sustained'] <= 1.1 * $TCP['rate']
    ...    sustained ${SATURATION}[sustained] MB/s is above 1.1 x raw TCP (${TCP}[rate] MB/s)
    Should Be True    0 < $SATURATION['cpu_efficiency'] <= 1
    ...    CPU efficiency ${SATURATION}[cpu_efficiency] is not a fraction

# BEGIN GENERATED ROWS points (testbed suites --write)
rtt0-W-table4-default
    [Tags]    RTT0    W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=0    factor=1

rtt0-2W-table4-default
    [Tags]    RTT0    2W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=0    factor=2

rtt10-W-table4-default
    [Tags]    RTT10    W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=10    factor=1

rtt10-2W-table4-default
    [Tags]    RTT10    2W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=10    factor=2

rtt20-W-table4-default
    [Tags]    RTT20    W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=20    factor=1

rtt20-2W-table4-default
    [Tags]    RTT20    2W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=20    factor=2

rtt40-W-table4-default
    [Tags]    RTT40    W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=40    factor=1

rtt40-2W-table4-default
    [Tags]    RTT40    2W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=40    factor=2

rtt80-W-table4-default
    [Tags]    RTT80    W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=80    factor=1

rtt80-2W-table4-default
    [Tags]    RTT80    2W    profile:table4-default
    [Template]    Measure Point
    latency    profile=table4-default    rtt=80    factor=2

rtt0-W-table4-updated
    [Tags]    RTT0    W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=0    factor=1

rtt0-2W-table4-updated
    [Tags]    RTT0    2W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=0    factor=2

rtt10-W-table4-updated
    [Tags]    RTT10    W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=10    factor=1

rtt10-2W-table4-updated
    [Tags]    RTT10    2W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=10    factor=2

rtt20-W-table4-updated
    [Tags]    RTT20    W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=20    factor=1

rtt20-2W-table4-updated
    [Tags]    RTT20    2W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=20    factor=2

rtt40-W-table4-updated
    [Tags]    RTT40    W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=40    factor=1

rtt40-2W-table4-updated
    [Tags]    RTT40    2W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=40    factor=2

rtt80-W-table4-updated
    [Tags]    RTT80    W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=80    factor=1

rtt80-2W-table4-updated
    [Tags]    RTT80    2W    profile:table4-updated
    [Template]    Measure Point
    latency    profile=table4-updated    rtt=80    factor=2

rtt0-W-table4-default-scaled
    [Tags]    RTT0    W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=0    factor=1

rtt0-2W-table4-default-scaled
    [Tags]    RTT0    2W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=0    factor=2

rtt10-W-table4-default-scaled
    [Tags]    RTT10    W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=10    factor=1

rtt10-2W-table4-default-scaled
    [Tags]    RTT10    2W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=10    factor=2

rtt20-W-table4-default-scaled
    [Tags]    RTT20    W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=20    factor=1

rtt20-2W-table4-default-scaled
    [Tags]    RTT20    2W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=20    factor=2

rtt40-W-table4-default-scaled
    [Tags]    RTT40    W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=40    factor=1

rtt40-2W-table4-default-scaled
    [Tags]    RTT40    2W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=40    factor=2

rtt80-W-table4-default-scaled
    [Tags]    RTT80    W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=80    factor=1

rtt80-2W-table4-default-scaled
    [Tags]    RTT80    2W    profile:table4-default-scaled
    [Template]    Measure Point
    latency    profile=table4-default-scaled    rtt=80    factor=2

rtt0-W-table4-updated-scaled
    [Tags]    RTT0    W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=0    factor=1

rtt0-2W-table4-updated-scaled
    [Tags]    RTT0    2W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=0    factor=2

rtt10-W-table4-updated-scaled
    [Tags]    RTT10    W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=10    factor=1

rtt10-2W-table4-updated-scaled
    [Tags]    RTT10    2W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=10    factor=2

rtt20-W-table4-updated-scaled
    [Tags]    RTT20    W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=20    factor=1

rtt20-2W-table4-updated-scaled
    [Tags]    RTT20    2W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=20    factor=2

rtt40-W-table4-updated-scaled
    [Tags]    RTT40    W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=40    factor=1

rtt40-2W-table4-updated-scaled
    [Tags]    RTT40    2W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=40    factor=2

rtt80-W-table4-updated-scaled
    [Tags]    RTT80    W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=80    factor=1

rtt80-2W-table4-updated-scaled
    [Tags]    RTT80    2W    profile:table4-updated-scaled
    [Template]    Measure Point
    latency    profile=table4-updated-scaled    rtt=80    factor=2

rtt0-W-default
    [Tags]    RTT0    W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=0    factor=1

rtt0-2W-default
    [Tags]    RTT0    2W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=0    factor=2

rtt10-W-default
    [Tags]    RTT10    W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=10    factor=1

rtt10-2W-default
    [Tags]    RTT10    2W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=10    factor=2

rtt20-W-default
    [Tags]    RTT20    W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=20    factor=1

rtt20-2W-default
    [Tags]    RTT20    2W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=20    factor=2

rtt40-W-default
    [Tags]    RTT40    W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=40    factor=1

rtt40-2W-default
    [Tags]    RTT40    2W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=40    factor=2

rtt80-W-default
    [Tags]    RTT80    W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=80    factor=1

rtt80-2W-default
    [Tags]    RTT80    2W    profile:default
    [Template]    Measure Point
    latency    profile=default    rtt=80    factor=2

rtt0-W-wan-tuned
    [Tags]    RTT0    W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=0    factor=1

rtt0-2W-wan-tuned
    [Tags]    RTT0    2W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=0    factor=2

rtt10-W-wan-tuned
    [Tags]    RTT10    W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=10    factor=1

rtt10-2W-wan-tuned
    [Tags]    RTT10    2W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=10    factor=2

rtt20-W-wan-tuned
    [Tags]    RTT20    W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=20    factor=1

rtt20-2W-wan-tuned
    [Tags]    RTT20    2W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=20    factor=2

rtt40-W-wan-tuned
    [Tags]    RTT40    W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=40    factor=1

rtt40-2W-wan-tuned
    [Tags]    RTT40    2W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=40    factor=2

rtt80-W-wan-tuned
    [Tags]    RTT80    W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=80    factor=1

rtt80-2W-wan-tuned
    [Tags]    RTT80    2W    profile:wan-tuned
    [Template]    Measure Point
    latency    profile=wan-tuned    rtt=80    factor=2

rtt0-W-transfer-plain
    [Tags]    RTT0    W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=0    factor=1

rtt0-2W-transfer-plain
    [Tags]    RTT0    2W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=0    factor=2

rtt10-W-transfer-plain
    [Tags]    RTT10    W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=10    factor=1

rtt10-2W-transfer-plain
    [Tags]    RTT10    2W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=10    factor=2

rtt20-W-transfer-plain
    [Tags]    RTT20    W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=20    factor=1

rtt20-2W-transfer-plain
    [Tags]    RTT20    2W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=20    factor=2

rtt40-W-transfer-plain
    [Tags]    RTT40    W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=40    factor=1

rtt40-2W-transfer-plain
    [Tags]    RTT40    2W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=40    factor=2

rtt80-W-transfer-plain
    [Tags]    RTT80    W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=80    factor=1

rtt80-2W-transfer-plain
    [Tags]    RTT80    2W    profile:transfer-plain
    [Template]    Measure Point
    latency    profile=transfer-plain    rtt=80    factor=2
# END GENERATED ROWS points

latency-shape
    [Documentation]    The paper's shape as ratios of this run's points: loss at 80 ms over
    ...    loss at 0 ms per profile and rate; default's loss over each other profile's at 80 ms.
    [Tags]    summary
    Skip If    0 not in $PARAMS['rtts'] or 80 not in $PARAMS['rtts']
    ...    the ratios need RTT 0 and 80 ms; this run has rtts ${PARAMS}[rtts]
    ${ratios}=    Latency Loss Ratios    0    80
    Should Not Be Empty    ${ratios}    msg=no profile and rate has efficiency lost recorded at both 0 and 80 ms
    FOR    ${r}    IN    @{ratios}
        Record Metric    e1.loss_80ms_over_0ms    ${r}[value]    ratio    &{r}[params]
        Should Be True    $r['value'] > 0    loss ratio ${r}[value] (${r}[params])
    END
    ${gains}=    Tuning Gains    80
    FOR    ${g}    IN    @{gains}
        Record Metric    e1.tuning_gain_at_max_rtt    ${g}[value]    ratio    &{g}[params]
    END

# BEGIN GENERATED ROWS claims (testbed suites --write)
e1-achieved-at-least-expected
    [Documentation]    seed 000, Table 3 and section 3 (Scaling Results): "Achieved throughput 800 MB/s ... Expected throughput 555 MB/s ... the achieved rate is also higher than the expected worst case rate. This was due to HTCondor doing re-transmissions"
    ...    A claim, judged over every trial of the run (e1.achieved_over_expected{profile=table4-default}, paper > 1 (1.44, band x1.44)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e1-achieved-at-least-expected

e1-htcondor-uses-the-nic
    [Documentation]    seed 000, Table 2, Table 3, section 3 (Scaling Results) and Figure 1 (caption): "Network Card 10Gbps Full Duplex ... Achieved throughput 800 MB/s ... can HTCondor utilize the capabilities of the NIC ... The positive results are seen in Figure 1. ... HTCondor transfers using over $6Gbps$ at peak usage"
    ...    A claim, judged over every trial of the run (e1.htcondor_over_tcp{profile=table4-default}, paper > 0.6 (0.64, band x1.25)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e1-htcondor-uses-the-nic

e1-loss-grows-with-rtt
    [Documentation]    seed 000, section 3.1 (Latency Measurements) and Figure 2 (red line): "Red line is at twice the expected write rate W ... We found there is an increasing CPU efficiency loss with an increase of latency (i.e distance matters)."
    ...    A claim, judged over every trial of the run (e1.efficiency_lost{profile=table4-default,rate=2W,rtt_ms=80} / e1.efficiency_lost{profile=table4-default,rate=2W,rtt_ms=0}, paper > 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e1-loss-grows-with-rtt

e1-tuning-lowers-loss-at-80ms
    [Documentation]    seed 000, section 3.1 (Latency Measurements), Figure 2 (yellow vs green line, both at W) and Table 4: "the yellow line is at the expected rate and the green line is at the expected rate after the network kernel tuning ... But it can be mitigated through some kernel parameter exchanges include in table 4."
    ...    A claim, judged over every trial of the run (e1.efficiency_lost{profile=table4-default,rate=W,rtt_ms=80} / e1.efficiency_lost{profile=table4-updated,rate=W,rtt_ms=80}, paper > 1).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e1-tuning-lowers-loss-at-80ms

e1-loss-grows-with-rtt-scaled
    [Documentation]    seed 000, section 3.1 and Figure 2 (red line); scale model of Table 4's Default Value column: "Red line is at twice the expected write rate W ... We found there is an increasing CPU efficiency loss with an increase of latency (i.e distance matters)."
    ...    A model, judged over every trial of the run (e1.efficiency_lost{profile=table4-default-scaled,rate=2W,rtt_ms=80} / e1.efficiency_lost{profile=table4-default-scaled,rate=2W,rtt_ms=0}, paper > 1).
    [Tags]    claim    model
    [Template]    Paper Claim Should Hold
    e1-loss-grows-with-rtt-scaled

e1-tuning-lowers-loss-at-80ms-scaled
    [Documentation]    seed 000, section 3.1, Figure 2 (yellow vs green line, both at W) and Table 4; scale model of both columns: "the yellow line is at the expected rate and the green line is at the expected rate after the network kernel tuning ... But it can be mitigated through some kernel parameter exchanges include in table 4."
    ...    A model, judged over every trial of the run (e1.efficiency_lost{profile=table4-default-scaled,rate=W,rtt_ms=80} / e1.efficiency_lost{profile=table4-updated-scaled,rate=W,rtt_ms=80}, paper > 1).
    [Tags]    claim    model
    [Template]    Paper Claim Should Hold
    e1-tuning-lowers-loss-at-80ms-scaled

e1-table4-updated-triples-window
    [Documentation]    seed 000, Table 4 (caption; tcp_rmem and tcp_wmem rows): "Kernel tuning to improve cpu efficiency lost on HTCondor transfer over the WAN ... <code>net.ipv4.tcp_rmem</code> 4096 87380 6291456 10240 87380 12582912 ... <code>net.ipv4.tcp_wmem</code> 4096 16384 4194304 10240 87380 12582912"
    ...    Checked in every trial of the run (e1.window_capacity_over_demand{profile=table4-updated,rate=W,rtt_ms=80} / e1.window_capacity_over_demand{profile=table4-default,rate=W,rtt_ms=80}, paper > 2.5).
    [Tags]    claim    check
    [Template]    Paper Claim Should Hold
    e1-table4-updated-triples-window

e1-table4-updated-triples-window-scaled
    [Documentation]    seed 000, Table 4 (caption; tcp_rmem and tcp_wmem rows); scale model of both columns: "Kernel tuning to improve cpu efficiency lost on HTCondor transfer over the WAN ... <code>net.ipv4.tcp_rmem</code> 4096 87380 6291456 10240 87380 12582912 ... <code>net.ipv4.tcp_wmem</code> 4096 16384 4194304 10240 87380 12582912"
    ...    Checked in every trial of the run (e1.window_capacity_over_demand{profile=table4-updated-scaled,rate=W,rtt_ms=80} / e1.window_capacity_over_demand{profile=table4-default-scaled,rate=W,rtt_ms=80}, paper > 2.5).
    [Tags]    claim    check
    [Template]    Paper Claim Should Hold
    e1-table4-updated-triples-window-scaled
# END GENERATED ROWS claims

*** Keywords ***
Measure The Ceilings
    [Documentation]    Raw TCP and HTCondor's saturation rate under the first profile given
    ...    (a scaled one's base), recorded here and passed on to the tests as suite variables;
    ...    then k from the saturation rate and the scaled profiles made from it.
    Start Experiment On A Healthy Site    e1
    ${params}=    Experiment Parameters    e1
    Set Suite Variable    ${PARAMS}    ${params}
    ${profiles}=    Profiles To Compare
    ${ceilings}=    Profile For The Ceilings    ${profiles}
    Apply Profile    ${ceilings}
    Clear WAN
    ${tcp}=    Measure Raw TCP Throughput    ${params}[tcp_seconds]
    Record Metric    e1.tcp_rate    ${tcp}[rate]    MB/s    sender=${tcp}[sender]    profile=${tcp}[profile]
    Set Suite Variable    ${TCP}    ${tcp}
    ${s}=    Run Saturation Test    ${tcp}[rate]
    ${p}=    Set Variable    ${s}[profile]
    Record Metric    e1.expected_rate    ${s}[expected]    MB/s
    ...    jobs=${s}[jobs]    size_mb=${s}[size_mb]    length_s=${s}[length_s]    profile=${p}
    Record Metric    e1.achieved_rate    ${s}[achieved]    MB/s    jobs=${s}[jobs]    size_mb=${s}[size_mb]    profile=${p}
    Record Metric    e1.sustained_rx_rate    ${s}[sustained]    MB/s    profile=${p}
    Record Metric    e1.achieved_over_expected    ${s}[achieved_over_expected]    ratio    profile=${p}
    Record Metric    e1.htcondor_over_tcp    ${s}[fraction]    ratio    profile=${p}
    Record Metric    e1.cpu_efficiency    ${s}[cpu_efficiency]    ratio    profile=${p}
    Record Metric Series    e1.submit_rx_rate    MB/s    ${s}[series]    column=1    phase=saturation    profile=${p}
    Set Suite Variable    ${SATURATION}    ${s}
    ${k}=    Scale The Paper Profiles To This Site    ${s}
    Record Metric    e1.scale_k    ${k}[k]    ratio    achieved_mb_s=${k}[achieved]    paper_mb_s=${k}[paper]    profile=${p}
