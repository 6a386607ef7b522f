"""Markdown pieces the generated sections share: tables with safe cells, code blocks, and
the marked sections of a page that `testbed report docs` owns."""
import re

from testbed.model.errors import ConfigError

BEGIN = "<!-- generated: {key} (by `testbed report docs` from the project's files; edits here are overwritten) -->"
END = "<!-- end generated: {key} -->"
SECTION = re.compile(r"<!-- generated: (?P<key>[A-Za-z0-9_:.,=+-]+) [^\n]*?-->\n"
                     r"(?P<body>.*?)<!-- end generated: (?P<end>[^ ]+) -->", re.S)
OPENING = re.compile(r"<!-- generated: (?P<key>[A-Za-z0-9_:.,=+-]+)[ >]")


def cell(value):
    """One table cell: one line, pipes escaped, empty as a dash."""
    text = " ".join(str("" if value is None else value).split())
    return text.replace("|", "\\|") or "-"


def table(headers, rows):
    """A Markdown table ("" without rows)."""
    if not rows:
        return ""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text, lang="text"):
    return f"```{lang}\n{text.rstrip()}\n```"


def keys(text):
    """The keys of the generated sections a page holds, in order."""
    return [m.group("key") for m in OPENING.finditer(text)]


def fill(text, source, make):
    """`text` with the body of every generated section replaced by `make(key)`. A section
    opened and not closed (or closed under another key) is a ConfigError naming the page."""
    opened = keys(text)
    found = list(SECTION.finditer(text))
    for m in found:
        if m.group("end") != m.group("key"):
            raise ConfigError(source, m.group("key"), f"generated section closed as {m.group('end')!r}")
    if len(found) != len(opened):
        closed = {m.group("key") for m in found}
        missing = next(k for k in opened if k not in closed)
        raise ConfigError(source, missing, f"generated section has no `{END.format(key=missing)}`")

    def replace(m):
        key = m.group("key")
        body = make(key).strip("\n")
        return f"{BEGIN.format(key=key)}\n\n{body}\n\n{END.format(key=key)}"
    return SECTION.sub(replace, text)
