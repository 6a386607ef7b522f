"""The generated sections of the experiment pages: each experiment's parameters at every
scale, the paper's figures and claims, every row of its suite, and its kept reference runs
with their results and verdicts (or a plain line saying none is kept)."""
from pathlib import Path

from testbed.harness import registry
from testbed.model.errors import ConfigError
from testbed.model import site_history
from testbed.report import suites
from testbed.report.markdown import code, table
from testbed.results import compare, reference, verdict
from testbed.results.expressions import same
from testbed.results.runs import trials_text


MAIN_KEY = "quick-default"   # the reference every verdict table of the docs is judged on
SOURCES_HEADING = "Sources of the paper's figures"
SOURCES_ANCHOR = "sources-of-the-papers-figures"   # the heading's anchor as mkdocs writes it


def experiment(name, source, key=None):
    """The registry's experiment `name`, or a ConfigError naming the page and its section."""
    known = registry.experiments()
    if name not in known:
        raise ConfigError(source, key or name, f"no experiment {name!r} in the registry (known: {', '.join(known)})")
    return known[name]


def _value(v):
    if v is None:
        return "the topology's"
    if isinstance(v, (list, tuple)):
        return ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def params_section(exp):
    """Every parameter with its meaning, the range `--set` accepts and its value at each scale."""
    if not exp.params:
        return f"`{exp.name}` has no parameters: every scale runs the same rows."
    rows = [[f"`{name}`", p.help + (" (one suite row per value)" if p.rows else ""), p.range or "-"]
            + [_value(exp.scales[s][name]) for s in registry.SCALES] for name, p in exp.params.items()]
    lines = [table(["parameter", "meaning", "range"] + [f"`{s}`" for s in registry.SCALES], rows), "",
             f"Profiles compared by default: {', '.join(f'`{p}`' for p in exp.profiles)}."]
    if exp.row_profiles:
        lines.append(f"The suite has rows for the profiles {', '.join(f'`{p}`' for p in exp.row_profiles)}.")
    lines += ["", f"Declared in `testbed/experiments/` (`EXPERIMENT = Experiment(name=\"{exp.name}\", ...)`); "
                  f"`--set NAME=VALUE` overrides one for a run."]
    if exp.metrics:
        lines += ["", "Metrics it records: " + ", ".join(f"`{m}`" for m in exp.metrics) + "."]
    return "\n".join(lines)


def paper_section(exp):
    """The paper's figures and headline claims, as results/paper/<name>.yaml declares them."""
    if not exp.paper:
        return f"`{exp.name}` reproduces no paper: it has no figures or claims to compare with."
    figures = compare.load_paper(exp.paper_path)
    cite = compare.citation_text(compare.load_citation(exp.paper_path))
    fig_rows = [[f"`{f['metric']}`", compare.format_params(f["params"]) or "-",
                 compare._fmt(f["value"]) if f["value"] is not None else f["expect"], f["unit"], f["source"],
                 f["note"]] for f in figures]
    lines = [f"The paper: {cite} (seed `{exp.seed}`).", "", f"The paper's figures (`{exp.paper}`):", "",
             table(["metric", "parameters", "paper", "unit", "source", "note"], fig_rows), "",
             "What the paper says it measured, each judged per run by `testbed compare` "
             "(and by the suite's claim rows), declared before any run; how each figure is derived, "
             f"when a claim is in reach and why it is judged so: [the claims in full]({exp.name}-claims.md).", ""]
    return "\n".join(lines + _claim_groups(exp, lambda c: claim_item(c, full=False, page=f"{exp.name}-claims.md")))


def claims_section(exp):
    """Every claim in full: its words, what it reads, the paper's figure and band, how that
    figure is derived, its reach condition and its note."""
    if not exp.paper:
        return f"`{exp.name}` reproduces no paper: it has no claims."
    return "\n".join(_claim_groups(exp, claim_item))


def _claim_groups(exp, item):
    lines = []
    claims = verdict.load_file(exp.paper_path)
    for title, kind in (("Paper claims (the seed's own words; only these are tallied)", verdict.CLAIM),
                        ("Scale models (a model's answer to a claim, not a reproduction of its own)", verdict.MODEL),
                        ("Mechanism checks (counts the configuration fixes: hold or fail in every trial)",
                         verdict.CHECK),
                        ("Findings of this testbed (beyond the paper)", verdict.FINDING)):
        picked = [c for c in claims if c.kind == kind]
        if picked:
            lines += [f"**{title}**", ""] + [item(c) for c in picked] + [""]
    return lines


