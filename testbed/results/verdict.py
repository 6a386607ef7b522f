"""Does a run reproduce its paper? The papers' claims, checks and findings, and a verdict for each.

Each is declared once, beside the paper's figures (`claims:` in results/paper/eN.yaml),
before any run is judged by it:

    - id: e5-negotiation-slower-over-wan
      kind: claim                 # claim | check | finding | model
      words: "processing 1000 resources requests on a LAN took 30 seconds, ..."
      where: "seed 004, section 4.5"
      value: {metric: e5.negotiation_wan_over_lan}
      expect: "> 1"               # the paper's side
      paper: 11.5                 # the paper's own effect size, where it gives one
      band: "x2"                  # declared beforehand: a factor either way, or +- tol
      derived: "1153 s x 0.3 / 30 s"   # how `paper` follows from the seed's figures
      reach: {value: ..., expect: "> 1", resource: "...", plan: "..."}

Kinds:
- **claim**: what the seed says it measured; `words` is the seed's own text (a unit test
  finds it there). Only claims enter the tally and the Holm correction.
- **check**: a mechanism check, a count or a configuration consequence (read calls, TCP
  streams): judged per trial as holds / fails, never given an interval.
- **finding**: a result of this testbed beyond the papers, judged like a claim, not tallied.
- **model**: a scale model's answer to a claim (`model_of`), shown beside it, not tallied.

`value` is the metric expression evaluated once per trial over the run's records: one
recorded metric (`{metric, params}`), the ratio of two, or the least-squares slope of one
over another paired by a parameter (`{slope: [y, x], over: step, times: -1}`). `expect` is
`> x`, `< x`, `= x` (checks) or `~ x +- tol`. A record belongs to trial `params.trial`
(1 when absent), so a run repeated N times gives N values of every claim.

The verdict of a claim, finding or model comes from the 95% t interval on the mean of the
per-trial values:
- out of reach: its `reach` condition (the paper's bottleneck binds here) failed in a trial;
- contradicted: the interval lies wholly on the other side of `expect`;
- inconclusive: it straddles the edge, or the trials do not vary (a count, not a
  measurement), or one trial has no interval, or Holm's correction over the table's claims
  takes the result back;
- direction only: on the paper's side, but the interval misses the band around `paper`;
- reproduced: on the paper's side and, where the paper gives a size, overlapping its band.
"""
import math
import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from testbed.model import tables
from testbed.model.schema import Reader, load_yaml
from testbed.results.expressions import Expression, Selector, Slope
from testbed.results.intervals import interval, t975, t_cdf

REPRODUCED, DIRECTION_ONLY, CONTRADICTED = "reproduced", "direction only", "contradicted"
INCONCLUSIVE, OUT_OF_REACH, NO_DATA = "inconclusive", "out of reach", "no data"
HOLDS, FAILS = "holds", "fails"                       # a check's two verdicts
CLAIM, CHECK, FINDING, MODEL = "claim", "check", "finding", "model"
KINDS = (CLAIM, CHECK, FINDING, MODEL)
QUOTED_KINDS = (CLAIM, CHECK, MODEL)                  # their `words` are the seed's own
EXPECT = re.compile(r"^\s*(?:(?P<op>[<>=])\s*(?P<x>-?[0-9.eE+-]+)"
                    r"|~\s*(?P<c>-?[0-9.eE+-]+)\s*\+-\s*(?P<tol>[0-9.eE+-]+)(?P<pct>%?))\s*$")
BAND = re.compile(r"^\s*(?:x\s*(?P<f>[0-9.eE+]+)|\+-\s*(?P<tol>[0-9.eE+]+)(?P<pct>%?))\s*$")
EQUAL_REL_TOL = 1e-6
INTERVAL_METHOD = "95% t interval on the mean of the trials"
# One-sided level of each claim's test, the two-sided 95% interval's own; Holm's step-down
# keeps it for the whole table of claims
ALPHA = 0.025
HOLM_METHOD = (f"Holm's step-down over the table's paper claims, one-sided t tests at {ALPHA} "
               f"(the 95% interval's own level)")


