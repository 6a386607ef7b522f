"""E5: how much higher can HTCondor fly (seed 004); its entry is e5_scale.py's EXPERIMENT."""