def claim_item(c, full=True, page=None):
    """One claim as a list item: its words and place, what it reads, the paper's figure and
    band; `full`: also how that figure is derived, its reach condition and its note (else a
    link to them on `page`)."""
    words = c.words if c.kind == verdict.FINDING else f'"{c.words}"'
    anchor = f'<a id="{c.id}"></a>' if full else ""
    parts = [f"- {anchor}**`{c.id}`**: {words} ({c.where}). Judged on `{c.value.text()}`, the paper's side "
             f"`{c.expect.text}`."]
    if c.model_of:
        parts.append(f"The scale model of `{c.model_of}`.")
    if c.band:
        parts.append(f"The paper's figure: {c.paper:g}, band `{c.band.text}` ([{c.band.lo:.3g}, {c.band.hi:.3g}]).")
    elif c.paper is not None:
        parts.append(f"The paper's figure: {c.paper:g}.")
    if not full:
        said = [what for what, there in (("derivation", c.derived), ("reach", c.reach), ("notes", c.note)) if there]
        if said:
            parts.append(f"[Its {', '.join(said)}]({page}#{c.id}).")
        return " ".join(parts)
    if c.derived:
        parts.append(f"Derived: {' '.join(c.derived.split())}.")
    if c.reach:
        parts.append(f"In reach when `{c.reach.value.text()}` `{c.reach.expect.text}` in every trial; "
                     f"else out of reach: {' '.join(c.reach.resource.split())}")
    if c.note:
        parts.append(" ".join(c.note.split()))
    return " ".join(parts)


def rows_section(exp):
    """Every row of the suite: its name, tags, what it checks (or the templated call)."""
    suite = suites.read(exp.suite_path)
    rows = [[f"`{r.name}`", " ".join(f"`{t}`" for t in r.tags), r.doc or "", f"`{r.call}`" if r.call else ""]
            for r in suite.rows]
    tags = f" (every row is also tagged {', '.join(f'`{t}`' for t in suite.common_tags)})" if suite.common_tags else ""
    return "\n".join([f"`{exp.suite}`: {len(rows)} rows{tags}. Run one with `--test NAME`, "
                      f"a group with `--include TAG`.", "",
                      table(["row", "tags", "what it checks", "templated call"], rows)])


def _kept_line(ref):
    m, origin = ref.manifest(), ref.origin()
    forced = f"; kept with --force past: {'; '.join(origin.get('overridden') or [])}" if origin.get("forced") else ""
    merged = "".join(f" The points that run did not measure are kept from run `{x['run']}` "
                     f"(`testbed reference save --merge`)." for x in origin.get("merged") or [])
    merged += "".join(f" Trial{'s' * (len(x['trials']) != 1)} {', '.join(map(str, x['trials']))} of the points "
                      f"run `{x['run']}` measured {'are' if len(x['trials']) != 1 else 'is'} added from it "
                      f"(`testbed reference save --add-trials`)." for x in origin.get("added") or [])
    problems = reference.protocol_problems(ref)
    protocol = (" **Not judged under the declared protocol**: " + "; ".join(problems) + ". Its verdicts are the "
                "record of that run, not a reproduction." if problems else
                f" Judged on the trials its experiment declares, from one run; {reference.code_line(ref)}.")
    return (f"Kept from run `{origin.get('run', '?')}` on {origin.get('kept', '?')}: status {m.get('status')}, "
            f"{trials_text(m)}, {str(m.get('accel', '?')).upper()}, git "
            f"`{str(m.get('git_revision', '?'))[:12]}`, on {site_history.describe(m.get('site'))}"
            f"{forced}.{merged}{protocol}")


