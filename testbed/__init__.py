"""Grid site testbed: HTCondor + XRootD sites as VM clusters, with scripted experiments."""
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
__version__ = "0.1.0"
