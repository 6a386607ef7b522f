*** Settings ***
Documentation     End-to-end smoke of a running site (run on the `small` topology in CI).
...               A job runs on a sleeper worker through CCB; the central manager whose
...               negotiator is active is killed and the other takes over and matches a new
...               job; md0 is an active RAID6 with the planned members; a file read through
...               the DTN's caching proxy from the origin has the origin's checksum.
Library           ../libraries/TestbedLibrary.py    ${TOPOLOGY}
Suite Setup       Site Should Be Healthy    timeout=900

*** Variables ***
${TOPOLOGY}       small

*** Test Cases ***
A Job Runs On A Sleeper Worker Through CCB
    ${n}=    Startds Should Be Reached Through CCB
    ${cluster}=    Submit Sleep Jobs    count=2    seconds=2
    Wait For Jobs    ${cluster}    count=2    timeout=600
    Jobs Should Have Run On Role    ${cluster}    worker

The Standby Central Manager Takes Over When The Active One Dies
    ${active}=    Active Central Manager
    ${standby}=    Other Central Manager    ${active}
    Kill Central Manager    ${active}
    Negotiator Should Move To    ${standby}    timeout=300
    ${cluster}=    Submit Sleep Jobs    count=1    seconds=1
    Wait For Jobs    ${cluster}    count=1    timeout=600
    Jobs Should Have Run On Role    ${cluster}    worker
    [Teardown]    Restart Central Manager    ${active}

The DTN Stores Data On An Active RAID6
    ${members}=    Planned Raid Members
    Raid Should Be    level=6    members=${members}

A File Read Through The Caching Proxy Matches The Origin
    Read Through Caching Proxy And Check    file-001
