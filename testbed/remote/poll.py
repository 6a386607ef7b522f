"""Waiting on a running site: call a check until it holds or the time is up."""
import time

from testbed.model.errors import RemoteError


def poll_until(check, timeout, interval, message, error=RemoteError):
    """Call `check()` until it returns something true; returns the seconds since the first
    call. After a check that fails: once more than `timeout` seconds have passed, raise
    `error(message)` (`message` a string, or a callable that returns one, called then);
    otherwise sleep `interval` seconds and check again."""
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise error(message() if callable(message) else message)
        time.sleep(interval)