def history_lines(ref, root=None):
    """The references this one replaced, each with its tally of paper claims and why."""
    rows = []
    for run, replaced in reference.history(ref.experiment, ref.key, root):
        judged = compare.verdicts([run])
        tally = verdict.tally(judged[0][1]) if judged else "no claims"
        m = run.manifest()
        rows.append([f"`{(m.get('reference') or {}).get('run', run.path.name)}`",
                     f"`{str(m.get('git_revision', '?'))[:12]}`", trials_text(m), tally,
                     f"`{replaced.get('replaced_by')}`", replaced.get("when", "?"), replaced.get("why", "")])
    if not rows:
        return []
    return ["Every run judged for this reference before it, kept in `results/reference/history/`:", "",
            table(["run", "git", "trials", "paper claims", "replaced by", "when", "why"], rows), ""]


def missing_line(name, what="reference run"):
    return (f"No {what} kept yet for `{name}`: nothing on this page is measured. Keep one with "
            f"`./tb run {name}`, then `./tb reference save latest-{name}` and `./tb report docs`.")


def main_reference(exp, root=None):
    """The reference a page leads with: `quick` on `default` (what the verdict tables of the
    docs are judged on), else the experiment's first kept one; None when none is kept."""
    refs = [r for r in reference.listing(root) if r.experiment == exp.name]
    return next((r for r in refs if r.key == MAIN_KEY), refs[0] if refs else None)


def summary_section(exp, root=None, key=None):
    """The top of an experiment page: the verdict of each claim in its main reference, and
    which run, trials and code they come from. With `key`, the reference kept at that key
    (a variant of the site, say) and only the claims its run measured."""
    ref = (next((r for r in reference.listing(root) if r.experiment == exp.name and r.key == key), None)
           if key else main_reference(exp, root))
    if ref is None:
        return missing_line(exp.name) if not key else f"No reference of `{exp.name}` kept at `{key}` yet."
    judged = compare.verdicts([ref])
    if not judged:
        return f"The reference `{ref.key}` holds no claims of `{exp.name}` to judge."
    shown = [v for v in judged[0][1] if v.values or not key]
    vh, vrows = verdict.table(shown)
    scale, _, topo = ref.key.partition("-")
    protocol = reference.protocol_problems(ref)
    how = ("not under the declared protocol (" + "; ".join(protocol) + "): the record of that run, "
           "not a reproduction" if protocol else "the trials the experiment declares, from one run")
    return "\n".join([
        f"Verdicts at `{scale}` scale on `{topo}` (paper claims: {verdict.tally(shown)}), from run "
        f"`{ref.origin().get('run', '?')}`, {trials_text(ref.manifest())}, {how}. "
        f"{verdict.INTERVAL_METHOD}; {verdict.HOLM_METHOD}. Each claim's words, the paper's figure and band "
        f"are under [the paper's question](#the-papers-question); every kept reference, with its "
        f"metrics, on [the kept runs]({exp.name}-runs.md).", "",
        table(vh, vrows)])


def claim_selectors(exp):
    """Every {metric, params} a claim of the experiment reads (its value and its reach)."""
    out = []
    for c in verdict.load_file(exp.paper_path) if exp.paper else []:
        out += c.value.selectors() + (c.reach.value.selectors() if c.reach else [])
    return out


def headline_rows(figures, selectors):
    """keep(metric, params) for the metric table of a page: the rows the paper gives a figure
    for and the rows a claim reads; the rest are in the full table `compare` prints."""
    def keep(metric, params):
        # the profile is a column of the table, not a parameter of its rows
        return compare.paper_match(figures, metric, params) is not None or any(
            s.metric == metric and all(same(params.get(k), v) for k, v in s.params.items() if k != "profile")
            for s in selectors)
    return keep


def number_sources(headers, rows, numbered):
    """The rows with each paper source cell as its number in `numbered` ({source: n}, shared
    by a page's tables and grown here): a source quoted in full on every row of its metric,
    and again under every reference, made a runs page long."""
    if "source" not in headers:
        return rows
    i = headers.index("source")
    return [row[:i] + [f"({numbered.setdefault(row[i], len(numbered) + 1)})"] + row[i + 1:]
            if _cites(row[i]) else row for row in rows]


def _cites(cell):
    """Whether a table's source cell names a paper source ("-": the paper gives no figure)."""
    return bool(cell) and cell != "-"


def cites(headers, rows):
    """Whether any row of the table names a paper source."""
    return "source" in headers and any(_cites(r[headers.index("source")]) for r in rows)


def sources_lines(numbered):
    """The page's list of the paper's sources, each once, by the number its rows carry."""
    if not numbered:
        return []
    return ([f"## {SOURCES_HEADING}", "", "The `source` column of the tables above numbers these:", ""]
            + [f"{n}. {src}" for src, n in numbered.items()] + [""])


