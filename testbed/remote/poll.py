"""Waiting on a running site: the one wait primitive every wait of the package goes through.

`wait_for(what, check, timeout)` calls `check()` until it returns something true, and
raises an error naming what was awaited, where, for how long, and the last state seen.
`tests/test_layers.py` fails when a module of the package writes a deadline loop of
its own."""
import time

from testbed.model.errors import RemoteError

PROGRESS_EVERY = 60.0  # seconds between progress lines on a long wait


class Waited(float):
    """The seconds a wait took (a float), with the value the check returned last."""

    def __new__(cls, seconds, value=None):
        obj = super().__new__(cls, seconds)
        obj.value = value
        return obj


def _text(x):
    try:
        return x() if callable(x) else x
    except Exception as exc:  # describing the state must never hide the timeout itself
        return f"(state unknown: {exc})"


def wait_for(what, check, timeout, interval=5.0, *, host=None, state=None, fail_fast=None,
             settle=0.0, echo=None, error=RemoteError, message=None):
    """Call `check()` until it returns something true; returns a `Waited` (the seconds
    since the first call, with `.value` the check's last result).

    what       what is awaited, e.g. "every worker startd listed" (in progress and errors)
    timeout    after a check that fails once more than `timeout` s have passed: raise
    interval   seconds between checks
    host       where (named in progress and errors)
    state      a callable (or text) describing the last state seen, for the error message
    fail_fast  a callable returning a reason (text) when waiting longer cannot help;
               checked after each failed check, raises at once with the reason
    settle     once the check holds, it must keep holding for `settle` s (re-checked each
               `interval`); a lapse starts the settling again
    echo       a print-like callable: a progress line every PROGRESS_EVERY s on a long wait
    error      the exception class raised
    message    the whole error text (a string or callable), replacing the generated one
    """
    where = f"{host}: " if host else ""
    started = last_echo = time.monotonic()
    held_since = None
    while True:
        value = check()
        now = time.monotonic()
        if value:
            if held_since is None:
                held_since = now
            if now - held_since >= settle:
                return Waited(now - started, value)
        else:
            held_since = None
            reason = fail_fast() if fail_fast is not None else None
            if reason:
                raise error(f"{where}{what}: given up after {now - started:.0f} s: {reason}")
            if now - started > timeout:
                if message is not None:
                    raise error(_text(message))
                seen = _text(state) if state is not None else None
                raise error(f"{where}{what}: not reached after {timeout:.0f} s"
                            + (f"; last seen: {seen}" if seen not in (None, "") else ""))
        if echo is not None and now - last_echo >= PROGRESS_EVERY:
            seen = _text(state) if state is not None else None
            echo(f"  {where}waiting for {what}: {now - started:.0f} s of {timeout:.0f} s"
                 + (f" ({seen})" if seen not in (None, "") else ""))
            last_echo = now
        time.sleep(interval)


def poll_until(check, timeout, interval, message, error=RemoteError):
    """`wait_for` with the whole error message given (a string, or a callable that returns
    one); returns the seconds since the first call."""
    return float(wait_for("condition", check, timeout, interval, error=error, message=message))


def repeat_for(seconds, action, interval=1.0):
    """Call `action(elapsed)` every `interval` s for `seconds` s (a load or a sample taken
    over a fixed time, not a wait for a condition); stops early when it returns False.
    Returns the number of calls."""
    started, calls = time.monotonic(), 0
    while time.monotonic() - started < seconds:
        calls += 1
        if action(time.monotonic() - started) is False:
            break
        time.sleep(interval)
    return calls
