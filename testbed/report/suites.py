"""What a Robot suite file says about itself, read with Robot's own parser: its
documentation and every row (test) with its tags, documentation and the keyword call of a
templated row. Nothing is run."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    name: str
    tags: tuple          # the row's own tags (the suite's `Test Tags`, on every row, left out)
    doc: str
    call: str            # `Template Keyword  arg  arg` of a templated row, "" otherwise


@dataclass(frozen=True)
class Suite:
    name: str
    doc: str
    common_tags: tuple
    rows: tuple


def _call(test):
    if not test.template:
        return ""
    step = next((s for s in test.body if getattr(s, "type", "") == "KEYWORD"), None)
    args = [str(a) for a in step.args] if step is not None else []
    return "  ".join([test.template] + args)


def read(path):
    """The Suite of one .robot file."""
    from robot.api import TestSuiteBuilder  # robot is a dependency of the suites, not of the package's core
    built = TestSuiteBuilder().build(str(path))
    tests = list(built.tests)
    common = set.intersection(*(set(str(t) for t in test.tags) for test in tests)) if tests else set()
    rows = tuple(Row(t.name, tuple(sorted(str(tag) for tag in t.tags if str(tag) not in common)),
                     " ".join(t.doc.split()), _call(t)) for t in tests)
    return Suite(built.name, built.doc, tuple(sorted(common)), rows)


def documentation(path):
    """[(where, text)]: every Documentation of a suite or resource file (the file's own, each
    test's and each keyword's), for the checks on the project's text."""
    from robot.api import TestSuiteBuilder
    from robot.running.builder import ResourceFileBuilder
    path = str(path)
    if path.endswith(".resource"):
        res = ResourceFileBuilder().build(path)
        return [(path, res.doc)] + [(f"{path}: {k.name}", k.doc) for k in res.keywords]
    built = TestSuiteBuilder().build(path)
    return ([(path, built.doc)] + [(f"{path}: {t.name}", t.doc) for t in built.tests]
            + [(f"{path}: {k.name}", k.doc) for k in built.resource.keywords])
