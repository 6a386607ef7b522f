"""The experiment registry: one `EXPERIMENT = Experiment(...)` per experiment, in its package
under testbed/experiments/.

An Experiment declares, once, everything the CLI, the runner, the Robot
libraries and `compare` need to know about it: its suite file, its typed
parameters and their values at each scale (`ci`, `quick`, `full`), the
profiles it compares by default, the metrics it records, the parameters its
plots use as x axes, its file of the paper's figures, the topology roles it uses and
measures (what `testbed run` may pause and pin: testbed/harness/quiet.py),
optionally its own figures and text tables beyond the line plots (E3's heatmaps, E4's
idle tail), and the test cases generated in its suite (`rows`: the point rows' axes,
names, tags and template arguments; rows.py renders them, with one row per claim of its
paper file) and the kinds of point those rows measure (`points`). Nothing else lists
suites: `experiments()` imports every module of each package under testbed/experiments/ and
keeps those that define EXPERIMENT.
"""
import importlib
import math
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from testbed import PROJECT_ROOT
from testbed.harness.rows import check_declaration, render_all
from testbed.model.errors import ConfigError
from testbed.results import verdict
from testbed.model.topology import ROLES

SCALES = ("ci", "quick", "full")
KINDS = {"int": "a whole number like 8", "float": "a number like 0.25",
         "ints": "a list of whole numbers like 1,2,4", "numbers": "a list of numbers like 0,20,40",
         "names": "a list of names like root,uproot"}
NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
# Ceilings the experiments' parameters share: what one run on the testbed's guests can use
DAY_S = 86400          # a duration or a wait, seconds
MAX_RTT_MS = 1000      # an emulated round trip, ms (the papers' sites are at most 100 ms apart)
MAX_JOBS = 100000      # jobs one run asks the schedd for at once (the papers' largest runs are below)


def _number(text, whole):
    text = str(text).strip()
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if whole or ("." not in text and "e" not in text.lower()):
        return int(value) if value == int(value) else None
    return value


def _finite(value):
    """A value that already has a type (from code or YAML): None if it is nan, infinite or
    beyond any float."""
    try:
        return value if math.isfinite(value) else None
    except OverflowError:
        return None


def _fmt(value):
    """A bound or a value as a user reads it: whole numbers in full, others like 0.25."""
    return str(value) if isinstance(value, int) else f"{value:g}"


