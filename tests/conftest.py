"""Shared fixtures; the project root is on sys.path through pyproject.toml's pytest pythonpath."""
import pytest


@pytest.fixture(autouse=True)
def _no_pool_probe(monkeypatch):
    """Plans written by tests do not probe libvirt's pool for O_DIRECT (a file in the host's
    image directory); tests of the probe call it on a temporary directory."""
    monkeypatch.setenv("TESTBED_DISK_CACHE", "none")


@pytest.fixture(autouse=True)
def _no_host_console_logs(monkeypatch, tmp_path_factory):
    """The guests' serial consoles are read from an empty folder, not this machine's: a
    guest that died in an earlier run here (its log stays after `down`) would otherwise make
    `testbed run` refuse in tests that fake the site. Tests of the consoles set their own."""
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", str(tmp_path_factory.mktemp("console")))


@pytest.fixture(autouse=True)
def _own_host_ledger(monkeypatch, tmp_path_factory):
    """Changes a test notes go to a ledger of its own, never this machine's."""
    monkeypatch.setenv("TESTBED_HOST_LEDGER", str(tmp_path_factory.mktemp("ledger") / "host-ledger"))
