*** Settings ***
Documentation     End-to-end smoke of a running site (run on the `small` topology in CI).
...               A job runs on a sleeper worker through CCB; md0 is an active RAID6 with
...               the planned members; a file read through the DTN's caching proxy from the
...               origin has the origin's checksum. The central manager failover is a row of the
...               fault suite (robot/suites/faults.robot, test `active-cm-killed`).
...               The experiment machinery is checked too: a profile applied to the running
...               site reads back, and an emulated 40 ms RTT is measured within 1 ms + 5%.
Resource          ../resources/experiment.resource
Suite Setup       Start Experiment On A Healthy Site    smoke
Suite Teardown    Finish Experiment And Restore The Site
Test Tags         smoke

*** Test Cases ***
A Job Runs On A Sleeper Worker Through CCB
    [Tags]    condor    ccb
    ${n}=    Startds Should Be Reached Through CCB
    ${cluster}=    Submit Sleep Jobs    count=2    seconds=2
    Wait For Jobs    ${cluster}    count=2    timeout=600
    Jobs Should Have Run On Role    ${cluster}    worker

The DTN Stores Data On An Active RAID6
    [Tags]    storage    raid
    ${members}=    Planned Raid Members
    Raid Should Be    level=6    members=${members}

A File Read Through The Caching Proxy Matches The Origin
    [Tags]    storage    xrootd
    Read Through Caching Proxy And Check    file-001

A Profile Applies To The Running Site And Reads Back
    [Tags]    profile
    ${seconds}=    Apply Profile    wan-tuned
    Profile Should Be In Force    wan-tuned
    Apply Profile    default
    Profile Should Be In Force    default

An Emulated 40 ms RTT Is Measured Within 1 ms + 5%
    [Tags]    wan
    ${base}=    Measure RTT    submit    worker
    ${measured}=    Set WAN Latency    submit    worker    40
    Measured RTT Should Match    40    ${measured}    ${base}
    [Teardown]    Clear WAN