@dataclass(frozen=True)
class Expectation:
    """`> x`, `< x`, `= x` or `~ centre +- tol`: the paper's side, as an interval test."""
    text: str
    op: str            # ">", "<", "=" or "~"
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
        raise error("expect", f"{text!r} is not '> x', '< x', '= x' or '~ x +- tol' (tol a number or N%)")

    def holds(self, value):
        """Whether one value is on the expected side (for `=`: equal within 1e-6 relative)."""
        if self.op == "=":
            return math.isclose(value, self.x, rel_tol=EQUAL_REL_TOL, abs_tol=EQUAL_REL_TOL)
        return self.side(value, value) == REPRODUCED

    def side(self, lo, hi):
        """REPRODUCED / CONTRADICTED / INCONCLUSIVE for an interval [lo, hi]."""
        if self.op == ">":
            return REPRODUCED if lo > self.x else CONTRADICTED if hi <= self.x else INCONCLUSIVE
        if self.op == "<":
            return REPRODUCED if hi < self.x else CONTRADICTED if lo >= self.x else INCONCLUSIVE
        a, b = (self.x, self.x) if self.op == "=" else (self.x - self.tol, self.x + self.tol)
        return REPRODUCED if a <= lo and hi <= b else CONTRADICTED if hi < a or lo > b else INCONCLUSIVE

    def margin(self, mean):
        """How far the mean is from the nearest edge that decides the verdict."""
        if self.op in "<>=":
            return abs(mean - self.x)
        return min(abs(mean - (self.x - self.tol)), abs(mean - (self.x + self.tol)))

    def p_value(self, values):
        """The one-sided t test's p of the null "the mean is not on the paper's side" (None for
        `~`/`=`, or without a spread)."""
        n = len(values)
        if self.op not in "<>" or n < 2:
            return None
        sd = statistics.stdev(values)
        if sd == 0:
            return None
        t = (statistics.fmean(values) - self.x) / (sd / math.sqrt(n))
        return 1.0 - t_cdf(t, n - 1) if self.op == ">" else t_cdf(t, n - 1)


@dataclass(frozen=True)
class Band:
    """The tolerance declared around the paper's figure: `xF` (a factor either way, on a log
    scale) or `+- tol` / `+- N%`."""
    text: str
    lo: float
    hi: float

    @classmethod
    def parse(cls, text, paper, error):
        m = BAND.match(str(text))
        try:
            if m and m.group("f"):
                f = float(m.group("f"))
                if f > 1 and paper > 0:
                    return cls(str(text).strip(), paper / f, paper * f)
            elif m:
                tol = float(m.group("tol"))
                tol = abs(paper) * tol / 100 if m.group("pct") else tol
                return cls(str(text).strip(), paper - tol, paper + tol)
        except ValueError:
            pass
        raise error("band", f"{text!r} is not 'xF' (F > 1, paper > 0) or '+- tol' (a number or N%)")

    def overlaps(self, lo, hi):
        return lo <= self.hi and hi >= self.lo


@dataclass(frozen=True)
class Reach:
    """Whether the paper's bottleneck binds on this host: `value` must meet `expect` in every
    trial, else the claim is out of reach here."""
    value: Expression
    expect: Expectation
    resource: str      # the resource the paper ran out of, and what binds here instead
    plan: str          # what a run in reach needs


@dataclass(frozen=True)
class Claim:
    id: str
    experiment: str
    words: str
    where: str
    expect: Expectation
    value: Expression
    kind: str = CLAIM
    paper: float | None = None     # the paper's own number for this expression, when it gives one
    band: Band | None = None       # the tolerance declared around `paper`
    derived: str = ""              # how `paper` follows from the seed's figures
    model_of: str | None = None    # kind model: the claim it answers
    reach: Reach | None = None
    note: str = ""

    @property
    def tallied(self):
        """Whether it counts among the paper's claims (the tally, Holm's family)."""
        return self.kind == CLAIM

    def paper_text(self):
        """The paper's side, and its figure with the band where it gives one."""
        size = f" ({self.paper:g}, band {self.band.text})" if self.band else \
            f" ({self.paper:g})" if self.paper is not None else ""
        return self.expect.text + size


def _selector(reader, item, where):
    r = Reader(item, reader.source, where)
    r.only({"metric", "params"})
    params = r.data.get("params") or {}
    if not isinstance(params, dict):
        raise r.error("params", "must be a mapping")
    return Selector(r.str("metric"), dict(params))


