"""E2: what the caching proxy's own records say about the files a round read.

The proxy (XrdPfc) keeps one access record per *opening* of a file in the file's .cinfo,
not one per client: every client that reads the file while the proxy holds it open adds
its bytes to the same record, and the record gets its detach time when the proxy closes
the file. The proxy closes a file only once its blocks are written to disk; until then
XrdPosix retries the close every `ddInterval` (30 s). A round of repeated reads that
starts while the first round's files are still open is counted into the first round's
records, misses and all. So a round is judged only once every file it read is closed
(`wait_closed`), and the verdicts read the latest record, which is then that round's.

`xrdpfc_print -j` prints a record's detach time as "------:------" while it is open.
"""
from testbed.model.errors import RemoteError
from testbed.remote.poll import wait_for
from testbed.services.storage import read_cache_records

OPEN_DETACH = "------:------"
CLOSE_TIMEOUT = 180   # s: several of XrdPosix's 30-s close retries while blocks reach the RAID


def _acc_bytes(acc):
    return (int(acc.get("B_hit", 0) or 0), int(acc.get("B_miss", 0) or 0), int(acc.get("B_bypass", 0) or 0))


def cache_bytes(record):
    """(bytes hit, bytes missed, bytes bypassed) summed over a .cinfo's access records
    (`xrdpfc_print -j`: accesses[].B_hit/B_miss/B_bypass)."""
    totals = [0, 0, 0]
    for acc in record.get("accesses") or []:
        for i, v in enumerate(_acc_bytes(acc)):
            totals[i] += v
    return tuple(totals)


def total_bytes(records):
    """(bytes hit, missed, bypassed) summed over every file's records ({name: record})."""
    totals = [0, 0, 0]
    for record in records.values():
        for i, v in enumerate(cache_bytes(record)):
            totals[i] += v
    return tuple(totals)


def is_open(record):
    """True while the proxy holds the file open: its latest access record has no detach time."""
    accesses = record.get("accesses") or []
    return bool(accesses) and str(accesses[-1].get("detach", "")).strip() in ("", OPEN_DETACH)


def cache_verdict(record):
    """What the proxy's own record says about a file: complete in the cache? still open?
    and did its latest access fetch anything from the origin (a miss) or not (a pure hit)?
    A first read may show "hits" that its own prefetch brought in, so a first read is
    judged by the file not being in the cache before it (the cache was cleared)."""
    accesses = record.get("accesses") or []
    last = _acc_bytes(accesses[-1]) if accesses else (0, 0, 0)
    return {"complete": record.get("state_complete") == "complete", "accesses": len(accesses),
            "open": is_open(record), "last_hit": last[0], "last_miss": last[1],
            "pure_hit": bool(accesses) and last[1] == 0 and last[0] > 0}


def wait_closed(ssh, host, names, timeout=CLOSE_TIMEOUT, interval=5):
    """Wait until the proxy has closed every named file (each has a record, none open);
    returns (records, names still open or without a record when the time was up)."""
    names = sorted(set(names))
    state = {"records": {}, "pending": names}

    def closed():
        state["records"] = read_cache_records(ssh, host, names)
        state["pending"] = [n for n in names if n not in state["records"] or is_open(state["records"][n])]
        return not state["pending"]
    try:
        wait_for("the caching proxy to close every file the round read", closed, timeout, interval, host=host,
                 state=lambda: f"still open: {', '.join(state['pending'])}")
    except RemoteError:
        pass  # the caller names what is still open (the second value), not a failure here
    return state["records"], state["pending"]
