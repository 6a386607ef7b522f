"""One measured point of a suite: what `Measure Point` keeps and judges.

Every generated point row of a paper's suite calls the one keyword `Measure Point` with
the point's kind and its axes (`Measure Point    latency    profile=...    rtt=80
factor=2`). The experiment's registry entry declares its kinds (`points`: for each kind, the
row arguments that must be among the run's parameters, so a row of a point this run does
not measure is skipped); its library measures one (`point_<kind>`) and returns a
`Measured`: the records to keep, then the checks to judge, the way an Ornithology test acts
first and checks cheaply after. The keyword keeps every record before it judges, so a
failed check never loses what was measured, and names every check that failed.
"""
from dataclasses import dataclass, field

POINT_TEMPLATE = "Measure Point"


@dataclass
class Measured:
    """Records (name, value, unit, params), checks (passed, the message if not), console
    lines, and a reason to skip the row (then nothing was measured)."""
    records: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    skipped: str = ""

    @classmethod
    def skip(cls, reason):
        return cls(skipped=reason)

    def record(self, name, value, unit="", **params):
        self.records.append((name, value, unit, params))
        return self

    def record_known(self, name, value, unit="", **params):
        """A record of a figure the point may not have (None): kept only when it has one."""
        return self if value is None else self.record(name, value, unit, **params)

    def record_series(self, name, unit, series, column=1, **params):
        """A time series [(t, value, ...)] as one record per sample, with parameter t."""
        for row in series:
            self.record(name, row[column], unit, t=round(float(row[0]), 1), **params)
        return self

    def check(self, passed, message):
        """A check judged after the records are kept; `message` says what is wrong."""
        self.checks.append((bool(passed), message))
        return self

    def say(self, line):
        self.lines.append(line)
        return self

    @property
    def failures(self):
        return [message for passed, message in self.checks if not passed]

    def verdict(self):
        """None when every check passed, else one message naming each failed check."""
        failed = self.failures
        if not failed:
            return None
        return failed[0] if len(failed) == 1 else f"{len(failed)} checks failed: " + "; ".join(failed)


def in_run_arguments(declared, kind, point):
    """{run parameter: the row's value} for the row arguments the kind declares to be among
    the run's parameters; ValueError naming the kind or argument when the row and the
    declaration disagree."""
    if kind not in declared:
        raise ValueError(f"no point kind {kind!r} (declared: {', '.join(declared) or 'none'})")
    args = declared[kind]
    unknown = sorted(set(point) - set(args))
    missing = sorted(set(args) - set(point))
    if unknown or missing:
        raise ValueError(f"point {kind!r} takes {', '.join(args) or 'no arguments'}"
                         + (f"; not {', '.join(unknown)}" if unknown else "")
                         + (f"; missing {', '.join(missing)}" if missing else ""))
    return {param: point[arg] for arg, param in args.items() if param}


def method_name(kind):
    """The library method that measures a point of `kind`: point_<kind>, '-' as '_'."""
    return "point_" + kind.replace("-", "_")
