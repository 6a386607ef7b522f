"""A suite's generated rows: the test cases the registry declares, rendered as Robot text.

An experiment declares named blocks of rows (`Experiment(rows=(Block(...), ...))`); each
block is the text between two marker lines of its suite, and hand-written tests stay
outside the markers:

    # BEGIN GENERATED ROWS points (testbed suites --write)
    rtt0-W-table4-default
        [Tags]    RTT0    W    profile:table4-default
        table4-default    0    1
    ...
    # END GENERATED ROWS points

A block holds Rows: one test case per Case per point of the product of the Rows' axes,
the first axis outermost (with two Cases, each point's two tests are next to each other).
An axis takes its values from a `rows=True` parameter at the full scale (so `--set` may
choose any of them), from the experiment's row profiles, or from a list; `derived` adds
fields computed from a value (E1's rate label `2W` of the factor 2). A Case's name, tags,
arguments and documentation are patterns naming the fields in braces (`rtt{rtt}-{rate}`);
Robot's own `${var}` is left alone. An experiment whose paper file declares claims also
has a `claims` block: one `Paper Claim Should Hold` row per claim, in the file's order,
its documentation the claim's place, words and expression.

`testbed suites --write` rewrites every block from the registry; `--check` (and a unit
test) names the suite, the block and the first row that differs.
"""
import re
from dataclasses import dataclass, field

from testbed.harness.points import POINT_TEMPLATE
from testbed.model.errors import ConfigError
from testbed.results import verdict

CLAIMS = "claims"
CLAIM_TEMPLATE = "Paper Claim Should Hold"
CLAIM_TAG = "claim"
BEGIN = "# BEGIN GENERATED ROWS {name} (testbed suites --write)"
END = "# END GENERATED ROWS {name}"
_BEGIN = re.compile(r"^# BEGIN GENERATED ROWS (?P<name>\S+) \(testbed suites --write\)$")
_END = re.compile(r"^# END GENERATED ROWS (?P<name>\S+)$")
_ANY_MARKER = re.compile(r"^#\s*(BEGIN|END)\s+GENERATED\s+ROWS\b")
_FIELD = re.compile(r"(?<![$@&%])\{([A-Za-z_]\w*)\}")
SEP = "    "   # Robot's cell separator, as the suites write it


def value_text(value):
    """A parameter value as a row shows it: 80 for 80 and 80.0, 0.5 for 0.5."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Axis:
    """One axis of Rows: a field `name` taking each value of `param` at the full scale, or
    of the experiment's row profiles (`profiles=True`), or of `values`."""
    name: str
    param: str = ""
    profiles: bool = False
    values: tuple = ()
    derived: dict = field(default_factory=dict)   # {field: function(value) -> text}

    def __post_init__(self):
        if sum((bool(self.param), self.profiles, bool(self.values))) != 1:
            raise ValueError(f"axis {self.name!r}: give exactly one of param=, profiles=True, values=")

    def points(self, exp):
        """[{field: text}] for each of this axis's values, in order."""
        if self.param:
            found = exp.scales["full"][self.param]
        elif self.profiles:
            found = exp.row_profiles
        else:
            found = self.values
        return [{self.name: value_text(v), **{k: str(f(v)) for k, f in self.derived.items()}} for v in found]


@dataclass(frozen=True)
class Case:
    """The pattern of one test case. `template` empty: the suite's own `Test Template`.
    `doc` is every row's documentation, or {row name: documentation} for some rows; a
    newline in it is a `...` continuation line. `setup`/`teardown`: the keyword and its
    arguments, if the row has its own."""
    name: str
    template: str = ""
    args: tuple = ()
    tags: tuple = ()
    doc: str | dict = ""
    setup: tuple = ()
    teardown: tuple = ()


@dataclass(frozen=True, init=False)
class Rows:
    """One test case per Case per point of the product of the axes (no axes: one point)."""
    cases: tuple
    axes: tuple

    def __init__(self, *cases, axes=()):
        if not cases or not all(isinstance(c, Case) for c in cases):
            raise ValueError("Rows needs one or more Case")
        fields = [name for a in axes for name in (a.name, *a.derived)]
        if len(set(fields)) != len(fields):
            raise ValueError(f"two axes of one Rows give the same field: {fields}")
        object.__setattr__(self, "cases", cases)
        object.__setattr__(self, "axes", tuple(axes))

    def points(self, exp):
        out = [{}]
        for axis in self.axes:
            out = [dict(p, **q) for p in out for q in axis.points(exp)]
        return out


@dataclass(frozen=True, init=False)
class Block:
    """The rows between one pair of marker lines of the suite."""
    name: str
    rows: tuple

    def __init__(self, name, *rows):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name == CLAIMS:
            raise ValueError(f"block name {name!r}: letters, digits, '-', '_', '.' only, and not {CLAIMS!r}")
        if not rows or not all(isinstance(r, Rows) for r in rows):
            raise ValueError(f"block {name!r} needs one or more Rows")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "rows", rows)