@dataclass(frozen=True)
class Param:
    """One parameter of an experiment: its type (`int`, `float`, `ints`, `numbers`, `names`),
    what it means, the bounds of its values (every kind but `names`: `--set` and the scales
    are checked against them), and whether the suite has one row per value (then a value
    must be one of the full scale's: the rows are static in the .robot file, generated from
    the full scale by an Axis of the registry entry's `rows` or written by hand)."""
    kind: str
    help: str = ""
    rows: bool = False
    optional: bool = False   # a scale may leave it None: "not set, the site's own" (e.g. the topology's)
    minimum: float | None = None   # the smallest value (of each value, for a list) the suite can use
    maximum: float | None = None   # ... and the largest: every kind but `names` declares both

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Param kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        bounds = (self.minimum, self.maximum)
        if self.kind == "names":
            if bounds != (None, None):
                raise ValueError("a names Param has no minimum or maximum")
            return
        if not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) for b in bounds):
            raise ValueError(f"a {self.kind} Param needs a finite minimum and maximum (what the suite can use), "
                             f"not {self.minimum!r} and {self.maximum!r}")
        if self.minimum > self.maximum:
            raise ValueError(f"a {self.kind} Param's minimum {self.minimum!r} is above its maximum {self.maximum!r}")

    @property
    def range(self):
        """'min..max' as a user reads it ('' for names, which have no bounds)."""
        return "" if self.kind == "names" else f"{_fmt(self.minimum)}..{_fmt(self.maximum)}"

    def parse(self, key, value):
        """A typed value from `--set` text (or a value that already has a type), within its
        bounds; ConfigError if wrong."""
        out = self._typed(key, value)
        if self.kind == "names":
            return out
        for v in out if isinstance(out, list) else [out]:
            if not self.minimum <= v <= self.maximum:
                raise ConfigError("--set", f"{key}={value}", f"{key} must be from {_fmt(self.minimum)} to "
                                                             f"{_fmt(self.maximum)}, not {_fmt(v)}")
        return out

    def _typed(self, key, value):
        bad = ConfigError("--set", f"{key}={value}", f"{key} must be {KINDS[self.kind]}")
        if self.kind == "names":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            out = [str(v).strip() for v in items if str(v).strip()]
            if not out or not all(NAME.match(v) for v in out):
                raise bad
            return out
        if self.kind in ("ints", "numbers"):
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            items = [v for v in items if str(v).strip()]
            out = [_number(v, self.kind == "ints") if not isinstance(v, (int, float)) or isinstance(v, bool)
                   else _finite(v) for v in items]
            if not out or any(v is None or isinstance(v, bool) for v in out) or \
                    (self.kind == "ints" and any(not isinstance(v, int) for v in out)):
                raise bad
            return out
        if isinstance(value, bool):
            raise bad
        if self.kind == "int":
            out = value if isinstance(value, int) else _number(value, True)
            if out is None:
                raise bad
            return out
        out = _finite(value) if isinstance(value, (int, float)) else _number(value, False)
        if out is None:
            raise bad
        return float(out)

    def check(self, value):
        """True if a scale's declared value has this parameter's type."""
        if value is None:
            return self.optional
        try:
            return self.parse("check", value) == value
        except ConfigError:
            return False


@dataclass(frozen=True)
class ReleaseFinding:
    """A metric the release matrix (docs/operations/release-matrix.md) reads on each release
    beside the paper's claims: a result a site checks before an upgrade, such as an upstream
    defect. One matrix row per parameter set of its records that match `where`."""
    metric: str                    # a metric of the experiment's `metrics`
    says: str                      # what the value shows, one line
    where: dict = field(default_factory=dict)   # {record parameter: value} the rows are kept to
    page: str | None = None        # the docs page (under docs/) that reports it in full


@dataclass(frozen=True)
class DocFigure:
    """One headline figure of an experiment's docs page, drawn by `testbed report docs` from
    its kept reference into docs/experiments/img/<experiment>-<what>.png. Either `draw`, a
    figure of its own (draw(records) -> a matplotlib Figure, or None when the records hold
    nothing to draw), or `pick`, a file-name pattern (fnmatch) of a PNG its `figures` maker
    writes (the first match in name order is taken)."""
    what: str                      # the file name's part after `<experiment>-`
    alt: str                       # the image's alt text: what it shows, one line
    caption: str                   # the caption's first sentence: what it shows, beside which paper figure
    draw: Callable | None = None
    pick: str | None = None
    # what a point (or a cell) is when the reference has several trials; with one trial the
    # caption says the points are its values
    points: str = "points are the means over the trials with their 95% t intervals"

    def __post_init__(self):
        if (self.draw is None) == (self.pick is None):
            raise ValueError(f"DocFigure {self.what!r}: give either draw or pick")
        if not NAME.match(self.what):
            raise ValueError(f"DocFigure {self.what!r}: what must be a file-name part like idle-tail")
        if "[" in self.alt or "]" in self.alt or "\n" in self.caption:
            raise ValueError(f"DocFigure {self.what!r}: alt has no brackets and the caption is one line")


