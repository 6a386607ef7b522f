"""The grid services on a running site, through the gateway that alone runs HTCondor's and
XRootD's tools: the HTCondor pool, the job event log, the site's health, DTN storage and
XRootD, profile apply with read-back and what a release makes of the knobs."""
