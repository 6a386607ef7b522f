"""E2: site in a box (seed 001); its entry is e2_site.py's EXPERIMENT."""