@dataclass(frozen=True)
class Experiment:
    """What one experiment (or the smoke suite) is, declared once."""
    name: str                      # `testbed run NAME`
    title: str
    seed: str | None               # the paper (../shared/seeds/SEED.txt); None for the smoke suite
    suite: str                     # robot/suites/X.robot, relative to the project
    params: dict = field(default_factory=dict)          # name -> Param
    scales: dict = field(default_factory=dict)          # "ci" | "quick" | "full" -> {name: value}
    profiles: tuple = ("default",)                       # compared by default (testbed run/test/demo)
    row_profiles: tuple = ()       # profiles the suite has rows for (empty: any profile)
    metrics: tuple = ()            # names this experiment's suite and libraries record
    x_params: tuple = ("t",)       # record parameters that are plot x axes, in order of preference
    paper: str | None = None       # results/paper/NAME.yaml, the paper's figures
    headline: bool = False         # the one `testbed demo` runs
    # Trials per run at each scale, declared before any run: a reference is judged on exactly
    # these (`reference save` refuses another count); `--repeat` makes a run of its own
    trials: dict = field(default_factory=lambda: {"ci": 1, "quick": 3, "full": 3})
    # The profiles `testbed demo` compares (empty: `profiles`): what fits the demo's half hour
    demo_profiles: tuple = ()
    # The profiles `testbed test` compares at ci scale (empty: `profiles`): what fits CI's budget
    ci_profiles: tuple = ()
    # The `--set` values `testbed demo` adds to the quick scale to stay within its half hour
    # (every claim's points kept): {param: value}
    demo_sets: dict = field(default_factory=dict)
    # Its own figures and tables, called by `compare` with `columns` = {column label
    # (run/profile, as in the comparison table): [that column's metric records]}:
    figures: Callable | None = None  # figures(columns, outdir) -> [PNG paths written]
    tables: Callable | None = None   # tables(columns) -> text for the terminal ("" if none)
    # The headline figures of its docs page (DocFigure, at most about three: what the reader
    # looks at first), drawn from its kept reference by `testbed report docs`
    doc_figures: tuple = ()
    # The results of its own the release matrix shows per release beside its claims
    # (ReleaseFinding): what an upgrade may change
    release_findings: tuple = ()
    # What `testbed demo` runs on a given site: sized(scale, accelerator, topology) ->
    # ({param: value} to set, [one line per change saying why]); None: the scale as it is.
    sized: Callable | None = None
    # Whether a scale fits a topology: fits(params, topology) -> None, or one line saying
    # what the topology lacks (checked before any VM is touched); None: any topology.
    fits: Callable | None = None
    # Whether parameters agree with each other: consistent(params) -> None, or one line
    # naming the parameters and what they must satisfy (each scale is checked at import,
    # a run's `--set` values before anything else); None: no rule across parameters.
    consistent: Callable | None = None
    # The suite's generated test cases (rows.Block: Rows of Cases over Axes), each block
    # between its marker lines in the suite; the claim rows come from the paper file.
    rows: tuple = ()
    # The topology roles (model/topology.py ROLES) whose guests the suite and its library talk
    # to, directly or through HTCondor and XRootD: a guest none of whose roles is here may be
    # paused for the run (`--pause-unused`; never one of the main pool's, constants.POOL_ROLES).
    # Required: every experiment says it.
    uses: tuple | None = None
    # The roles whose guests the suite times, in order: `--pin` gives each role's guests host
    # CPUs of their own (the first role the first CPUs); () pins nothing.
    measured: tuple = ()
    # The kinds of point its generated rows measure with `Measure Point` (points.py), each
    # {row argument: the run parameter its value must be among ('profile': the profiles
    # compared), or None}; its library has point_<kind> for each.
    points: dict = field(default_factory=dict)
    # What a site needs for it (`testbed plan`, capacity.py): capacity(params, host_mb,
    # host_cpus) -> ({group name: capacity.Group}, [notes]), the host groups its parameters
    # need on machines of at most host_mb MB and host_cpus cores; None: no plan for it.
    capacity: Callable | None = None

    def sized_for(self, scale, accelerator, topo):
        """The `--set` values this site needs at `scale`, and why (none without a `sized`)."""
        return self.sized(scale, accelerator, topo) if self.sized else ({}, [])

    def __post_init__(self):
        if not self.uses:
            raise ValueError(f"{self.name}: must declare uses=(...), the topology roles its suite uses")
        for field_name in ("uses", "measured"):
            unknown = [r for r in getattr(self, field_name) if r not in ROLES]
            if unknown:
                raise ValueError(f"{self.name}: {field_name} names {unknown}, not roles ({', '.join(ROLES)})")
        for field_name in ("demo_profiles", "ci_profiles"):
            stray = [p for p in getattr(self, field_name) if p not in self.profiles]
            if stray:
                raise ValueError(f"{self.name}: {field_name} names {stray}, not among its profiles")
        if not set(self.measured) <= set(self.uses):
            raise ValueError(f"{self.name}: measured {sorted(set(self.measured) - set(self.uses))} "
                             f"is not among the roles it uses")
        if set(self.trials) != set(SCALES) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in self.trials.values()):
            raise ValueError(f"{self.name}: trials must give a whole number >= 1 for each of {', '.join(SCALES)}")
        if set(self.scales) != set(SCALES):
            raise ValueError(f"{self.name}: scales must be exactly {', '.join(SCALES)}")
        for scale, values in self.scales.items():
            if set(values) != set(self.params):
                raise ValueError(f"{self.name}: scale {scale} must give every parameter "
                                 f"({', '.join(sorted(set(values) ^ set(self.params)))} differ)")
            for key, value in values.items():
                spec = self.params[key]
                if value is None and spec.optional:
                    continue
                try:
                    typed = spec.parse(key, value)
                except ConfigError as exc:  # the wrong type, or outside the declared bounds
                    raise ValueError(f"{self.name}: {scale}.{key} = {value!r}: {exc.problem}") from None
                if typed != value:
                    raise ValueError(f"{self.name}: {scale}.{key} = {value!r} is not {KINDS[spec.kind]}")
        for scale, values in self.scales.items():
            problem = self.consistent(values) if self.consistent else None
            if problem:
                raise ValueError(f"{self.name}: scale {scale}: {problem}")
        whats = [f.what for f in self.doc_figures]
        if len(set(whats)) != len(whats):
            raise ValueError(f"{self.name}: two doc_figures share a name: {whats}")
        if any(f.pick for f in self.doc_figures) and not self.figures:
            raise ValueError(f"{self.name}: a doc figure picks from its figures maker, and it declares none")
        unrecorded = [f.metric for f in self.release_findings if f.metric not in self.metrics]
        if unrecorded:
            raise ValueError(f"{self.name}: release_findings name {unrecorded}, not among its metrics")
        check_declaration(self)

    @property
    def suite_path(self):
        return PROJECT_ROOT / self.suite

    @property
    def paper_path(self):
        return PROJECT_ROOT / self.paper if self.paper else None

    def claims(self):
        """The headline claims of its paper file, in order ([] without one)."""
        return verdict.load_file(self.paper_path) if self.paper else []

    def generated_rows(self):
        """{block name: the text between the block's markers in the suite}, rendered from
        the declared rows and the paper file's claims."""
        return render_all(self, self.claims())

    def parameters(self, scale, overrides=None):
        """The parameters at `scale` with `--set` overrides (keys in any case, values as
        text or typed). An unknown key or a value of the wrong type is a ConfigError that
        names the key and the known keys."""
        if scale not in SCALES:
            raise ConfigError("testbed run", "--scale", f"{scale!r}: must be one of {', '.join(SCALES)}")
        params = dict(self.scales[scale])
        for key, value in (overrides or {}).items():
            name = str(key).lower()
            if name not in self.params:
                known = ", ".join(f"{n} {self.params[n].range}".strip() for n in sorted(self.params)) or "none"
                raise ConfigError("--set", str(key), f"{self.name} has no parameter {name!r} (known: {known})")
            spec = self.params[name]
            params[name] = spec.parse(name, value)
            if spec.rows:
                allowed = self.scales["full"][name]
                # both sides are typed (parsed above, the scales checked at import): 80 == 80.0
                extra = [v for v in params[name] if v not in allowed]
                if extra:
                    raise ConfigError("--set", f"{name}={value}",
                                      f"{self.suite} has rows for {name} {', '.join(str(a) for a in allowed)} "
                                      f"only (not {', '.join(str(v) for v in extra)}); "
                                      + self._how_to_add(f"the value to the full scale's {name}", param=name))
        problem = self.consistent(params) if self.consistent else None
        if problem:
            given = ", ".join(f"{k}={v}" for k, v in (overrides or {}).items())
            raise ConfigError("--set" if overrides else self.name, given or f"{scale} scale", problem)
        return params

    def _how_to_add(self, what, param=None):
        """How a user adds rows: to the registry when the rows are generated, else to the suite."""
        axes = [a for block in self.rows for rows in block.rows for a in rows.axes]
        if any(a.param == param if param else a.profiles for a in axes):
            return f"add {what} in the {self.name} registry entry, then `testbed suites --write`"
        return "add rows to the suite"

    def check_topology(self, scale, params, topo):
        """ConfigError naming the topology file when the parameters at `scale` need more
        than the topology has (e.g. more whole nodes than worker startds)."""
        problem = self.fits(params, topo) if self.fits else None
        if problem:
            raise ConfigError(topo.source, f"{self.name} at {scale}", problem)

    def check_profiles(self, names):
        """ConfigError if the suite has no rows for one of the profiles."""
        if not self.row_profiles:
            return
        missing = [n for n in names if n not in self.row_profiles]
        if missing:
            raise ConfigError("--profile", missing[0],
                              f"{self.suite} has rows for profiles {', '.join(self.row_profiles)} only; "
                              + self._how_to_add(f"{missing[0]} to row_profiles") + f" to compare {missing[0]}")


