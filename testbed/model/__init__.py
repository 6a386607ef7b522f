"""The model: topology, profiles, WAN links, per-testbed state, schema reading, errors and constants. Imports no other layer."""
