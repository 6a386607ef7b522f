"""Does a run reproduce its paper? The papers' headline claims and a verdict for each.

A claim is declared once, beside the paper's figures (`claims:` in results/paper/eN.yaml):

    - id: e1-loss-grows-with-rtt
      words: "there is an increasing CPU efficiency loss with an increase of latency"
      where: "seed 000, section 3 and Figure 2"
      value: {ratio: [{metric: e1.efficiency_lost, params: {rtt_ms: 80}},
                      {metric: e1.efficiency_lost, params: {rtt_ms: 0}}]}
      expect: "> 1"

`value` is the metric expression evaluated once per trial over the run's records: one
recorded metric (`{metric, params}`), the ratio of two, or the least-squares slope of one
over another paired by a parameter (`{slope: [y, x], over: step, times: -1}`: how much y
changes per unit of x across the run's steps, times a factor). `expect` is `> x`, `< x` or
`~ x +- tol` (tol absolute, or `N%` of x). A record belongs to trial `params.trial`
(1 when absent), so a run repeated N times gives N values of every claim.

The verdict comes from the 95% t interval on the mean of the per-trial values:
reproduced (the interval lies on the paper's side, or inside the tolerance),
contradicted (it lies wholly on the other side, or outside the tolerance), inconclusive
(it straddles; with the number of trials the observed spread would need). One trial has
no interval: its verdict is inconclusive, with the side its one value falls on.
"""
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from testbed.model import tables
from testbed.model.schema import Reader, load_yaml

REPRODUCED, CONTRADICTED, INCONCLUSIVE, NO_DATA = "reproduced", "contradicted", "inconclusive", "no data"
EXPECT = re.compile(r"^\s*(?:(?P<op>[<>])\s*(?P<x>-?[0-9.eE+-]+)"
                    r"|~\s*(?P<c>-?[0-9.eE+-]+)\s*\+-\s*(?P<tol>[0-9.eE+-]+)(?P<pct>%?))\s*$")
# Student's t, two-sided 95% (0.975 quantile), by degrees of freedom; 1.96 beyond 30
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]
INTERVAL_METHOD = "95% t interval on the mean of the trials"


def t975(df):
    return T975[df - 1] if 1 <= df <= len(T975) else 1.96


@dataclass(frozen=True)
class Expectation:
    """`> x`, `< x` or `~ centre +- tol`: the paper's side, as an interval test."""
    text: str
    op: str            # ">", "<" or "~"
    x: float           # the threshold, or the centre
    tol: float = 0.0   # for "~": the absolute half-width

    @classmethod
    def parse(cls, text, error):
        m = EXPECT.match(str(text))
        try:
            if m and m.group("op"):
                return cls(str(text).strip(), m.group("op"), float(m.group("x")))
            if m:
                c, tol = float(m.group("c")), float(m.group("tol"))
                return cls(str(text).strip(), "~", c, abs(c) * tol / 100 if m.group("pct") else tol)
        except ValueError:
            pass
        raise error("expect", f"{text!r} is not '> x', '< x' or '~ x +- tol' (tol a number or N%)")

    def side(self, lo, hi):
        """REPRODUCED / CONTRADICTED / INCONCLUSIVE for an interval [lo, hi]."""
        if self.op == ">":
            return REPRODUCED if lo > self.x else CONTRADICTED if hi <= self.x else INCONCLUSIVE
        if self.op == "<":
            return REPRODUCED if hi < self.x else CONTRADICTED if lo >= self.x else INCONCLUSIVE
        a, b = self.x - self.tol, self.x + self.tol
        return REPRODUCED if a <= lo and hi <= b else CONTRADICTED if hi < a or lo > b else INCONCLUSIVE

    def margin(self, mean):
        """How far the mean is from the nearest edge that decides the verdict."""
        if self.op in "<>":
            return abs(mean - self.x)
        return min(abs(mean - (self.x - self.tol)), abs(mean - (self.x + self.tol)))


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
class Claim:
    id: str
    experiment: str
    words: str
    where: str
    expect: Expectation
    numerator: Selector | Slope
    denominator: Selector | None = None
    paper: float | None = None     # the paper's own number for this expression, when it gives one
    note: str = ""

    def per_trial(self, records):
        """[value of the expression in each trial that has it], by trial."""
        num = self.numerator.values(records)
        if self.denominator is None:
            return [num[t] for t in sorted(num)]
        den = self.denominator.values(records)
        return [num[t] / den[t] for t in sorted(num) if t in den and den[t]]

    def selectors(self):
        """Every {metric, params} the expression reads."""
        num = [self.numerator.y, self.numerator.x] if isinstance(self.numerator, Slope) else [self.numerator]
        return num + ([self.denominator] if self.denominator is not None else [])

    def expression(self):
        return self.numerator.text() if self.denominator is None else \
            f"{self.numerator.text()} / {self.denominator.text()}"


