"""One command at a time on a site: `up`, `down`, a run, a profile or WAN change, a
snapshot restore each hold the site (an exclusive `flock` on its state folder's `busy`
file) until their process ends. A second such command is refused in one line naming the
command that holds the site, instead of measuring or changing a site another command is
bringing up, tearing down or measuring. The kernel drops the lock when the holder exits,
Ctrl-C and `kill -9` included, so no lock is ever left behind.

The processes a holder starts (robot, its libraries) run under its hold: the holder's pid
is passed down in HOLDER_ENV, and a process whose HOLDER_ENV names the pid that holds the
site goes on without a lock of its own."""
import fcntl
import json
import os
import time
from pathlib import Path

from testbed.model.errors import TestbedError

LOCK_FILE = "busy"
HOLDER_ENV = "TESTBED_SITE_HOLDER"

_held = {}  # lock file path -> open descriptor, for this process's lifetime


def hold(state, what, held=None, env=None, pid=None, now=None):
    """Hold the site of `state` (a TestbedState) for this process until it exits; `what`
    names the command (`up`, `run e2`) for the line a second command is refused with.
    Holding it again in the same process is a no-op. TestbedError when another process
    holds it, unless that process is the one `env`'s HOLDER_ENV names."""
    held = _held if held is None else held
    env = os.environ if env is None else env
    pid = os.getpid() if pid is None else pid
    path = Path(state.dir) / LOCK_FILE
    if str(path) in held:
        return False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = read_holder(path)
        os.close(fd)
        if holder.get("pid") is not None and str(holder.get("pid")) == env.get(HOLDER_ENV):
            return False  # started by the holder: runs under its hold
        raise TestbedError(busy_line(Path(state.dir).name, holder)) from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": pid, "what": what,
                             "since": time.strftime("%H:%M:%S UTC", time.gmtime(now))}).encode())
    held[str(path)] = fd
    env[HOLDER_ENV] = str(pid)
    return True


def read_holder(path):
    """{pid, what, since} written by the process holding the lock at `path` ({} if unreadable)."""
    try:
        data = json.loads(Path(path).read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def busy_line(name, holder):
    """The one line a command is refused with while `holder` holds site `name`."""
    who = f"`{holder.get('what', 'a testbed command')}` (pid {holder.get('pid', '?')}) since {holder.get('since', '?')}"
    return (f"site {name} is busy: {who} holds it; wait for it to end, or stop it "
            f"(Ctrl-C in its terminal, or `kill {holder.get('pid', 'PID')}`)")


def release_all(held=None):
    """Let go of every site this process holds (tests; a process otherwise holds to its end)."""
    held = _held if held is None else held
    for fd in held.values():
        os.close(fd)
    held.clear()
