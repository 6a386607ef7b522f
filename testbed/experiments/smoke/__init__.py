"""The smoke suite: end-to-end checks of a running site; its entry is smoke.py's EXPERIMENT."""
