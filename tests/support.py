"""Helpers the tests share: the guest programs (provision/guest/*.py, not part of the
`testbed` package) loaded by path, and the environment in which a test runs a
project script (benchmarks/*.py) as a subprocess against this checkout's package."""
import importlib.util
import os
import sys

from testbed import PROJECT_ROOT

GUEST = PROJECT_ROOT / "provision" / "guest"


def guest_program(name):
    """provision/guest/<name>.py as a module (imported once, under `guest_<name>`)."""
    key = f"guest_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, GUEST / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def script_env():
    """os.environ with this checkout first on PYTHONPATH: a script run by a test imports the
    `testbed` under test, even when the interpreter has another checkout installed."""
    paths = [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
