"""The project's text tells what the testbed is and does, never the story of its development
(that is `git log`): no numbered rounds of work, no "before/now" rows, no "previously" or
"used to". Checked in README.md, every page under docs/, every Documentation of the Robot
suites and resources, and the notes of the paper files. Also: each claim row's
documentation states the claim the paper file declares."""
import re

import pytest

from testbed import PROJECT_ROOT
from testbed.harness import registry
from testbed.model.schema import load_yaml
from testbed.report import suites
from testbed.results import verdict

_BE = r"(?:is|are|was|were|has|have|had|does|do)"
RULES = [
    ("a numbered round of work",
     re.compile(r"\b(?:rounds?|sessions?|iterations?|sprints?)\s+#?\d+\b", re.I)),
    ("a round of work named by when it was",
     re.compile(r"\b(?:this|that|last|previous|earlier|later|next)\s+(?:session|round|iteration|sprint)\b"
                r"(?!\s+trips?\b)", re.I)),
    ("an issue number (the tracker is not the project's text)",
     re.compile(r"\bissues?\s+#\d+|\bissue\s+\d+\b|\(#\d+\)|(?<![a-z])issue_\d+\b", re.I)),
    ("a tracker's issue as the reason (say what the project needs instead)",
     re.compile(r"\bthe\s+issue(?:'s|\s+asks\b|\s+wants\b)", re.I)),
    ("'previously'", re.compile(r"\bpreviously\b", re.I)),
    ("'used to' told as a past habit",
     re.compile(r"\b(?:it|this|that|we|they|which|there)\s+used\s+to\b|\bused\s+to\s+be\b", re.I)),
    ("a 'before'/'now' table row",
     re.compile(r"^\s*\|[^|\n]*(?:\((?:before|now|earlier|old|new)\)|\bnow\b)[^|\n]*\|", re.I | re.M)),
    ("'now' told against an earlier state",
     re.compile(rf"\b{_BE}\s+now\b(?!\s*(?:[.,;:)|]|$))"
                r"|\bnow\s+(?!(?:that|on|and|or|as|its|this|is|has|was|gets|sets|runs)\b)[a-z]+(?:s|ed)\b"
                r"|\b[a-z]+s\s+now\s+(?!(?:that|on|and|or|as|its|this|then)\b)[a-z]+\b",
                re.I | re.M)),
    ("a change told as history",
     re.compile(r"\b(?:before|after|since|until)\s+(?:the|this|that|these|those|our)\s+"
                r"(?:fix|fixes|change|changes|rework|refactor|commit)\b"
                r"|\b(?:moved|renamed)\s+(?:here|there|to\s+the|from\s+the|out\s+of)\b"
                r"|\bno\s+longer\b|\bthe\s+first\s+version\b|\ban?\s+(?:older|earlier)\s+(?:version|probe|fix)\b",
                re.I)),
]