def _selector(reader, item, where):
    r = Reader(item, reader.source, where)
    r.only({"metric", "params"})
    params = r.data.get("params") or {}
    if not isinstance(params, dict):
        raise r.error("params", "must be a mapping")
    return Selector(r.str("metric"), dict(params))


def load_claims(reader, experiment):
    """The `claims:` of one paper file (a schema.Reader over it); [] when it has none."""
    out, seen = [], set()
    for i, item in enumerate(reader.data.get("claims") or []):
        c = Reader(item, reader.source, f"claims[{i}]")
        c.only({"id", "words", "where", "value", "expect", "paper", "note"})
        cid = c.str("id")
        if cid in seen:
            raise c.error("id", f"{cid!r} is declared twice")
        seen.add(cid)
        value = c.data.get("value")
        if not isinstance(value, dict) or (set(value) - {"metric", "params", "ratio"}
                                           and set(value) - {"slope", "over", "times"}):
            raise c.error("value", "must be {metric, params}, {ratio: [{metric, params}, {metric, params}]} "
                                   "or {slope: [y, x], over: PARAM, times: N}")
        if "slope" in value:
            pair, over, times = value["slope"], value.get("over"), value.get("times", 1)
            if not isinstance(pair, list) or len(pair) != 2:
                raise c.error("value.slope", "must list two {metric, params}: y, then x")
            if not isinstance(over, str) or not over:
                raise c.error("value.over", "must name the parameter that pairs y's records with x's")
            if isinstance(times, bool) or not isinstance(times, (int, float)):
                raise c.error("value.times", f"must be a number, got {times!r}")
            num = Slope(_selector(c, pair[0], f"claims[{i}].value.slope[0]"),
                        _selector(c, pair[1], f"claims[{i}].value.slope[1]"), over, float(times))
            den = None
        elif "ratio" in value:
            pair = value["ratio"]
            if not isinstance(pair, list) or len(pair) != 2:
                raise c.error("value.ratio", "must list two {metric, params}: numerator, denominator")
            num, den = (_selector(c, pair[0], f"claims[{i}].value.ratio[0]"),
                        _selector(c, pair[1], f"claims[{i}].value.ratio[1]"))
        else:
            num, den = _selector(c, value, f"claims[{i}].value"), None
        paper = c.data.get("paper")
        if paper is not None and (isinstance(paper, bool) or not isinstance(paper, (int, float))):
            raise c.error("paper", f"must be a number, got {paper!r}")
        out.append(Claim(cid, experiment, c.str("words"), c.str("where"),
                         Expectation.parse(c.data.get("expect"), c.error), num, den,
                         None if paper is None else float(paper), str(c.data.get("note", ""))))
    return out


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    values: tuple
    verdict: str
    mean: float | None = None
    median: float | None = None
    lo: float | None = None
    hi: float | None = None
    more_trials: int | None = None   # for inconclusive: trials the observed spread would need
    why: str = ""

    @property
    def passes(self):
        """A suite row passes unless the paper's direction is contradicted."""
        return self.verdict != CONTRADICTED

    def line(self):
        c = self.claim
        if self.verdict == NO_DATA:
            return f"{c.id}: no data ({c.expression()} was not measured in this run)"
        n = len(self.values)
        est = f"median {self.median:.3g}" + (f", mean {self.mean:.3g} [{self.lo:.3g}, {self.hi:.3g}]"
                                              if n > 1 else "")
        more = f"; about {self.more_trials} trials would decide it" if self.more_trials else ""
        why = f"; {self.why}" if self.why else ""
        return f"{c.id}: {self.verdict} ({est}, {n} trial{'s' * (n != 1)}, paper {c.expect.text}){why}{more}"


