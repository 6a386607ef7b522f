"""What a claim reads from a run's records: one metric at a point (`Selector`), the
least-squares slope of one metric over another paired by a parameter (`Slope`), or the
ratio of two (`Expression`), each evaluated once per trial."""
import statistics
from dataclasses import dataclass, field

def same(a, b):
    """Parameter values compared as numbers when both are (80 == 80.0 == "80"), else as text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


@dataclass(frozen=True)
class Selector:
    metric: str
    params: dict = field(default_factory=dict)

    def values(self, records):
        """{trial: mean of the matching records' values in that trial}."""
        by_trial = {}
        for rec in records:
            p = rec.get("params", {})
            if rec.get("name") == self.metric and all(same(p.get(k), v) for k, v in self.params.items()):
                by_trial.setdefault(int(p.get("trial", 1)), []).append(float(rec["value"]))
        return {t: sum(v) / len(v) for t, v in by_trial.items()}

    def text(self):
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.metric}{{{inner}}}" if inner else self.metric


def _key(value):
    """A parameter's value as a pairing key: 16, 16.0 and "16" alike."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def least_squares_slope(points):
    """The least-squares slope of [(x, y)], or None with fewer than two distinct x."""
    if len({x for x, _y in points}) < 2:
        return None
    mx, my = statistics.fmean(x for x, _y in points), statistics.fmean(y for _x, y in points)
    return (sum((x - mx) * (y - my) for x, y in points)
            / sum((x - mx) ** 2 for x, _y in points))


@dataclass(frozen=True)
class Slope:
    """`times` x the slope of metric y over metric x, their records paired by the value of
    parameter `over` (e.g. a ramp's `step`), once per trial."""
    y: Selector
    x: Selector
    over: str
    times: float = 1.0

    def _by_trial(self, selector, records):
        """{trial: {value of `over`: mean of the matching records}}."""
        found = {}
        for rec in records:
            p = rec.get("params", {})
            if rec.get("name") == selector.metric and self.over in p and \
                    all(same(p.get(k), v) for k, v in selector.params.items()):
                found.setdefault(int(p.get("trial", 1)), {}).setdefault(_key(p[self.over]), []).append(
                    float(rec["value"]))
        return {t: {k: statistics.fmean(v) for k, v in at.items()} for t, at in found.items()}

    def values(self, records):
        ys, xs = self._by_trial(self.y, records), self._by_trial(self.x, records)
        out = {}
        for trial, y_at in ys.items():
            x_at = xs.get(trial, {})
            slope = least_squares_slope([(x_at[k], y) for k, y in y_at.items() if k in x_at])
            if slope is not None:
                out[trial] = self.times * slope
        return out

    def text(self):
        factor = "" if self.times == 1 else f"{self.times:g} x "
        return f"{factor}slope of {self.y.text()} over {self.x.text()} by {self.over}"


@dataclass(frozen=True)
class Expression:
    """What a claim reads from a run's records: a metric, a slope, or the ratio of two."""
    numerator: Selector | Slope
    denominator: Selector | None = None

    def by_trial(self, records):
        """{trial: value of the expression} for each trial that has it."""
        num = self.numerator.values(records)
        if self.denominator is None:
            return num
        den = self.denominator.values(records)
        return {t: num[t] / den[t] for t in num if t in den and den[t]}

    def per_trial(self, records):
        """[value of the expression in each trial that has it], by trial."""
        found = self.by_trial(records)
        return [found[t] for t in sorted(found)]

    def selectors(self):
        """Every {metric, params} the expression reads."""
        num = [self.numerator.y, self.numerator.x] if isinstance(self.numerator, Slope) else [self.numerator]
        return num + ([self.denominator] if self.denominator is not None else [])

    def text(self):
        return self.numerator.text() if self.denominator is None else \
            f"{self.numerator.text()} / {self.denominator.text()}"
