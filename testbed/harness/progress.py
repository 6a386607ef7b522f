"""The console line `testbed run` prints as each measured point starts:

    [point 3/15] rtt40-2W-wan-tuned (trial 2/3) · 4m12s elapsed · ~9m left (from the reference)

robot/listeners/Progress.py calls this module; the counting and the estimate live here, where
they are unit-tested. The points are the suite's `Measure Point` rows robot runs (every test
of a suite that has none), counted after the run's pre-run modifier and selection; i of n
counts those of this robot process, one trial. The elapsed time runs from the manifest's
`start`, so a later trial's line counts the earlier trials too. What is left is the starting
point, the rest of this trial and every later trial (the same rows), each taking the mean
seconds of that point in the first of these that timed it:

- the kept reference of the run's experiment, scale and topology, on the run's release
  (the key the run would be kept under, `results/reference/`),
  when its manifest has the seconds of its points;
- the points this run finished (earlier trials included);
- the experiment's references under other keys (other scales, topologies or releases).

A point none of them timed takes the mean of all the points of the first one that timed
any; with none, there is no estimate.

Each point's seconds go into the run's manifest (POINT_SECONDS_FIELD) as it ends, so a run
kept as the reference gives the next run its estimate. The metric records do not serve: they
carry the second they were written but not the point that wrote them, a point writes some
of them half-way (an RTT check, a profile swap) and a merged reference's span days.
"""
import json
import statistics
import time
from pathlib import Path

from testbed.harness.points import POINT_TEMPLATE
from testbed.model.clock import utc_seconds
from testbed.model.constants import POINT_SECONDS_FIELD, PROGRESS_SEPARATOR, TIMED_STATUSES
from testbed.model.errors import ConfigError
from testbed.results.reference import key_of
from testbed.results.runs import REFERENCE_ROOT, Run
FROM_REFERENCE = "from the reference"
FROM_OTHER_REFERENCES = "from the experiment's other references"
FROM_THIS_RUN = "from this run"


def clock(seconds):
    """42s, 4m12s, 1h05m: a duration in whole seconds, minutes past an hour."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def rough(seconds):
    """<1m, ~9m, ~1h20m: an estimate to the minute."""
    m = round(max(0.0, seconds) / 60)
    if m < 1:
        return "<1m"
    return f"~{m}m" if m < 60 else f"~{m // 60}h{m % 60:02d}m"


def points_of(tests):
    """The names of the tests that are measured points: the `Measure Point` rows, or every
    test of a suite without any (smoke, faults)."""
    tests = list(tests)
    rows = [t.name for t in tests if getattr(t, "template", None) == POINT_TEMPLATE]
    return rows or [t.name for t in tests]


def timed(manifest):
    """(point, seconds) of each point a manifest kept (POINT_SECONDS_FIELD) that measured something."""
    entries = manifest.get(POINT_SECONDS_FIELD) or []
    return [(e.get("test"), float(e["seconds"])) for e in entries
            if isinstance(e, dict) and e.get("status") in TIMED_STATUSES and isinstance(e.get("seconds"), (int, float))]


def reference_seconds(suite, key, root=REFERENCE_ROOT):
    """((point, seconds) of each point of the reference `suite`/`key`, those of the suite's
    references under other keys): [] where none kept any."""
    same, other = [], []
    for path in sorted(Path(root).glob(f"{suite}/*/manifest.json")):
        try:
            seconds = timed(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
        (same if path.parent.name == key else other).extend(seconds)
    return same, other


def seconds_left(left, reference=(), this_run=(), other_references=()):
    """(seconds the points `left` will take, where that comes from), or None when nothing is
    known. Each point takes its own mean in the first source that timed it (a collector ramp
    and a negotiation cycle differ twentyfold, so a point this run has not reached is better
    read from another reference than from this run's short first points); a point no source
    timed, the mean of all the points of the first source that timed any."""
    sources = []
    for timed_points, label in ((reference, FROM_REFERENCE), (this_run, FROM_THIS_RUN),
                                (other_references, FROM_OTHER_REFERENCES)):
        if timed_points:
            by_point = {}
            for name, seconds in timed_points:
                by_point.setdefault(name, []).append(seconds)
            sources.append((by_point, label))
    if not sources:
        return None
    first, first_label = sources[0]
    overall = statistics.fmean(s for seconds in first.values() for s in seconds)
    total, used = 0.0, set()
    for name in left:
        by_point, label = next(((b, lab) for b, lab in sources if name in b), (None, first_label))
        total += statistics.fmean(by_point[name]) if by_point else overall
        used.add(label)
    labels = [label for _b, label in sources if label in used]
    return total, "from " + " and ".join(label.removeprefix("from ") for label in labels)


def line(name, i, n, elapsed, trial=None, trials=None, left=None):
    """The progress line of point i of n; `left`: (seconds left, source) or None."""
    parts = [f"[point {i}/{n}] {name}" + (f" (trial {trial}/{trials})" if trials and trials > 1 else ""),
             f"{clock(elapsed)} elapsed"]
    if left is not None:
        seconds, source = left
        parts.append(f"{rough(seconds)} left ({source})")
    return PROGRESS_SEPARATOR.join(parts)


class Progress:
    """The progress of one robot process: `starting(name)` gives a point's line, `ended(...)`
    counts a point's seconds and keeps them in the manifest. `results_dir`: the run's folder
    (None under a plain robot: no trial, no reference, elapsed from this process's start)."""

    def __init__(self, results_dir=None, names=(), now=time.time, reference_root=REFERENCE_ROOT):
        self.run = Run(results_dir) if results_dir else None
        manifest = self.run.manifest() if self.run else {}
        self.now = now
        self.started = utc_seconds(manifest["start"]) if manifest.get("start") else now()
        self.trials = manifest.get("trials") or 1
        self.trial = manifest.get("trial") or 1
        self.names = list(names)
        self.i = 0
        self.this_run = timed(manifest)   # the earlier trials' points
        self.reference, self.other_references = ([], [])
        if manifest.get("suite"):
            try:   # the key the run would be kept under: its release and patches included
                self.reference, self.other_references = reference_seconds(*key_of(manifest), reference_root)
            except ConfigError:
                pass

    def is_point(self, name):
        return name in self.names

    def starting(self, name):
        self.i += 1
        # this point on, the rest of this trial and every later trial (the same rows)
        left = self.names[self.i - 1:] + self.names * max(0, self.trials - self.trial)
        return line(name, self.i, len(self.names), self.now() - self.started, self.trial, self.trials,
                    seconds_left(left, self.reference, self.this_run, self.other_references))

    def ended(self, name, status, seconds):
        """Counts a point that measured something, and keeps its seconds in the manifest."""
        if status not in TIMED_STATUSES:
            return
        self.this_run.append((name, seconds))
        if self.run:
            kept = self.run.manifest().get(POINT_SECONDS_FIELD) or []
            entry = {"test": name, "trial": self.trial, "seconds": round(seconds, 1), "status": status}
            self.run.update(**{POINT_SECONDS_FIELD: kept + [entry]})