def reference_section(exp, root=None):
    """Each kept reference of the experiment: where it came from, the metrics beside the
    paper's figures and the ones its claims read, the experiment's own tables, and the verdict
    of each claim (the main reference's are at the top of the page)."""
    refs = [r for r in reference.listing(root) if r.experiment == exp.name]
    if not refs:
        return missing_line(exp.name)
    figures = compare.load_paper()
    keep = headline_rows(figures, claim_selectors(exp))
    main = main_reference(exp, root)
    parts, numbered = [], {}
    for ref in refs:
        scale, _, topo = ref.key.partition("-")
        parts += [f"## `{scale}` scale on `{topo}`", "", _kept_line(ref), ""] + history_lines(ref, root)
        read = compare.snapshots([ref])    # its table, tables and verdicts from one reading
        total = len(compare.table(read)[1])
        headers, rows, _legend = compare.table(read, figures, keep=keep)
        cited = cites(headers, rows)
        rows = number_sources(headers, rows, numbered)
        parts += [f"The metrics the paper gives a figure for or a claim reads ({len(rows)} rows; all {total}: "
                  f"`./tb compare results/reference/{ref.experiment}/{ref.key}`, or its records in "
                  f"`metrics.jsonl` there" + (f"; sources [at the end of the page](#{SOURCES_ANCHOR})" if cited else "")
                  + "):", "",
                  table(headers, rows) if rows else "The reference holds none of them.", ""]
        extra = compare.experiment_tables(read, registry.table_makers())
        if extra:
            parts += [code(extra), ""]
        judged = compare.verdicts(read)
        if judged and ref.path == main.path:
            parts += [f"Its verdicts are at [the top of {exp.name}'s page]({exp.name}.md#verdicts).", ""]
        elif judged:
            vh, vrows = verdict.table(judged[0][1])
            parts += [f"Verdicts (paper claims: {verdict.tally(judged[0][1])}; {verdict.INTERVAL_METHOD}; "
                      f"{verdict.HOLM_METHOD}):", "", table(vh, vrows), ""]
    return "\n".join(parts + sources_lines(numbered))


def overview_section(root=None):
    """One line per experiment of the registry: its paper, suite, rows, claims, references."""
    kept = {}
    for ref in reference.listing(root):
        kept.setdefault(ref.experiment, []).append(ref.key)
    rows = []
    for name, exp in registry.experiments().items():
        claims = len(verdict.load_file(exp.paper_path)) if exp.paper else 0
        paper = "-"
        if exp.paper:
            cite = compare.load_citation(exp.paper_path)
            first, *others = cite["authors"].split(", ")
            paper = f"{first}{' et al.' if others else ''}, {cite['published']} (seed {exp.seed[:3]})"
        rows.append([f"[{name}]({name}.md)", exp.title, paper, f"`{exp.suite}`",
                     len(suites.read(exp.suite_path).rows), claims,
                     ", ".join(f"`{k}`" for k in kept.get(name, [])) or "none yet"])
    return table(["experiment", "what", "paper", "suite", "rows", "claims", "references kept"], rows)


def bibtex_section():
    """Every paper of the registry as BibTeX, keyed by its experiment, in one block to copy."""
    entries = [compare.bibtex(f"testbed-{name}", compare.load_citation(exp.paper_path))
               for name, exp in registry.experiments().items() if exp.paper]
    return "```bibtex\n" + "\n\n".join(entries) + "\n```"


def pages_link(source):
    """The relative path from the page `source` (docs/... or README.md) to docs/experiments/."""
    parts = Path(source).parent.parts
    if parts[:1] != ("docs",):
        return "docs/experiments/"
    return "" if parts[1:] == ("experiments",) else "../" * (len(parts) - 1) + "experiments/"


def papers_section(source):
    """Each experiment's paper, cited in full, with a link to its page."""
    base = pages_link(source)
    rows = []
    for name, exp in registry.experiments().items():
        if exp.paper:
            rows.append([f"[{name}]({base}{name}.md)", compare.citation_text(compare.load_citation(exp.paper_path)),
                         f"`{exp.seed}`"])
    return table(["experiment", "paper", "seed"], rows)