def check_declaration(exp):
    """ValueError if a declared block names a parameter that is not a row parameter, profiles
    the experiment has no row profiles for, or a block twice."""
    names = [b.name for b in exp.rows]
    if len(set(names)) != len(names):
        raise ValueError(f"{exp.name}: a block of rows is declared twice: {names}")
    for block in exp.rows:
        for rows in block.rows:
            for axis in rows.axes:
                if axis.param and (axis.param not in exp.params or not exp.params[axis.param].rows):
                    raise ValueError(f"{exp.name}: rows {block.name!r} axis {axis.name!r}: {axis.param!r} "
                                     f"is not a parameter declared with rows=True")
                if axis.profiles and not exp.row_profiles:
                    raise ValueError(f"{exp.name}: rows {block.name!r} axis {axis.name!r}: no row_profiles")
            for case in rows.cases:
                if case.template == POINT_TEMPLATE:
                    _check_point_case(exp, block, case)
    for kind, args in exp.points.items():
        for arg, param in args.items():
            if param and param != "profile" and param not in exp.params:
                raise ValueError(f"{exp.name}: point {kind!r} argument {arg!r}: {param!r} is not a parameter")


def _check_point_case(exp, block, case):
    """ValueError unless a `Measure Point` case names a declared kind and exactly its arguments."""
    where = f"{exp.name}: rows {block.name!r} case {case.name!r}"
    if not case.args or case.args[0] not in exp.points:
        raise ValueError(f"{where}: {POINT_TEMPLATE} needs a declared point kind first "
                         f"(declared: {', '.join(exp.points) or 'none'})")
    named = [a.split("=", 1)[0] for a in case.args[1:]]
    if any("=" not in a for a in case.args[1:]) or sorted(named) != sorted(exp.points[case.args[0]]):
        raise ValueError(f"{where}: {POINT_TEMPLATE} {case.args[0]} takes "
                         f"{', '.join(f'{a}=' for a in exp.points[case.args[0]])}, not {', '.join(case.args[1:])}")


def fill(pattern, fields, where):
    """The pattern with each {field} replaced; ValueError naming an unknown field."""
    def one(m):
        if m.group(1) not in fields:
            raise ValueError(f"{where}: pattern {pattern!r} names {{{m.group(1)}}}, not a field of its axes "
                             f"({', '.join(sorted(fields)) or 'none'})")
        return fields[m.group(1)]
    return _FIELD.sub(one, pattern)


def render_case(name, doc="", tags=(), template="", args=(), setup=(), teardown=()):
    """One test case as the suites write it (each line ends with a newline)."""
    lines = [name]
    if doc:
        first, *more = doc.split("\n")
        lines.append(f"{SEP}[Documentation]{SEP}{first}".rstrip())
        lines += [f"{SEP}...{SEP}{line}".rstrip() for line in more]
    if tags:
        lines.append(SEP.join([f"{SEP}[Tags]", *tags]))
    if setup:
        lines.append(SEP.join([f"{SEP}[Setup]", *setup]))
    if template:
        lines.append(f"{SEP}[Template]{SEP}{template}")
    if args:
        lines.append(SEP + SEP.join(args))
    if teardown:
        lines.append(SEP.join([f"{SEP}[Teardown]", *teardown]))
    return "".join(f"{line}\n" for line in lines)


def render_block(block, exp):
    """The text of one declared block: its test cases, a blank line between two."""
    cases, seen = [], set()
    for rows in block.rows:
        points = rows.points(exp)
        for case in rows.cases:
            docs = case.doc if isinstance(case.doc, dict) else {}
            names = {fill(case.name, p, f"{exp.name} {block.name}") for p in points}
            unknown = sorted(set(docs) - names)
            if unknown:
                raise ValueError(f"{exp.name} {block.name}: documentation for {unknown}, which {case.name!r} "
                                 f"does not generate")
        for point in points:
            for case in rows.cases:
                where = f"{exp.name} {block.name} {case.name!r}"
                name = fill(case.name, point, where)
                if name in seen:
                    raise ValueError(f"{where}: generates the test {name!r} twice")
                seen.add(name)
                doc = case.doc.get(name, "") if isinstance(case.doc, dict) else fill(case.doc, point, where)
                cells = {k: [fill(c, point, where) for c in getattr(case, k)]
                         for k in ("tags", "args", "setup", "teardown")}
                cases.append(render_case(name, doc, template=case.template, **cells))
    return "\n".join(cases)


def robot_text(text):
    """Plain text (a claim's words from YAML) as one Robot cell: backslashes and variable
    openings escaped, runs of blanks one space, no leading '#'."""
    text = " ".join(str(text).split()).replace("\\", "\\\\")
    text = re.sub(r"([$@&%]\{)", r"\\\1", text)
    return "\\" + text if text.startswith("#") else text


def claim_doc(claim):
    words = robot_text(claim.words) if claim.kind == verdict.FINDING else f'"{robot_text(claim.words)}"'
    how = ("Checked in every trial of the run" if claim.kind == verdict.CHECK
           else f"A {claim.kind}, judged over every trial of the run")
    return (f"{robot_text(claim.where)}: {words}\n"
            f"{how} ({robot_text(claim.value.text())}, paper {robot_text(claim.paper_text())}).")


