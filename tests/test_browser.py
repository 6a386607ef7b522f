"""The browser check of the documentation: the probe copy of a page, what its findings
mean (a broken image, a link to a missing file, a verdict table without rows), and a real
render in Chromium where one is installed."""
import json
import shutil
import subprocess
import types

import pytest

from testbed.report import browser

PAGE = "<html><body><h1>x</h1></body></html>"


def site(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "index.html").write_text(PAGE)
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(b"")
    return tmp_path


def test_the_probe_is_a_copy_beside_the_page_with_the_script_before_the_body_ends(tmp_path):
    page = site(tmp_path) / "results" / "index.html"
    copy = browser.probe(page)
    assert copy.parent == page.parent and page.read_text() == PAGE
    assert copy.read_text().endswith(browser.SCRIPT + "</body></html>")


def test_the_findings_are_read_back_from_the_dom_chromium_prints():
    found = {"images": 1, "broken": ["a&b.png"], "verdict_rows": [3], "links": []}
    dom = f'<body><pre id="{browser.PROBE_ID}">{json.dumps(found).replace("&", "&amp;")}</pre></body>'
    assert browser.findings(dom) == found
    assert browser.findings("<body></body>") is None


def test_each_problem_is_one_line_naming_the_page(tmp_path):
    root = site(tmp_path)
    page = root / "results" / "index.html"
    found = {"images": 2, "broken": ["../img/b.png"], "verdict_rows": [4, 0],
             "links": ["../img/a.png", "../img/gone.png", "#top", "https://example.org/x", "../results/",
                       "../../outside.html", "mailto:a@b"]}
    assert browser.problems(page, found, root) == [
        "results/index.html: image ../img/b.png did not load",
        "results/index.html: link ../img/gone.png names a file the site does not have",
        "results/index.html: a verdict table without rows"]
    quiet = dict(found, broken=[], verdict_rows=[], links=[])
    assert browser.problems(page, quiet, root) == []
    assert browser.problems(page, quiet, root, needs_verdicts=True) == ["results/index.html: no verdict table"]
    assert browser.problems(page, None, root) == [
        "results/index.html: the page's scripts did not run to the end in Chromium"]


def test_check_opens_each_page_headless_and_removes_the_probe(tmp_path):
    root = site(tmp_path)
    page = root / "results" / "index.html"
    seen = []

    def run(argv, **kwargs):
        seen.append(argv)
        found = {"images": 0, "broken": [], "verdict_rows": [0], "links": []}
        return types.SimpleNamespace(stdout=f'<pre id="{browser.PROBE_ID}">{json.dumps(found)}</pre>')
    assert browser.check([page], root, "/usr/bin/chromium-headless-shell", run=run) == [
        "results/index.html: a verdict table without rows"]
    argv = seen[0]
    assert argv[0] == "/usr/bin/chromium-headless-shell" and "--headless" in argv and "--dump-dom" in argv
    assert argv[-1].startswith("file://") and argv[-1].endswith(browser.PROBE_SUFFIX)
    assert sorted(p.name for p in page.parent.iterdir()) == ["index.html"]


def test_the_built_site_and_a_kept_reference_report_are_the_pages_checked(tmp_path):
    root = site(tmp_path)
    for name in ("index.html", "experiments/e1/index.html", "getting-started/index.html"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(PAGE)
    picked = {}

    def check_pages(pages, site_dir, browser_path, needs_verdicts=()):
        picked.update(pages=[p.relative_to(site_dir).as_posix() for p in pages],
                      must=[p.relative_to(site_dir).as_posix() for p in needs_verdicts])
        return []
    assert browser.check_docs(root, "chromium", reference_root=tmp_path / "none", check_pages=check_pages) == []
    assert picked == {"pages": ["experiments/e1/index.html", "index.html", "results/index.html"],
                      "must": ["results/index.html"]}


@pytest.mark.skipif(not any(map(shutil.which, browser.BINARIES)), reason="no headless Chromium on this machine")
def test_a_real_chromium_finds_the_broken_image_and_the_empty_verdict_table(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<html><body><img src='gone.png'><table><tr><th>claim</th><th>verdict</th></tr></table>"
                    "<a href='there.html'>x</a></body></html>")
    found = browser.check([page], tmp_path, browser.chromium(install=False), run=subprocess.run)
    assert found == ["p.html: image gone.png did not load", "p.html: link there.html names a file the site does not have",
                     "p.html: a verdict table without rows"]