def _expression(c, value, where):
    """The Expression of a `value:` mapping (a claim's, or its reach's)."""
    if not isinstance(value, dict) or (set(value) - {"metric", "params", "ratio"}
                                       and set(value) - {"slope", "over", "times"}):
        raise c.error(where, "must be {metric, params}, {ratio: [{metric, params}, {metric, params}]} "
                      "or {slope: [y, x], over: PARAM, times: N}")
    prefix = f"{c.field}.{where}"
    if "slope" in value:
        pair, over, times = value["slope"], value.get("over"), value.get("times", 1)
        if not isinstance(pair, list) or len(pair) != 2:
            raise c.error(f"{where}.slope", "must list two {metric, params}: y, then x")
        if not isinstance(over, str) or not over:
            raise c.error(f"{where}.over", "must name the parameter that pairs y's records with x's")
        if isinstance(times, bool) or not isinstance(times, (int, float)):
            raise c.error(f"{where}.times", f"must be a number, got {times!r}")
        return Expression(Slope(_selector(c, pair[0], f"{prefix}.slope[0]"),
                                _selector(c, pair[1], f"{prefix}.slope[1]"), over, float(times)))
    if "ratio" in value:
        pair = value["ratio"]
        if not isinstance(pair, list) or len(pair) != 2:
            raise c.error(f"{where}.ratio", "must list two {metric, params}: numerator, denominator")
        return Expression(_selector(c, pair[0], f"{prefix}.ratio[0]"), _selector(c, pair[1], f"{prefix}.ratio[1]"))
    return Expression(_selector(c, value, prefix))


def _number(c, name):
    value = c.data.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value)):
        raise c.error(name, f"must be a number, got {value!r}")
    return None if value is None else float(value)


def _reach(c, item):
    r = Reader(item, c.source, f"{c.field}.reach")
    r.only({"value", "expect", "resource", "plan"})
    expect = Expectation.parse(r.data.get("expect"), r.error)
    if expect.op not in "<>":
        raise r.error("expect", f"{expect.text!r}: a reach condition is '> x' or '< x'")
    return Reach(_expression(r, r.data.get("value"), "value"), expect, r.str("resource"), r.str("plan"))


def load_claims(reader, experiment):
    """The `claims:` of one paper file (a schema.Reader over it); [] when it has none."""
    out, seen = [], set()
    for i, item in enumerate(reader.data.get("claims") or []):
        c = Reader(item, reader.source, f"claims[{i}]")
        c.only({"id", "kind", "words", "where", "value", "expect", "paper", "band", "derived", "model_of",
                "reach", "note"})
        cid = c.str("id")
        if cid in seen:
            raise c.error("id", f"{cid!r} is declared twice")
        seen.add(cid)
        kind = c.str("kind", choices=KINDS)
        expect = Expectation.parse(c.data.get("expect"), c.error)
        if expect.op == "=" and kind != CHECK:
            raise c.error("expect", f"{expect.text!r}: only a check is an equality")
        paper, band = _number(c, "paper"), None
        if c.data.get("band") is not None:
            if paper is None:
                raise c.error("band", "a band needs the paper's figure (`paper`) it is around")
            band = Band.parse(c.data["band"], paper, c.error)
        elif paper is not None and kind == CLAIM:
            raise c.error("band", f"missing: the paper gives {paper:g}, so the claim declares the tolerance "
                                  f"around it ('x2', '+- 0.1' or '+- 20%')")
        model_of = c.data.get("model_of")
        if (model_of is not None) != (kind == MODEL):
            raise c.error("model_of", "a model names the claim it answers (`model_of`), and only a model does")
        reach = _reach(c, c.data["reach"]) if c.data.get("reach") is not None else None
        if reach is not None and kind == CHECK:
            raise c.error("reach", "a check holds or fails; it has no reach condition")
        out.append(Claim(cid, experiment, c.str("words"), c.str("where"), expect,
                         _expression(c, c.data.get("value"), "value"), kind, paper, band,
                         str(c.data.get("derived") or ""), model_of, reach, str(c.data.get("note", ""))))
    ids = {c.id: c for c in out}
    for i, claim in enumerate(out):
        if claim.model_of is not None and (claim.model_of not in ids or ids[claim.model_of].kind != CLAIM):
            raise Reader({}, reader.source, f"claims[{i}]").error(
                "model_of", f"{claim.model_of!r} is not a claim of this file")
    return out


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    values: tuple
    verdict: str
    mean: float | None = None
    lo: float | None = None
    hi: float | None = None
    more_trials: int | None = None   # for inconclusive: trials the observed spread would need
    why: str = ""
    p: float | None = None           # the one-sided t test's p (claims, two trials or more)
    p_holm: float | None = None      # p after Holm's step-down over the table's claims
    raw: str = ""                    # the verdict before Holm's correction
    raw_why: str = ""                # `why` before Holm's correction (set by `holm`)

    @property
    def judged(self):
        """Whether the row has a verdict a suite may pass: not one trial, not out of reach, not
        missing. A row that cannot fail never passes: it skips."""
        if self.verdict in (NO_DATA, OUT_OF_REACH):
            return False
        return self.claim.kind == CHECK or len(self.values) > 1

    @property
    def passes(self):
        """A judged suite row passes unless the paper's direction is contradicted (a check:
        unless it fails)."""
        return self.verdict not in (CONTRADICTED, FAILS)

    def estimate(self):
        """The mean [95% interval] with the trials' values; a check's or a constant's values alone."""
        if self.mean is None:
            return "-"
        shown = ", ".join(f"{x:.3g}" for x in self.values)
        if self.lo is None:
            return f"{shown}" if len(self.values) > 1 else f"{self.mean:.3g}"
        return f"{self.mean:.3g} [{self.lo:.3g}, {self.hi:.3g}] ({shown})"

    def line(self):
        c = self.claim
        if self.verdict == NO_DATA:
            return f"{c.id}: no data ({c.value.text()} was not measured in this run)"
        n = len(self.values)
        kind = "" if c.kind == CLAIM else f" ({c.kind})"
        more = f"; about {self.more_trials} trials would decide it" if self.more_trials else ""
        why = f"; {self.why}" if self.why else ""
        est = ("mean " if self.lo is not None else "value" + ("s " if n > 1 else " ")) + self.estimate()
        return (f"{c.id}{kind}: {self.verdict} ({est}, {n} trial{'s' * (n != 1)}, "
                f"paper {c.paper_text()}){why}{more}")


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


