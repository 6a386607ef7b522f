"""The grid services on a running site: the HTCondor pool, DTN storage and XRootD, profile apply with read-back."""