def interval(values):
    """(mean, median, lo, hi) with the 95% t interval on the mean; lo = hi = mean for one value."""
    n = len(values)
    mean, median = statistics.fmean(values), statistics.median(values)
    if n < 2:
        return mean, median, mean, mean
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean, median, mean - half, mean + half


def spread(values):
    """(mean, sample standard deviation, coefficient of variation = sd / mean) of two or more
    values; cv is None when the mean is 0."""
    if len(values) < 2:
        raise ValueError(f"a spread needs two values or more, got {len(values)}")
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    return mean, sd, (sd / abs(mean) if mean else None)


def cv_standard_error(cv, n):
    """The standard error of a coefficient of variation estimated from `n` normal values:
    cv / sqrt(2 (n - 1)) x sqrt(1 + 2 cv^2) (McKay's approximation); from 5 trials it is
    about a third of the CV itself."""
    if n < 2:
        raise ValueError(f"a coefficient of variation needs two values or more, got {n}")
    return cv / math.sqrt(2 * (n - 1)) * math.sqrt(1 + 2 * cv * cv)


def trials_needed(values, expect):
    """Trials at which the observed spread would put the interval clear of the deciding edge."""
    if len(values) < 2:
        return None
    sd, margin = statistics.stdev(values), expect.margin(statistics.fmean(values))
    if margin <= 0:
        return None
    if sd == 0:
        return len(values)
    n = len(values)
    while n < 10000 and t975(n - 1) * sd / math.sqrt(n) >= margin:
        n += 1
    return n if n < 10000 else None


def evaluate(claim, records):
    values = tuple(claim.per_trial(records))
    if not values:
        return Verdict(claim, values, NO_DATA)
    mean, median, lo, hi = interval(values)
    if len(values) < 2:
        side = claim.expect.side(mean, mean)
        leaning = {REPRODUCED: "on the paper's side", CONTRADICTED: "against the paper"}.get(side, "at the edge")
        return Verdict(claim, values, INCONCLUSIVE, mean, median, lo, hi,
                       why=f"one trial has no interval; its value is {leaning}")
    verdict = claim.expect.side(lo, hi)
    more = trials_needed(values, claim.expect) if verdict == INCONCLUSIVE else None
    return Verdict(claim, values, verdict, mean, median, lo, hi, more)


def evaluate_all(claims, records):
    return [evaluate(c, records) for c in claims]


def table(verdicts):
    """(headers, rows) of the verdict table."""
    headers = ["claim", "verdict", "trials", "median", "95% interval", "paper", "where"]
    rows = []
    for v in verdicts:
        n = len(v.values)
        rows.append([v.claim.id, v.verdict, str(n),
                     "-" if v.median is None else f"{v.median:.3g}",
                     f"[{v.lo:.3g}, {v.hi:.3g}]" if n > 1 else "-",
                     v.claim.expect.text + (f" ({v.claim.paper:g})" if v.claim.paper is not None else ""),
                     v.claim.where])
    return headers, rows


def load_file(path):
    """The claims of one paper file (results/paper/eN.yaml); the experiment is its stem."""
    path = Path(path)
    return load_claims(Reader(load_yaml(path), path), path.stem)


def for_runs(runs, paper_files):
    """[(run, [Verdict])] for each run whose suite has a paper file with claims."""
    files = {Path(p).stem: p for p in paper_files}
    out = []
    for run in runs:
        suite = run.manifest().get("suite")
        if suite in files:
            claims = load_file(files[suite])
            if claims:
                out.append((run, evaluate_all(claims, run.metrics())))
    return out


def render_text(pairs):
    """The verdict table of each run, for the terminal ("" when no run has claims)."""
    parts = []
    for run, verdicts in pairs:
        headers, rows = table(verdicts)
        counts = {}
        for x in verdicts:
            counts[x.verdict] = counts.get(x.verdict, 0) + 1
        summary = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
        parts.append(f"Does {run.label} reproduce the paper? ({summary}; {INTERVAL_METHOD})\n"
                     + tables.render(headers, rows))
        parts += [f"  {x.line()}" for x in verdicts if x.verdict == INCONCLUSIVE]
    return "\n".join(parts)