def _check(claim, values):
    """A check holds when every trial's value meets `expect`."""
    off = [f"trial {i} gave {x:.6g}" for i, x in enumerate(values, 1) if not claim.expect.holds(x)]
    return Verdict(claim, values, FAILS if off else HOLDS, statistics.fmean(values), why="; ".join(off),
                   raw=FAILS if off else HOLDS)


def _out_of_reach(claim, found):
    """The one-line reason `claim` is out of reach given its reach expression's value in each
    trial ({trial: value}), or None when it is in reach (or was not measured: said in the
    verdict instead)."""
    missed = {t: x for t, x in sorted(found.items()) if not claim.reach.expect.holds(x)}
    if not missed:
        return None
    shown = ", ".join(f"trial {t}: {x:.3g}" for t, x in missed.items())
    return (f"{claim.reach.resource} (measured {claim.reach.value.text()} {shown}; in reach needs "
            f"{claim.reach.expect.text}); {claim.reach.plan}")


def evaluate(claim, records):
    """One claim's verdict over every trial in `records`, before Holm's correction."""
    values = tuple(claim.value.per_trial(records))
    if not values:
        return Verdict(claim, values, NO_DATA, raw=NO_DATA)
    if claim.kind == CHECK:
        return _check(claim, values)
    mean, _median, lo, hi = interval(values)
    n = len(values)
    reached = claim.reach.value.by_trial(records) if claim.reach is not None else None
    if reached:
        why = _out_of_reach(claim, reached)
        if why:
            return Verdict(claim, values, OUT_OF_REACH, mean, why=why, raw=OUT_OF_REACH)
    unmeasured = "its reach condition was not measured" if reached == {} else ""
    if n < 2:
        side = claim.expect.side(mean, mean)
        leaning = {REPRODUCED: "on the paper's side", CONTRADICTED: "against the paper"}.get(side, "at the edge")
        why = "; ".join(x for x in (f"one trial has no interval; its value is {leaning}", unmeasured) if x)
        return Verdict(claim, values, INCONCLUSIVE, mean, why=why, raw=INCONCLUSIVE)
    if len(set(values)) == 1:
        why = ("every trial gave the same value: a count the configuration fixes, not a measurement "
               "with a spread (a check, not a reproduction)")
        return Verdict(claim, values, INCONCLUSIVE, mean, why=why, raw=INCONCLUSIVE)
    verdict, why = claim.expect.side(lo, hi), unmeasured
    if verdict == REPRODUCED and unmeasured:
        verdict = INCONCLUSIVE
    elif verdict == REPRODUCED and claim.band is not None and not claim.band.overlaps(lo, hi):
        verdict = DIRECTION_ONLY
        why = (f"the size is outside the band [{claim.band.lo:.3g}, {claim.band.hi:.3g}]: "
               f"mean / paper = {mean / claim.paper:.3g}" if claim.paper else "the size is outside the band")
    more = trials_needed(values, claim.expect) if verdict == INCONCLUSIVE else None
    return Verdict(claim, values, verdict, mean, lo, hi, more, why, claim.expect.p_value(values), raw=verdict)


