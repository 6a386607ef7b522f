"""The documentation site and a run's report as a reader's browser shows them: each page is
opened in headless Chromium (Debian's chromium-headless-shell) and a probe run after the
page's load reports its images that did not load, its verdict tables and their rows, and
its links; a link to a file the site does not have, a broken image or a verdict table
without rows is a problem, named with its page.

The probe is a copy of the page with one script before `</body>`, beside the page so that
its relative links resolve the same; Chromium prints the DOM after the load
(`--dump-dom`), where the script has left its findings as JSON."""
import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

from testbed import PROJECT_ROOT
from testbed.model.errors import TestbedError

INSTALL = PROJECT_ROOT / "provision" / "host" / "browser.sh"
BINARIES = ("chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "chromium")
PROBE_ID = "tb-browser-check"
PROBE_SUFFIX = ".tb-probe.html"
# a page gets this long to load its images and run its scripts (virtual time: no real wait)
BUDGET_MS = 5000
SCRIPT = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                     .map(function (i) { return i.getAttribute("src"); });
  var verdicts = Array.prototype.slice.call(document.querySelectorAll("table")).filter(function (t) {
    return t.rows.length && Array.prototype.some.call(t.rows[0].cells, function (c) {
      return /^\\s*verdict\\s*$/i.test(c.textContent);
    });
  }).map(function (t) { return t.rows.length - 1; });
  var links = Array.prototype.slice.call(document.querySelectorAll("a[href]"))
                   .map(function (a) { return a.getAttribute("href"); });
  var out = document.createElement("pre");
  out.id = "%s";
  out.textContent = JSON.stringify({images: images.length, broken: broken, verdict_rows: verdicts, links: links});
  document.body.appendChild(out);
});
</script>""" % PROBE_ID
FOUND = re.compile(r'<pre id="%s">(.*?)</pre>' % PROBE_ID, re.S)


def chromium(install=True, run=subprocess.call):
    """The browser's path, installed first when missing (`provision/host/browser.sh`)."""
    found = next((p for p in map(shutil.which, BINARIES) if p), None)
    if found is None and install:
        if run(["bash", str(INSTALL)]) != 0:
            raise TestbedError(f"{INSTALL.name}: could not install chromium-headless-shell with apt (see above)")
        found = next((p for p in map(shutil.which, BINARIES) if p), None)
    if found is None:
        raise TestbedError("no headless Chromium found (chromium-headless-shell): `bash provision/host/browser.sh`")
    return found


def argv(browser, url, *extra):
    # root runs it in CI and the set-up: Chromium's sandbox refuses root
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--virtual-time-budget={BUDGET_MS}", *extra, url]


def probe(page):
    """The probe copy of `page` (beside it), made from the page's text."""
    text = page.read_text()
    at = text.rfind("</body>")
    copy = page.with_name(page.name + PROBE_SUFFIX)
    copy.write_text(text[:at] + SCRIPT + text[at:] if at >= 0 else text + SCRIPT)
    return copy


def findings(dom):
    """The probe's findings in the DOM Chromium printed, or None when its script never ran."""
    m = FOUND.search(dom)
    return json.loads(html.unescape(m.group(1))) if m else None


def missing_target(page, href, root):
    """The file a relative link of `page` names, when the site under `root` has none."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None   # another site, a mail address, or an anchor on the same page
    target = (page.parent / unquote(parts.path)).resolve()
    if href.endswith("/") or target.is_dir():
        target = target / "index.html"
    inside = root.resolve() in target.parents or target == root.resolve()
    return None if target.exists() or not inside else target


def problems(page, found, root, needs_verdicts=False):
    """One line per problem of `page`: its probe did not run, an image did not load, a link
    names a file the site lacks, a verdict table has no rows (or none, when it should)."""
    name = page.relative_to(root).as_posix()
    if found is None:
        return [f"{name}: the page's scripts did not run to the end in Chromium"]
    out = [f"{name}: image {src} did not load" for src in found["broken"]]
    out += [f"{name}: link {href} names a file the site does not have"
            for href in dict.fromkeys(found["links"]) if missing_target(page, href, root)]
    out += [f"{name}: a verdict table without rows" for rows in found["verdict_rows"] if rows == 0]
    if needs_verdicts and not found["verdict_rows"]:
        out.append(f"{name}: no verdict table")
    return out


def check(pages, root, browser, needs_verdicts=(), run=subprocess.run):
    """Problems of each page under `root` as Chromium renders it (probe copies removed)."""
    out = []
    for page in pages:
        copy = probe(page)
        try:
            done = run(argv(browser, copy.as_uri(), "--dump-dom"), capture_output=True, text=True, timeout=120)
            dom = done.stdout
        except subprocess.TimeoutExpired:
            dom = ""
        finally:
            copy.unlink(missing_ok=True)
        out += problems(page, findings(dom), root, page in needs_verdicts)
    return out


def screenshot(browser, page, png, width=1280, height=1600, run=subprocess.run):
    """A PNG of how `page` looks (for a person, not a check)."""
    run(argv(browser, Path(page).as_uri(), f"--screenshot={png}", f"--window-size={width},{height}"),
        capture_output=True, timeout=120)
    return Path(png)


# the built site's pages a reader opens first, and those with the figures and verdicts
PAGES = ("index.html", "results/index.html", "first-run/index.html", "experiments/*/index.html")


def site_pages(site_dir):
    site_dir = Path(site_dir)
    return sorted({p for pattern in PAGES for p in site_dir.glob(pattern)})


def report_of_a_reference(outdir, root=None):
    """A kept reference's report (`summary.html` as a run writes it: figures, table, verdicts)
    written under `outdir`; None when no reference is kept."""
    from testbed.harness import registry
    from testbed.report.experiment_sections import main_reference
    from testbed.results import compare
    ref = main_reference(registry.headline(), root)
    if ref is None:
        return None
    path, _pngs = compare.render_html([ref], Path(outdir) / "summary.html", compare.load_paper(),
                                      title=f"{ref.experiment}/{ref.key}", figure_makers=registry.figure_makers(),
                                      table_makers=registry.table_makers())
    return path


def check_docs(site_dir, browser, reference_root=None, check_pages=check):
    """Problems of the built site and of a kept reference's report, as Chromium shows them."""
    site_dir = Path(site_dir)
    pages = site_pages(site_dir)
    must = [p for p in pages if p.relative_to(site_dir).as_posix() == "results/index.html"]
    report = report_of_a_reference(site_dir / "report-of-a-reference", reference_root)
    if report is not None:
        pages.append(report)
        must.append(report)
    return check_pages(pages, site_dir, browser, needs_verdicts=must)
