"""Shared fixtures; the project root is on sys.path through pyproject.toml's pytest pythonpath."""
from pathlib import Path

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
    """Changes a test notes go to a ledger of its own, never this machine's; undoing them
    forgets a mask record of its own, never libvirtd.sh's in /run (the next `./tb` would
    restart this machine's libvirtd)."""
    from testbed.machines import host_ledger
    folder = tmp_path_factory.mktemp("ledger")
    monkeypatch.setenv("TESTBED_HOST_LEDGER", str(folder / "host-ledger"))
    monkeypatch.setattr(host_ledger, "MASK_FILES", tuple(str(folder / Path(m).name) for m in host_ledger.MASK_FILES))


@pytest.fixture(autouse=True)
def _own_site_locks(monkeypatch, tmp_path_factory):
    """Sites a test holds are held in a folder of its own: never the lock of a site a real
    `testbed` command holds in this checkout, and let go when the test ends. Tests of the
    lock call site_lock.hold as imported before this patch."""
    from pathlib import Path
    from types import SimpleNamespace
    from testbed.model import site_lock
    root, held, real = tmp_path_factory.mktemp("locks"), {}, site_lock.hold

    def hold(state, what, **kw):
        kw.setdefault("env", {})
        return real(SimpleNamespace(dir=root / Path(state.dir).name), what, held=held, **kw)
    monkeypatch.setattr(site_lock, "hold", hold)
    yield
    site_lock.release_all(held)


@pytest.fixture(autouse=True)
def _own_state_dir(monkeypatch, tmp_path_factory):
    """A site's state (its plan, profile in force, the demo's mark) is written to a folder of
    the test's own, never this checkout's .testbed: a test that runs `testbed demo` faked
    must not mark a real `default` site as the demo's (the next `./tb test` takes such a
    site down). Tests of the state set their own."""
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path_factory.mktemp("state")))