def holm(verdicts):
    """The verdicts with Holm's step-down applied over the paper claims among them: a claim
    judged on the paper's side whose adjusted p is ALPHA or more is inconclusive. Applied to
    the raw verdicts, so a table of several runs' verdicts is corrected once, as a whole."""
    family = sorted((v for v in verdicts if v.claim.tallied and v.p is not None), key=lambda v: v.p)
    m, adjusted, running = len(family), {}, 0.0
    for i, v in enumerate(family):
        running = max(running, min(1.0, (m - i) * v.p))
        adjusted[id(v)] = running
    out = []
    for v in verdicts:
        if id(v) not in adjusted:
            out.append(replace(v, verdict=v.raw or v.verdict, p_holm=None))
            continue
        before = v.raw_why if v.p_holm is not None else v.why
        p_holm, verdict, why = adjusted[id(v)], v.raw, before
        if v.raw in (REPRODUCED, DIRECTION_ONLY) and p_holm >= ALPHA:
            verdict = INCONCLUSIVE
            why = "; ".join(x for x in (before, f"on the paper's side alone, but not after Holm's correction over "
                                                f"{m} claims (adjusted p {p_holm:.3g})") if x)
        out.append(replace(v, verdict=verdict, p_holm=p_holm, why=why, raw_why=before))
    return out


def evaluate_all(claims, records):
    """Every claim's verdict over `records`, Holm-corrected over the claims among them."""
    return holm([evaluate(c, records) for c in claims])


SECTIONS = ((CLAIM, "paper claims"), (CHECK, "mechanism checks"), (FINDING, "findings of this testbed"))


def ordered(verdicts):
    """[(section title, [Verdict])]: the paper claims, each followed by its scale models, then
    the checks, then the findings; empty sections left out."""
    models = {}
    for v in verdicts:
        if v.claim.kind == MODEL:
            models.setdefault(v.claim.model_of, []).append(v)
    out = []
    for kind, title in SECTIONS:
        rows = []
        for v in verdicts:
            if v.claim.kind == kind:
                rows += [v] + (models.pop(v.claim.id, []) if kind == CLAIM else [])
        if kind == CLAIM:
            rows += [v for vs in models.values() for v in vs]   # a model whose claim is not shown
        if rows:
            out.append((title, rows))
    return out


def table(verdicts):
    """(headers, rows) of the verdict table, in `ordered` order (a model row's id is indented)."""
    headers = ["claim", "verdict", "trials", "mean [95% interval] (trial values)", "p (Holm)", "paper", "where"]
    rows = []
    for _title, section in ordered(verdicts):
        for v in section:
            rows.append([("  " + v.claim.id) if v.claim.kind == MODEL else v.claim.id,
                         v.verdict + (" (model)" if v.claim.kind == MODEL else ""), str(len(v.values)),
                         v.estimate(), "-" if v.p_holm is None else f"{v.p_holm:.3g}",
                         v.claim.paper_text(), v.claim.where])
    return headers, rows


def tally(verdicts):
    """"N reproduced, M inconclusive, ..." over the paper claims alone ("none" for a table of checks)."""
    counts = {}
    for v in verdicts:
        if v.claim.tallied:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "none"


def load_file(path):
    """The claims of one paper file (results/paper/eN.yaml); the experiment is its stem."""
    path = Path(path)
    return load_claims(Reader(load_yaml(path), path), path.stem)


def for_runs(runs, paper_files):
    """[(run, [Verdict])] for each (run, suite, records) of `runs` whose suite has a paper
    file with claims: the caller has read the run (compare.RunSnapshot)."""
    files = {Path(p).stem: p for p in paper_files}
    out = []
    for run, suite, records in runs:
        if suite in files:
            claims = load_file(files[suite])
            if claims:
                out.append((run, evaluate_all(claims, records)))
    return out


def render_text(pairs):
    """The verdict table of each run, for the terminal ("" when no run has claims)."""
    parts = []
    for run, verdicts in pairs:
        headers, rows = table(verdicts)
        parts.append(f"Does {run.label} reproduce the paper? (paper claims: {tally(verdicts)}; "
                     f"{INTERVAL_METHOD}; {HOLM_METHOD})\n" + tables.render(headers, rows))
        parts += [f"  {x.line()}" for x in verdicts if x.why or x.more_trials]
    return "\n".join(parts)