def render_claims(claims):
    """The `claims` block: one `Paper Claim Should Hold` row per claim, check, finding or
    model, in order, tagged `claim` and its kind."""
    return "\n".join(render_case(c.id, claim_doc(c), list(dict.fromkeys([CLAIM_TAG, c.kind])), CLAIM_TEMPLATE,
                                  [c.id]) for c in claims)


def render_all(exp, claims):
    """{block name: text} of everything the registry generates in the experiment's suite."""
    out = {block.name: render_block(block, exp) for block in exp.rows}
    if claims:
        out[CLAIMS] = render_claims(claims)
    return out


def find_blocks(text, source):
    """{name: (first line of the block's rows, its END line)} as 0-based line indexes, or a
    ConfigError naming the file, the line and what is wrong with the markers."""
    found, open_name, begin_at = {}, None, None
    for i, line in enumerate(text.splitlines()):
        begin, end = _BEGIN.match(line), _END.match(line)
        where = f"line {i + 1}"
        if begin:
            if open_name is not None:
                raise ConfigError(source, where, f"BEGIN of {begin['name']!r} inside block {open_name!r} "
                                                 f"(line {begin_at + 1}); close it first")
            if begin["name"] in found:
                raise ConfigError(source, where, f"block {begin['name']!r} appears twice")
            open_name, begin_at = begin["name"], i
        elif end:
            if end["name"] != open_name:
                raise ConfigError(source, where, f"END of {end['name']!r} without its BEGIN"
                                  + (f" (block {open_name!r} is open)" if open_name else ""))
            found[open_name] = (begin_at + 1, i)
            open_name = None
        elif _ANY_MARKER.match(line):
            raise ConfigError(source, where, f"{line.strip()!r} is not a marker line; write "
                                             f"{BEGIN.format(name='NAME')!r} / {END.format(name='NAME')!r}")
    if open_name is not None:
        raise ConfigError(source, f"line {begin_at + 1}", f"block {open_name!r} has no "
                                                          f"{END.format(name=open_name)!r}")
    return found


def _matched_blocks(text, rendered, source):
    found = find_blocks(text, source)
    extra = sorted(set(found) - set(rendered))
    if extra:
        raise ConfigError(source, f"block {extra[0]}", "the registry declares no such block of rows "
                                                       f"(declared: {', '.join(rendered) or 'none'})")
    missing = [name for name in rendered if name not in found]
    if missing:
        raise ConfigError(source, f"block {missing[0]}", f"no marker lines; put {BEGIN.format(name=missing[0])!r} "
                                                         f"and {END.format(name=missing[0])!r} where its rows go")
    return found


def _is_name(line):
    return bool(line) and not line[0].isspace() and not line.startswith("#")


def _row_name(lines, i):
    """The test case that line i of a block belongs to (a blank line: the row after it)."""
    if i < len(lines) and not lines[i] and i + 1 < len(lines) and _is_name(lines[i + 1]):
        return lines[i + 1]
    for line in reversed(lines[:i + 1]):
        if _is_name(line):
            return line
    return "(before the first row)"


def first_difference(have, want):
    """None if equal, else (row name, the suite's line, the registry's line) at the first
    line that differs (None for a line one side lacks)."""
    h, w = have.splitlines(), want.splitlines()
    for i in range(max(len(h), len(w))):
        a, b = (h[i] if i < len(h) else None), (w[i] if i < len(w) else None)
        if a != b:
            return _row_name(w if b is not None else h, i), a, b
    return None


def differences(text, rendered, source):
    """{block name: one line naming the suite, the block and its first row that differs
    from the registry's} for each block that differs."""
    lines = text.splitlines(keepends=True)
    out = {}
    for name, (start, end) in _matched_blocks(text, rendered, source).items():
        diff = first_difference("".join(lines[start:end]), rendered[name])
        if diff:
            row, have, want = diff
            have, want = (repr(x) if x is not None else "no line there" for x in (have, want))
            out[name] = (f"{source}: block {name} differs from the registry at row {row!r}: the suite has "
                         f"{have}, the registry {want} (`testbed suites --write` rewrites it)")
    return out


def rewrite(text, rendered, source):
    """The suite's text with every block's rows replaced by the registry's."""
    lines = text.splitlines(keepends=True)
    found = _matched_blocks(text, rendered, source)
    for name, (start, end) in sorted(found.items(), key=lambda kv: kv[1], reverse=True):
        lines[start:end] = [rendered[name]]
    return "".join(lines)


def check_suite(exp):
    """{block name: what differs} between the experiment's suite and its registry entry."""
    rendered = exp.generated_rows()
    return differences(exp.suite_path.read_text(), rendered, exp.suite) if rendered else {}


def write_suite(exp):
    """Rewrite the suite's blocks from the registry; [the names of the blocks that changed]."""
    rendered = exp.generated_rows()
    if not rendered:
        return []
    text = exp.suite_path.read_text()
    changed = list(differences(text, rendered, exp.suite))
    if changed:
        exp.suite_path.write_text(rewrite(text, rendered, exp.suite))
    return changed
