"""Grid site testbed: HTCondor + XRootD sites as VM clusters, with scripted experiments."""
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
__version__ = "0.1.0"
# The package's layers, lowest first: a module imports only its own layer and the ones before
# it here (tests/test_layers.py checks it; docs/architecture/index.md lists them)
LAYERS = ("model", "remote", "network", "machines", "services", "injectors", "results", "harness", "experiments",
          "report", "cli")
