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


def same_value(a, b):
    """A row's value and a scale's value compared as numbers when both are, else as text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).strip() == str(b).strip()


def outside_run(in_run, params, profiles, scale):
    """Why a point whose run arguments are `in_run` ({parameter: the row's value}) is not one
    of this run's, '' when it is: every value must be in the run's list of that name
    (`params`, the experiment's parameters at `scale` with the run's overrides), a profile
    among the `profiles` compared."""
    for key, value in in_run.items():
        if key == "profile":
            if value not in profiles:
                return f"profile {value} is not compared in this run (profiles: {', '.join(profiles)})"
            continue
        allowed = params[key]
        if not any(same_value(value, v) for v in allowed):
            return (f"{key} {value} is not a point of this run ({scale} scale: "
                    f"{key} = {', '.join(str(v) for v in allowed)})")
    return ""


def point_call(test):
    """(kind, {argument: value}) of a suite row measured by `Measure Point` (robot's running
    model), None for any other test or a row whose arguments are not plain `name=value` text."""
    body = list(test.body)
    if len(body) != 1 or getattr(body[0], "name", None) != POINT_TEMPLATE or not body[0].args:
        return None
    kind, *rest = body[0].args
    pairs = [str(a).partition("=") for a in rest]
    if "${" in str(kind) or any(not sep or "${" in a for a, sep, _v in pairs):
        return None
    return str(kind), {name: value for name, _sep, value in pairs}


def outside_rows(suite, declared, params, profiles, scale):
    """{test name: why it is not a point of this run} of a suite's `Measure Point` rows (robot's
    running model; `declared`: the experiment's point kinds); rows it cannot read stay in."""
    out = {}
    for test in suite.all_tests:
        call = point_call(test)
        if call is None or call[0] not in declared:
            continue
        try:
            why = outside_run(in_run_arguments(declared, *call), params, profiles, scale)
        except ValueError:
            continue    # the row's own run says what is wrong with it
        if why:
            out[test.name] = why
    return out


def method_name(kind):
    """The library method that measures a point of `kind`: point_<kind>, '-' as '_'."""
    return "point_" + kind.replace("-", "_")
