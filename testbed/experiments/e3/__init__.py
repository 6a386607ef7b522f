"""E3: ROOT files over the WAN through an XRootD federation (seed 002); its entry is fax.py's EXPERIMENT."""
