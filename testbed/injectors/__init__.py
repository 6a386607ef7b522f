"""Fault injectors for a running site, each with an explicit undo, and the invariants the fault suite checks."""