def _unquoted(text):
    """`text` with fenced code blocks, `code spans` and "quoted words" blanked (newlines
    kept): a quoted log line or commit subject of the software under test is not our history."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"^```.*?^```", blank, text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", blank, text)
    return re.sub(r'"[^"\n]*"', blank, text)


def narration(text):
    """[(line, what, words)] of every place `text` tells development history (outside code
    and quotations)."""
    text = _unquoted(text)
    found = []
    for what, rule in RULES:
        for m in rule.finditer(text):
            found.append((text.count("\n", 0, m.start()) + 1, what, " ".join(m.group(0).split())))
    return sorted(found)


@pytest.mark.parametrize("text", [
    "In round 3 we rewrote the probe.",
    "Measured in session 16 on the new machine.",
    "sessions 10-11 ran the ramp",
    "the figures of this session",
    "Previously the suite waited for the ad.",
    "It used to take ten minutes.",
    "the probe used to be wrong",
    "| `small` now (box cached) | 206 | 287 |",
    "| all VMs at once (before) | - | 441 |",
    "The suite now skips such a point.",
    "Bands are now written in hex.",
    "The CMs now send the ad every cycle.",
    "after the fix, E5 ran in 3 minutes",
    "The central manager failover moved to the fault suite.",
    "(Moved here from the smoke suite.)",
    "the library no longer compares a verdict's text",
    "The first version let every child forward to both CMs.",
    "an older probe that only started the firmware",
    "The fault suite (issue #14): faults injected",
    "Issue #32's goal: CV <= 10%",
    "the ramp (#28) with fake outputs",
    "the runner before issue 26",
    "def test_the_row_before_issue_26():",
    "The issue's fidelity target: 1 ms + 5%",
    "the benchmark figures the issue asks for",
])
def test_the_rules_catch_development_history(text):
    assert narration(text), text


@pytest.mark.parametrize("text", [
    "Set the WAN before the run; the rows run after it.",
    "the paper's cached reads after its fix stopped at 700 MB/s",
    "save the healthy site as it is now",
    "the site as it is now.",
    "fetching the list takes 1.6 round trips at 100 ms",
    "each round trip costs 80 ms; the next round trip starts at once",
    "the key used to sign the pool's tokens",
    "the SSH session of a provisioning step; a new session per host",
    "HTCondor security sessions (SEC_DEFAULT_SESSION_DURATION)",
    "| `default` | 9 | 9 | 6144 MB |",
    "| before the run | the site is healthy |",
    "`session.py` reads the run's context; the session resolves it once",
    "a job that ends with no reconnect in its life uploads normally",
    "from now on, every row records its trial",
    "The reads are direct: now and then the cache is written too.",
    "the schedd issues 3 requests at once",
    "the issue of a token by the CM",
])
def test_the_rules_leave_plain_words_alone(text):
    assert not narration(text), narration(text)


def _texts():
    """(where, text) of every text the rule covers."""
    out = [("README.md", (PROJECT_ROOT / "README.md").read_text())]
    out += [(str(p.relative_to(PROJECT_ROOT)), p.read_text()) for p in sorted((PROJECT_ROOT / "docs").rglob("*.md"))]
    robot_files = sorted((PROJECT_ROOT / "robot" / "suites").glob("*.robot")) + \
        sorted((PROJECT_ROOT / "robot" / "resources").glob("*.resource"))
    for path in robot_files:
        out += [(where.replace(str(PROJECT_ROOT) + "/", ""), doc) for where, doc in suites.documentation(path)]
    for path in sorted((PROJECT_ROOT / "results" / "paper").glob("*.yaml")):
        data = load_yaml(path)
        for i, item in enumerate((data.get("figures") or []) + (data.get("claims") or [])):
            if item.get("note"):
                out.append((f"results/paper/{path.name}: {item.get('id') or item.get('metric')} note", item["note"]))
    return out


def test_the_projects_text_tells_no_development_history():
    found = [f"{where}:{line}: {what}: {words!r}" for where, text in _texts() for line, what, words in narration(text)]
    assert not found, ("development history belongs in `git log`, not in the project's text:\n" + "\n".join(found))


CODE = ("testbed", "robot", "provision", "benchmarks", "tests", "profiles", "topologies")


def test_no_code_or_comment_names_an_issue_number():
    """Comments and docstrings say why in the present; which issue asked for a thing is
    `git log`'s to tell."""
    rule = dict(RULES)["an issue number (the tracker is not the project's text)"]
    found = [f"{path.relative_to(PROJECT_ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
             for top in CODE for path in sorted((PROJECT_ROOT / top).rglob("*"))
             if path.is_file() and path.suffix in (".py", ".robot", ".resource", ".sh", ".j2", ".yaml", ".conf")
             and path.name != "test_project_text.py"
             for text in [path.read_text(errors="replace")] for m in rule.finditer(text)]
    assert not found, "issue numbers in the project's code:\n" + "\n".join(found)


def test_the_texts_checked_include_every_suite_and_page():
    wheres = {w.split(":")[0] for w, _ in _texts()}
    assert "README.md" in wheres and "docs/index.md" in wheres
    assert {e.suite for e in registry.experiments().values()} <= wheres
    assert "robot/resources/experiment.resource" in wheres


def test_each_claim_rows_documentation_states_the_declared_claim():
    """The row's words, where and expression are the paper file's: a claim edited in
    results/paper/ without its row (or the reverse) fails here."""
    for exp in registry.experiments().values():
        if not exp.paper:
            continue
        rows = {r.name: r.doc for r in suites.read(exp.suite_path).rows}
        for c in verdict.load_file(exp.paper_path):
            want = [c.where, " ".join(c.words.split()), f"({c.value.text()}, paper {c.paper_text()})."]
            missing = [w for w in want if w not in rows[c.id]]
            assert not missing, f"{exp.suite}: row {c.id} does not say {missing}"