def experiments():
    """{name: Experiment} of every module of a package in testbed/experiments that defines
    EXPERIMENT (each experiment's package holds its entry and its modules; adding one touches
    nothing here): the smoke suite first, then the papers' experiments by name, then the other
    suites (the fault suite) by name - so `testbed test` runs the faults after the measurements."""
    import testbed.experiments as experiments_package
    found = []
    for package in pkgutil.iter_modules(experiments_package.__path__, f"{experiments_package.__name__}."):
        if not package.ispkg:
            continue
        modules = importlib.import_module(package.name).__path__
        for info in pkgutil.iter_modules(modules, f"{package.name}."):
            exp = getattr(importlib.import_module(info.name), "EXPERIMENT", None)
            if isinstance(exp, Experiment):
                found.append(exp)
    found.sort(key=lambda e: (e.name != "smoke", e.seed is None, e.name))
    names = [e.name for e in found]
    if len(set(names)) != len(names):
        raise ValueError(f"two experiments share a name: {names}")
    return {e.name: e for e in found}


def get(name, verb="testbed run"):
    known = experiments()
    if name not in known:
        raise ConfigError(verb, "SUITE", f"unknown suite {name!r} (known: {', '.join(known)})")
    return known[name]


def headline():
    """The experiment `testbed demo` runs."""
    heads = [e for e in experiments().values() if e.headline]
    if len(heads) != 1:
        raise ValueError(f"exactly one experiment must be the headline, found {[e.name for e in heads]}")
    return heads[0]


def plot_axes():
    """{suite name: x_params} for compare."""
    return {name: e.x_params for name, e in experiments().items()}


def figure_makers():
    """{suite name: figures(columns, outdir)} of the experiments that draw their own."""
    return {name: e.figures for name, e in experiments().items() if e.figures}


def table_makers():
    """{suite name: tables(columns)} of the experiments that print their own tables."""
    return {name: e.tables for name, e in experiments().items() if e.tables}


def paper_files():
    return [e.paper_path for e in experiments().values() if e.paper]