def verdicts_section(key="quick-default", root=None, source="docs/experiments/index.md"):
    """Every experiment's paper claims, checks and findings in one table, from the references
    kept at `key` (a claim one does not measure: from the reference that does, named in its
    row: `judged_where_measured`): the seed's words, the paper's figure, the mean [interval]
    with the trial values, the verdict, Holm's correction over all the paper claims of the
    table at once; the tally per verdict, and each reference's protocol."""
    pairs, refs, base = [], [], pages_link(source)
    elsewhere = {}   # claim id -> the other reference it is judged on
    read = {}

    def records(ref):   # each reference read once, however many claims look at it
        if ref.path not in read:
            read[ref.path] = ref.metrics()
        return read[ref.path]
    for name, exp in registry.experiments().items():
        if not exp.paper:
            continue
        path = Path(root or reference.REFERENCE_ROOT) / name / key
        if (path / "manifest.json").exists():
            ref = reference.Reference(path)
            refs.append(ref)
            others = others_at_scale(ref, root)
            for c in verdict.load_file(exp.paper_path):   # judged raw: Holm's correction is over the whole table
                used, v = judged_where_measured(c, [ref] + others, records)
                pairs.append((used, v))
                if used is not ref:
                    elsewhere[c.id] = used
    if not pairs:
        return f"No references kept at `{key}` yet."
    corrected = verdict.holm([v for _ref, v in pairs])
    lines = [f"Paper claims over all experiments: {verdict.tally(corrected)} ({verdict.INTERVAL_METHOD}; "
             f"{verdict.HOLM_METHOD}, {sum(v.claim.tallied and v.p is not None for v in corrected)} claims "
             f"with an interval).", ""]
    by_ref = {}
    for (ref, _v), v in zip(pairs, corrected):
        by_ref.setdefault(ref.experiment, []).append(v)
    said = []   # (claim, its words) in the tables' order, listed after them
    for title, kind in (("Paper claims", (verdict.CLAIM, verdict.MODEL)), ("Mechanism checks", (verdict.CHECK,)),
                        ("Findings of this testbed", (verdict.FINDING,))):
        rows = []
        for ref in refs:
            for _section, vs in verdict.ordered(by_ref[ref.experiment]):
                for v in vs:
                    if v.claim.kind in kind:
                        c = v.claim
                        rows.append([f"[{ref.experiment}]({base}{ref.experiment}.md)",
                                     ("↳ " if c.kind == verdict.MODEL else "") + f"[`{c.id}`](#{c.model_of or c.id})",
                                     f"**{v.verdict}**" + (" (model)" if c.kind == verdict.MODEL else "")
                                     + (f" on `{elsewhere[c.id].key}`" if c.id in elsewhere else ""),
                                     c.paper_text(), v.estimate(), str(len(v.values)),
                                     "-" if v.p_holm is None else f"{v.p_holm:.3g}"])
                        if c.kind != verdict.MODEL:
                            said.append(c)
        if rows:
            lines += [f"**{title}**", "", table(["experiment", "claim", "verdict", "paper",
                                                 "mean [95% interval] (trial values)", "trials", "p (Holm)"],
                                                rows), ""]
    lines += ["**What each row judges, in the seed's words** (a finding in this testbed's):", ""]
    lines += [f"- <a id=\"{c.id}\"></a>`{c.id}` ({c.experiment}): "
              f"{c.words if c.kind == verdict.FINDING else chr(34) + ' '.join(c.words.split()) + chr(34)} ({c.where}); "
              f"[in full]({base}{c.experiment}-claims.md#{c.id})"
              for c in said] + [""]
    used = refs + list({r.path: r for r in elsewhere.values()}.values())
    protocol = [[f"[{r.experiment}]({base}{r.experiment}.md)", f"`{r.key}`", f"`{r.origin().get('run', '?')}`",
                 "; ".join(reference.protocol_problems(r)) or f"declared trials, one run; {reference.code_line(r)}"]
                for r in sorted(used, key=lambda r: (r.experiment, r.key != key, r.key))]
    lines += ["Where each row's trials come from (a reference not under the declared protocol is the record of "
              "that run, not a reproduction):", "", table(["experiment", "reference", "run", "protocol"], protocol)]
    return "\n".join(lines)


