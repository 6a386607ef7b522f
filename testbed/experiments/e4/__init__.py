"""E4: physics data production on HPC nodes (seed 003); its entry is hpc.py's EXPERIMENT."""
