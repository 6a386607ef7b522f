"""UTC time as the testbed writes it: a compact stamp for folder names and an ISO 8601 stamp
for records (manifests, metrics, state files), each format written here alone so every
record reads back the same way."""
import calendar
import time

_COMPACT = "%Y%m%dT%H%M%SZ"   # 20261128T114355Z: sorts by time, no ':' in a path
_ISO = "%Y-%m-%dT%H:%M:%SZ"   # 2026-11-28T11:43:55Z


def utc_stamp(t=None):
    """`t` (seconds since the epoch; now without it) as a folder name's stamp, `20261128T114355Z`."""
    return time.strftime(_COMPACT, time.gmtime(t))


def utc_iso(t=None):
    """`t` (seconds since the epoch; now without it) as a record's stamp, `2026-11-28T11:43:55Z`."""
    return time.strftime(_ISO, time.gmtime(t))


def utc_seconds(stamp):
    """Seconds since the epoch of a stamp `utc_iso` wrote."""
    return calendar.timegm(time.strptime(stamp, _ISO))
