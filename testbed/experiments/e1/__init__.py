"""E1: limits of the HTCondor transfer system (seed 000); its entry is transfer.py's EXPERIMENT."""
