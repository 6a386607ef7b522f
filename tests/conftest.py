"""Shared fixtures; the project root is on sys.path through pyproject.toml's pytest pythonpath."""
import pytest


@pytest.fixture(autouse=True)
def _no_pool_probe(monkeypatch):
    """Plans written by tests do not probe libvirt's pool for O_DIRECT (a file in the host's
    image directory); tests of the probe call it on a temporary directory."""
    monkeypatch.setenv("TESTBED_DISK_CACHE", "none")
