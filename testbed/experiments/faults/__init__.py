"""The fault suite: faults injected into a running site, each with its invariant; its entry is
faults.py's EXPERIMENT (the injectors themselves are testbed/injectors/)."""
