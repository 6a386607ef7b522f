"""A cluster's jobs as its job event log tells them (the `log = job.log` every submit
description of the testbed names): which ended, which are held and why, which were removed
or evicted, and how their shadows lost and regained their starters. Waiting on the log, as
Ornithology's `ClusterHandle.wait` does, reads one file on the submit host per poll instead
of asking the schedd for the queue and the history.

An event is a header line `CODE (CLUSTER.PROC.SUBPROC) DATE TIME text`, indented lines of
detail (a hold's reason is the first), and a `...` line. DATE is `YYYY-MM-DD` or, in the
older format, `MM/DD` without a year.
"""
import re
import time
from dataclasses import dataclass, field

from testbed.model.constants import JobStatus

EVENT = re.compile(r"^(\d{3}) \((\d+)\.(\d+)\.\d+\) ?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\d\d/\d\d \d\d:\d\d:\d\d)?"
                   r"[^\n]*(?:\n|$)((?:[ \t][^\n]*(?:\n|$))*)", re.M)
SUBMITTED, EXECUTING, EVICTED, TERMINATED, ABORTED, HELD, RELEASED = "000", "001", "004", "005", "009", "012", "013"
DISCONNECTED, RECONNECTED, RECONNECT_FAILED = "022", "023", "024"
# events after which a held job is no longer held
UNHELD = (SUBMITTED, EXECUTING, EVICTED, TERMINATED, ABORTED, RELEASED)

STATUS_NAMES = {s.value: s.label for s in JobStatus}
DETAIL_ATTRS = ["NumShadowStarts", "NumJobStarts", "NumShadowExceptions", "LastRemoteHost",
                "LastRejMatchReason", "LastHoldReason"]
UNFINISHED_ATTRS = ["ClusterId", "ProcId", "JobStatus"] + DETAIL_ATTRS


def describe_jobs(ads, limit=3):
    """One line on unfinished jobs: counts per status, then details of the first few."""
    counts = {}
    for ad in ads:
        name = STATUS_NAMES.get(ad.get("JobStatus"), str(ad.get("JobStatus")))
        counts[name] = counts.get(name, 0) + 1
    parts = [", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "no unfinished jobs"]
    for ad in sorted(ads, key=lambda a: a.get("ProcId", 0))[:limit]:
        detail = [f"{k}={ad[k]}" for k in DETAIL_ATTRS if ad.get(k) not in (None, "", 0)]
        parts.append(f"{ad.get('ClusterId')}.{ad.get('ProcId')} "
                     f"{STATUS_NAMES.get(ad.get('JobStatus'), ad.get('JobStatus'))}"
                     + (f" ({', '.join(detail)})" if detail else ""))
    return "; ".join(parts)


@dataclass
class ClusterEvents:
    """What one cluster's events say, proc by proc."""
    submitted: set = field(default_factory=set)
    terminated: set = field(default_factory=set)
    aborted: set = field(default_factory=set)
    evictions: int = 0
    held: dict = field(default_factory=dict)   # {proc: hold reason} of the procs held now
    # {proc: {"disconnected": n, "reconnected": n, "failed": n, "seconds": [time from each
    # disconnect to its reconnect]}} of the procs with any of those events
    reconnects: dict = field(default_factory=dict)

    def unreachable(self, count):
        """Whether `count` ended jobs can no longer come: too many were removed."""
        return bool(self.aborted) and len(self.submitted - self.aborted) < count


def _event_time(text):
    """Epoch seconds of an event header's DATE TIME (local time; an `MM/DD` date is put in
    the year 2000, which only differences between events may rely on)."""
    if "-" in text:
        return time.mktime(time.strptime(text, "%Y-%m-%d %H:%M:%S"))
    return time.mktime(time.strptime(f"2000/{text}", "%Y/%m/%d %H:%M:%S"))


def cluster_events(text, cluster):
    """ClusterEvents of `cluster` in a job event log's text (other clusters' events skipped)."""
    out, disconnected_at = ClusterEvents(), {}
    for code, c, proc, when, body in EVENT.findall(text):
        if int(c) != int(cluster):
            continue
        proc = int(proc)
        if code in (DISCONNECTED, RECONNECTED, RECONNECT_FAILED) and when:
            _reconnect_event(out.reconnects, disconnected_at, code, proc, _event_time(when))
        if code == SUBMITTED:
            out.submitted.add(proc)
        elif code == TERMINATED:
            out.terminated.add(proc)
        elif code == ABORTED:
            out.aborted.add(proc)
        elif code == EVICTED:
            out.evictions += 1
        if code == HELD:
            out.held[proc] = (body.strip().splitlines() or ["no reason given"])[0].strip()
        elif code in UNHELD:
            out.held.pop(proc, None)
    return out


def _reconnect_event(reconnects, disconnected_at, code, proc, when):
    """Count one disconnect, reconnect or failed reconnect of `proc`; a reconnect's seconds
    run from the disconnect still open (`disconnected_at`: {proc: time})."""
    entry = reconnects.setdefault(proc, {"disconnected": 0, "reconnected": 0, "failed": 0, "seconds": []})
    if code == DISCONNECTED:
        entry["disconnected"] += 1
        disconnected_at[proc] = when
    elif code == RECONNECTED:
        entry["reconnected"] += 1
        if proc in disconnected_at:
            entry["seconds"].append(when - disconnected_at.pop(proc))
    else:
        entry["failed"] += 1
        disconnected_at.pop(proc, None)
