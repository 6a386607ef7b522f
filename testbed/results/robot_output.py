"""The rows Robot Framework wrote into a run folder: every output*.xml (output.xml, or
output-trialN.xml of a repeated run), read with robot's own result API.

One reader for the three places that look at rows: keeping a reference (no failed row), the
interrupted-run check (rows not reached are SKIP "interrupted") and `testbed test`, which
prints each failed row's message at the end so a CI log's tail says why a suite failed.
"""
from collections import namedtuple
from pathlib import Path

Row = namedtuple("Row", "file name status message tags")


def read_rows(folder):
    """([Row], [unreadable file name]) of every output*.xml in `folder`, in file order; a
    file robot was killed while writing is listed as unreadable, not raised."""
    from robot.api import ExecutionResult  # robot is the suites' runner: only needed here
    rows, unreadable = [], []
    for path in sorted(Path(folder).glob("output*.xml")):
        try:
            tests = list(ExecutionResult(str(path)).suite.all_tests)
        except Exception:  # noqa: BLE001 - robot's DataError: a file robot was killed writing
            unreadable.append(path.name)
            continue
        rows += [Row(path.name, t.name, t.status, t.message or "", tuple(str(tag) for tag in t.tags))
                 for t in tests]
    return rows, unreadable


def failure_lines(folder, limit=12, width=300):
    """One line per FAIL row of `folder` ('name: message', the file named when the run has
    several), at most `limit`, each message cut to `width` characters; plus one line per
    unreadable output file."""
    rows, unreadable = read_rows(folder)
    several = len({r.file for r in rows}) > 1
    failed = [r for r in rows if r.status == "FAIL"]
    lines = []
    for r in failed[:limit]:
        message = " ".join(r.message.split())
        if len(message) > width:
            message = message[:width - 3] + "..."
        lines.append(f"{r.name}{f' ({r.file})' if several else ''}: {message or 'no message'}")
    if len(failed) > limit:
        lines.append(f"... and {len(failed) - limit} more failed rows")
    lines += [f"{name}: robot output unreadable" for name in unreadable]
    return lines