def others_at_scale(ref, root=None):
    """The experiment's other references kept at `ref`'s scale on the same middleware (no
    other release, no patched daemons): other topologies and variants, by key."""
    scale = ref.key.split("-", 1)[0]
    return [r for r in reference.listing(root) if r.experiment == ref.experiment and r.key != ref.key
            and r.key.split("-", 1)[0] == scale and "+release-" not in r.key and "+patched-" not in r.key]


def judged_where_measured(claim, refs, records):
    """(reference, verdict) of `claim` on the first of `refs` that measures it (E5's failover
    checks run on a topology of their own, E2's array-bound claims in a variant of their own),
    else on the first; `records(ref)`: its metrics."""
    first = verdict.evaluate(claim, records(refs[0]))
    for ref in refs[1:] if first.verdict == verdict.NO_DATA else ():
        found = verdict.evaluate(claim, records(ref))
        if found.verdict != verdict.NO_DATA:
            return ref, found
    return refs[0], first


def first_comparison_section(root=None):
    """What the first comparison prints, from the headline experiment's kept reference at
    `quick` scale (what `./tb demo` runs)."""
    head = registry.headline()
    refs = [r for r in reference.listing(root) if r.experiment == head.name and r.key.startswith("quick-")]
    if not refs:
        return (f"No reference run kept yet for `{head.name}` at `quick` scale, so there is no real output "
                f"to show here. Once one is kept (`./tb reference save latest-{head.name}`), "
                f"`./tb report docs` prints its comparison here.")
    ref = refs[0]
    text = compare.render_text([ref], compare.load_paper(), table_makers=registry.table_makers())
    return "\n".join([f"`./tb compare results/reference/{ref.experiment}/{ref.key} --against paper` "
                      f"on the kept reference `{ref.experiment}/{ref.key}` prints:", "", code(text)])


def _minutes(seconds):
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def guest_ram_mb(topology):
    """The guest RAM of a manifest's topology: each VM's memory_mb, else the defaults'
    (hosts the site only joins, `existing:`, bring their own)."""
    default = (topology.get("defaults") or {}).get("memory_mb", 0)
    vms = [h for h in (topology.get("hosts") or {}).values() if not h.get("existing")]
    return len(vms), sum(h.get("memory_mb", default) for h in vms)


def _wall_time(seconds, origin):
    """(text, seconds): the kept run's wall time; for a reference merged from several runs
    of one revision, the sum over them when every run's time is known (else the kept
    run's, said so)."""
    others = (origin.get("merged") or []) + (origin.get("added") or [])
    if not others:
        return _minutes(seconds), seconds
    if all(x.get("seconds") for x in others):
        total = seconds + sum(x["seconds"] for x in others)
        return f"{_minutes(total)} over {len(others) + 1} runs (the last {_minutes(seconds)})", total
    return _minutes(seconds) + " (the kept run; other runs' points were added)", seconds


def run_costs_section(root=None, source="docs/first-run.md"):
    """What each kept reference run took: wall time, trials, the site's VMs and guest RAM,
    the accelerator and the host's cores, from the references' own manifests."""
    rows = []
    for ref in reference.listing(root):
        m = ref.manifest()
        seconds = reference.run_seconds(m)
        if seconds is None:
            continue
        topo = m.get("topology") or {}
        vms, ram = guest_ram_mb(topo)
        trials = int(m.get("trial") or m.get("trials") or 1)
        host = m.get("host") or {}
        wall, total = _wall_time(seconds, ref.origin())
        rows.append([f"[{ref.experiment}]({pages_link(source)}{ref.experiment}.md)"
                     if ref.experiment in registry.experiments() else ref.experiment,
                     # the key's topology part names a release or a variant beside the site
                     f"`{m.get('scale', '?')}`", f"`{ref.key.partition('-')[2] or topo.get('name', '?')}`",
                     trials_text(m),
                     wall, _minutes(total / trials), vms, f"{ram / 1024:.1f} GB",
                     f"{str(m.get('accel', '?')).upper()}, {host.get('cores', '?')} cores",
                     str(m.get("start", ""))[:10]])
    if not rows:
        return "No reference run kept yet: nothing to time."
    return table(["experiment", "scale", "topology", "trials", "wall time", "a trial", "VMs", "guest RAM",
                  "host", "run on"], rows)

