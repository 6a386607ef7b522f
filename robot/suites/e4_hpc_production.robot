*** Settings ***
Documentation     E4 - Physics data production on HPC (seed 003_f655f760dfef3c99, STAR on Cori).
...
...               Method. An HPC node is allocated whole: here a worker startd switched for the
...               run to one partitionable slot that one whole-node job claims whole. The job
...               starts as the paper's does, each part timed (the table's (T)): it copies a
...               calibration DB dump from a shared area to node-local scratch, starts a private
...               MariaDB as the job's user and loads the dump, and - after a random start delay
...               that spreads the load - reads the software environment (many small files) from
...               a shared area the submit host exports read-only over NFS. Then it starts N
...               "reconstruction" tasks: per event, STAR-style indexed calibration look-ups and
...               CPU work; events per task from a Gaussian. Job Start Efficiency E1 = (total -
...               T) / total; Event Efficiency E2 = the tasks' CPU time over the real core
...               seconds the node could give them (the paper's CPU/real when each task has a
...               core; the workers here have fewer cores than tasks); Total = nodes running
...               tasks / nodes allocated x E1 x E2. Two layouts in one run: the DB on every node
...               next to its tasks, and one node (the DTN, another VM) dedicated to the DB,
...               serving the task nodes over the site network. The idle tail: each task's end as
...               a fraction of its node's time, and the allocated CPU left idle at the end; the
...               event service (beyond the paper) back-fills idle task slots with short tasks
...               predicted to end before the node's last task. The throughput estimator fits a
...               Gaussian to the per-event CPU time of a calibration run and predicts the
...               co-located node's job length.
...
...               Scales (testbed/experiments/e4/hpc.py): ci 1 node x 2 tasks, 2 MB dump; quick
...               2 nodes x 8 tasks, 50 MB; full 10 nodes x 60 tasks, 300 MB, delays 1-60 s.
...               Paper: 99.30% (DB on the node) vs 89.44% (1 of 11 nodes dedicated to the DB).
Resource          ../resources/experiment.resource
Library           ../libraries/HpcLibrary.py    ${SCALE}
Suite Setup       Prepare The Nodes
Suite Teardown    Restore The Nodes And Finish
Test Tags         E4

*** Variables ***
${MIN_TAIL}       0.01    # back-fill is checked where the idle tail is at least 1% of the task slots

