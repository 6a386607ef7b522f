"""One command at a time on a site (testbed/model/site_lock.py): a second holder is refused
in one line naming the first; the holder's own children and a second hold in the same
process go on; the kernel lets go when the holder exits."""
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from testbed.model import site_lock
from testbed.model.errors import TestbedError
from testbed.model.site_lock import hold as real_hold  # conftest patches site_lock.hold


def _holder(tmp_path, what="run e2"):
    """A process that holds site `small` under tmp_path until its stdin closes."""
    code = textwrap.dedent(f"""
        import sys
        from types import SimpleNamespace
        from testbed.model import site_lock
        site_lock.hold(SimpleNamespace(dir={str(tmp_path / 'small')!r}), {what!r}, env={{}})
        print("held", flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_command_is_refused_naming_the_holder(tmp_path):
    proc = _holder(tmp_path)
    try:
        with pytest.raises(TestbedError) as err:
            real_hold(SimpleNamespace(dir=tmp_path / "small"), "up", held={}, env={})
        line = str(err.value)
        assert "\n" not in line
        assert line.startswith("site small is busy: `run e2`")
        assert f"pid {proc.pid}" in line and f"kill {proc.pid}" in line
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_the_lock_goes_with_its_holder(tmp_path):
    proc = _holder(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    held = {}
    assert real_hold(SimpleNamespace(dir=tmp_path / "small"), "up", held=held, env={}) is True
    site_lock.release_all(held)


def test_a_child_of_the_holder_runs_under_its_hold(tmp_path):
    proc = _holder(tmp_path)
    try:
        env = {site_lock.HOLDER_ENV: str(proc.pid)}
        assert real_hold(SimpleNamespace(dir=tmp_path / "small"), "robot e2", held={}, env=env) is False
        with pytest.raises(TestbedError):  # a pid that is not the holder's
            real_hold(SimpleNamespace(dir=tmp_path / "small"), "robot e2", held={},
                      env={site_lock.HOLDER_ENV: str(proc.pid + 1)})
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_holding_twice_in_one_process_and_the_pid_passed_down(tmp_path):
    held, env = {}, {}
    state = SimpleNamespace(dir=tmp_path / "default")
    assert real_hold(state, "up", held=held, env=env, pid=4242, now=0) is True
    assert real_hold(state, "run e1", held=held, env=env) is False
    assert env[site_lock.HOLDER_ENV] == "4242"
    holder = site_lock.read_holder(tmp_path / "default" / site_lock.LOCK_FILE)
    assert holder == {"pid": 4242, "what": "up", "since": "00:00:00 UTC"}
    site_lock.release_all(held)
    assert held == {}


def test_an_unreadable_holder_record_still_gives_one_line():
    line = site_lock.busy_line("small", {})
    assert line.startswith("site small is busy: `a testbed command` (pid ?)") and "\n" not in line