*** Test Cases ***
# BEGIN GENERATED ROWS layouts (testbed suites --write)
colocated
    [Documentation]    The DB on every node, next to its tasks (the paper's KNL 1-node rows).
    [Tags]    layout:colocated    efficiency
    [Template]    Measure Point
    production    layout=colocated    backfill=${FALSE}

dedicated
    [Documentation]    One node dedicated to the DB serving the task nodes over the site network
    ...    (the paper's 11 nodes, 1 dedicated). Its nodes allocated exceed the nodes running tasks.
    [Tags]    layout:dedicated    efficiency
    [Template]    Measure Point
    production    layout=dedicated    backfill=${FALSE}

colocated-backfill
    [Documentation]    Beyond the paper: the co-located layout with the event service back-filling
    ...    idle task slots in the tail.
    [Tags]    layout:colocated    backfill
    [Template]    Measure Point
    production    layout=colocated    backfill=${TRUE}
# END GENERATED ROWS layouts

dedicated-over-colocated
    [Documentation]    The two layouts' totals from this trial as a ratio: the dedicated DB node
    ...    costs its node (paper 89.44 / 99.30 = 0.90).
    [Tags]    summary    efficiency
    ${co}=    Recorded Values    e4.total_efficiency    layout=colocated    backfill=0
    ${ded}=    Recorded Values    e4.total_efficiency    layout=dedicated    backfill=0
    Skip If    not $co or not $ded    needs both layouts in this run
    Should Be True    $co[-1] > 0 and $ded[-1] > 0    a layout measured no efficiency: co-located ${co}, dedicated ${ded}
    Record Metric    e4.total_dedicated_over_colocated    ${{ $ded[-1] / $co[-1] }}    ratio
    # One trial's direction is noise (0.84 and 1.03 in two trials at quick): the claim row
    # e4-dedicated-db-lowers-total-efficiency judges it over every trial, and fails a contradiction.
    Log    dedicated / co-located total ${{ '%.3f' % ($ded[-1] / $co[-1]) }} (paper 0.90)    console=True

backfill-recovery
    [Documentation]    The idle-tail fraction of allocated task slots with and without back-fill.
    [Tags]    summary    backfill
    ${without}=    Recorded Values    e4.idle_tail_slots    layout=colocated    backfill=0
    ${with}=    Recorded Values    e4.idle_tail_slots    layout=colocated    backfill=1
    Skip If    not $without or not $with    needs the co-located rows with and without back-fill
    Record Metric    e4.backfill_recovered    ${{ $without[-1] - $with[-1] }}    fraction
    Log    idle tail ${{ '%.4f' % $without[-1] }} without, ${{ '%.4f' % $with[-1] }} with back-fill    console=True
    # The two rows are separate runs with their own random task lengths: a tail under
    # ${MIN_TAIL} of the slots (ci's 2 tasks: 0.002) is within that noise, and is logged only.
    IF    $without[-1] >= ${MIN_TAIL}
        Should Be True    $with[-1] < $without[-1]
        ...    back-fill left as much of the tail idle (${with}[-1]) as none (${without}[-1])
    ELSE
        Log    idle tail without back-fill under ${MIN_TAIL} of the slots: too small to compare    console=True
    END

estimator
    [Documentation]    A calibration run (as many nodes at once as the production: the guests
    ...    share the host's cores), a Gaussian fit of its per-event CPU time, and the co-located
    ...    node's job length predicted from it, with the prediction's error.
    [Tags]    estimator
    Skip If    not ${PARAMS}[calib_tasks]    calib_tasks is 0 at ${SCALE} scale
    ${c}=    Calibrate The Estimator
    Should Be True    $c['mu'] > 0 and $c['events'] >= 2    calibration measured no event time: ${c}
    ${r}=    Predict The Colocated Node Length
    Should Be True    $r['predicted'] > 0

# BEGIN GENERATED ROWS claims (testbed suites --write)
e4-dedicated-db-lowers-total-efficiency
    [Documentation]    seed 003, section 5 (STAR Efficiency on Cori), and Figure 5 (the table's Total Efficiency column): "When dedicating a node on Cori as a head node to run the MySQL Database server serving 10 worker nodes (1 node to 11 nodes) the Total Efficiency of this model is 89.44%, this is how we ran our workflow previously. When combining MySQL DB and STAR tasks on the same node, the Total Efficiency is 99.30%. Obviously, it is better for the worker nodes to self-serve the DB as the gain is significant"
    ...    A claim, judged over every trial of the run (e4.total_efficiency{backfill=0,layout=dedicated} / e4.total_efficiency{backfill=0,layout=colocated}, paper < 1 (0.9007, band +- 5%)).
    [Tags]    claim
    [Template]    Paper Claim Should Hold
    e4-dedicated-db-lowers-total-efficiency

e4-dedicated-db-node-runs-no-tasks
    [Documentation]    seed 003, section 4 (Database Server on Cori Batch Nodes): "we dedicate an entire node to run the DB only, while all its remaining CPU cores sit idle"
    ...    Checked in every trial of the run (e4.nodes_running_tasks{backfill=0,layout=dedicated} / e4.nodes_allocated{backfill=0,layout=dedicated}, paper < 1).
    [Tags]    claim    check
    [Template]    Paper Claim Should Hold
    e4-dedicated-db-node-runs-no-tasks

e4-colocated-startup-slower-on-one-core
    [Documentation]    this testbed: On this testbed, whose worker VMs have one emulated core, a node's start-up (T) takes longer with its own DB (co-located) than with the DB on a dedicated node: the node's MariaDB start and dump load run on the same core as its software-environment read.
    ...    A finding, judged over every trial of the run (e4.startup_seconds{backfill=0,layout=colocated,part=total} / e4.startup_seconds{backfill=0,layout=dedicated,part=total}, paper > 1).
    [Tags]    claim    finding
    [Template]    Paper Claim Should Hold
    e4-colocated-startup-slower-on-one-core

e4-backfill-shrinks-idle-tail
    [Documentation]    this testbed: An event service that launches short back-fill tasks, predicted to end before the node's last task, onto the task slots left idle in the tail cuts the co-located layout's idle tail: the fraction of allocated task-slot time left idle up to the last original task's end is smaller with back-fill than without.
    ...    A finding, judged over every trial of the run (e4.idle_tail_slots{backfill=1,layout=colocated} / e4.idle_tail_slots{backfill=0,layout=colocated}, paper < 1).
    [Tags]    claim    finding
    [Template]    Paper Claim Should Hold
    e4-backfill-shrinks-idle-tail

e4-estimator-error-bounded
    [Documentation]    this testbed: This testbed's throughput estimator - a Gaussian fitted to the per-event CPU time of a calibration run of as many nodes at once as the production, and the co-located node's job length predicted from it (the calibration's start-up, then the node's events at that per-event time over its cores, or its longest task if longer) - predicts that length within 25% either way.
    ...    A finding, judged over every trial of the run (e4.estimator_error{layout=colocated}, paper ~ 0 +- 0.25).
    [Tags]    claim    finding
    [Template]    Paper Claim Should Hold
    e4-estimator-error-bounded
# END GENERATED ROWS claims

*** Keywords ***
Prepare The Nodes
    Start Experiment On A Healthy Site    e4
    ${params}=    Experiment Parameters    e4
    Set Suite Variable    ${PARAMS}    ${params}
    Apply Profile If Needed    default
    Share The Software Area
    Use Whole Node Slots

Restore The Nodes And Finish
    Restore Step    Restore The Worker Slots
    Restore Step    Unshare The Software Area
    Finish Experiment And Restore The Site
