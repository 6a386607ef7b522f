"""The release matrix (docs/operations/release-matrix.md): for every experiment whose kept
references ran the same points on more than one middleware release, one row per claim of
its paper and per result it declares for the release axis (registry `release_findings`),
one column per release, and whether the first and the last release's intervals are apart.

References pair when their keys differ only by `+release-NAME` (reference.release_suffix):
the same scale, topology and variant on another box. Each column is one kept reference,
one run of one code revision, judged alone; the page names each reference's run and
revision, so that a reader sees when the two columns come from different revisions."""
import re
from pathlib import Path

from testbed.harness import registry
from testbed.model.errors import ConfigError
from testbed.report.experiment_sections import missing_line
from testbed.report.markdown import table
from testbed.results import compare, intervals, provenance, reference, release_record, verdict

RELEASE_PART = re.compile(r"\+release-[^+]+")


def matrix_sets(refs, release):
    """{(experiment, key without its release part): [Reference, ...]} of the references `refs`
    for the keys kept on two releases or more (`release`: {Reference: its release}), the stock
    box's reference first."""
    groups = {}
    for ref in refs:
        groups.setdefault((ref.experiment, RELEASE_PART.sub("", ref.key)), []).append(ref)
    return {k: sorted(group, key=lambda r: (RELEASE_PART.search(r.key) is not None, r.key))
            for k, group in sorted(groups.items()) if len({release[r] for r in group}) > 1}


def _cell(v):
    """A claim's verdict and estimate in one cell."""
    return f"**{v.verdict}** {v.estimate()}" if v.mean is not None else f"**{v.verdict}**"


def claim_rows(exp, refs):
    """One row per claim of the experiment's paper file: its verdict on each reference (its
    compare.RunSnapshot; Holm's correction over each reference's own claims, as `compare`
    judges one run), and whether the first and the last reference's trial values have 95%
    intervals apart."""
    if not exp.paper:
        return []
    claims = verdict.load_file(exp.paper_path)
    judged = [verdict.evaluate_all(claims, ref.metrics) for ref in refs]
    rows = []
    for i, c in enumerate(claims):
        per_ref = [vs[i] for vs in judged]
        values = {ref.label: list(v.values) for ref, v in zip(refs, per_ref) if v.values}
        rows.append([f"`{c.id}`", c.kind, c.paper_text()] + [_cell(v) for v in per_ref]
                    + [compare.intervals_apart(values, [r.label for r in refs])])
    return rows


def _values(records, metric, where):
    """{parameter set (without trial): [values]} of one metric's records whose parameters
    match `where` ({parameter: value})."""
    out = {}
    for rec in records:
        params = {k: v for k, v in rec.get("params", {}).items() if k != "trial"}
        if rec["name"] == metric and all(str(params.get(k)) == str(v) for k, v in where.items()):
            out.setdefault(tuple(sorted((k, str(v)) for k, v in params.items())), []).append(rec["value"])
    return out


def _interval(vals):
    """The mean [95% interval] of trial values; the mean alone when they are all equal (a count,
    not a spread)."""
    mean, _median, lo, hi = intervals.interval(vals)
    return f"{mean:.3g} [{lo:.3g}, {hi:.3g}]" if len(set(vals)) > 1 else f"{mean:.3g}"


def _shown(vals):
    if not vals:
        return "not measured"
    return f"{_interval(vals)} ({', '.join(f'{v:.3g}' for v in vals)})"


def by_release_section(arg, root=None):
    """`by-release:EXPERIMENT:METRIC[:KEY=VALUE,...]`: one metric of every kept reference of an
    experiment, one row per reference and parameter set (those matching the filter), with
    the HTCondor and XRootD the reference ran on: a result read across releases."""
    parts = arg.split(":")
    if len(parts) not in (2, 3):
        raise ConfigError("by-release", arg, "expected EXPERIMENT:METRIC[:KEY=VALUE,...]")
    name, metric = parts[0], parts[1]
    wanted = dict(kv.split("=", 1) for kv in parts[2].split(",")) if len(parts) == 3 and parts[2] else {}
    rows = []
    for ref in reference.listing(root):
        if ref.experiment != name:
            continue
        versions = ref.manifest().get("versions") or {}
        for params, vals in sorted(_values(ref.metrics(), metric, wanted).items(), key=lambda kv: str(kv[0])):
            rows.append([f"`{ref.key}`", versions.get("condor", "?"), str(versions.get("xrootd", "?")).lstrip("v"),
                         ", ".join(f"{k}={v}" for k, v in params), _interval(vals),
                         ", ".join(f"{v:.3g}" for v in vals)])
    if not rows:
        return missing_line(name)
    return "\n".join([table(["reference", "HTCondor", "XRootD", "parameters", f"`{metric}` mean [95% interval]",
                             "trial values"], rows), "",
                      "From the kept references of " + name + " (`results/reference/" + name + "/`), each on the "
                      "release its manifest names."])


def finding_rows(exp, refs, base=""):
    """One row per release finding and parameter set measured on any of the references (their
    compare.RunSnapshot)."""
    rows = []
    for f in exp.release_findings:
        per_ref = [_values(ref.metrics, f.metric, f.where) for ref in refs]
        for i, params in enumerate(sorted({p for values in per_ref for p in values})):
            label = f"`{f.metric}`" + (f" ({', '.join(f'{k}={v}' for k, v in params)})" if params else "")
            # said once per finding, on its first row
            says = "" if i else f"[{f.says}]({base}{f.page})" if f.page else f.says
            cells = [_shown(values.get(params, [])) for values in per_ref]
            apart = compare.intervals_apart({r.label: v[params] for r, v in zip(refs, per_ref) if params in v},
                                            [r.label for r in refs])
            rows.append([label, says] + cells + [apart])
    return rows


def _host(ref):
    """The host a reference ran on, by its kernel build: the same machine type may be another
    build, and faster or slower, from one day to the next."""
    return provenance.field_of(ref.manifest(), "host.kernel") or "unrecorded"


def _code(ref):
    return provenance.field_of(ref.manifest(), "code.measurement")


def _unlike_line(name, paired):
    """[the line saying what else than the release differs between the columns, ""], or []
    when only the release does: an interval apart is then not the release's alone."""
    differs = [what for what, of in (("measurement code", _code), ("host", _host)) if len({of(r) for r in paired}) > 1]
    if not differs:
        return []
    return [f"Not like for like: the columns differ in {' and '.join(differs)} as well as in the release, so a "
            f"result apart here may be theirs, not the release's; `testbed run {name} --box A --box B` measures "
            f"both releases with one code revision on one host, back to back.", ""]


def section(root=None, source="docs/operations/release-matrix.md"):
    """The matrix of every experiment kept on two releases or more; the experiments kept on
    one release are named with the releases they have."""
    parts = Path(source).parent.parts
    base = "../" * (len(parts) - parts.index("docs") - 1) if "docs" in parts else "docs/"   # to docs/
    refs = reference.listing(root)
    release = {r: release_record.release_name(r.manifest().get("versions")) for r in refs}
    sets = matrix_sets(refs, release)
    lines = []
    for (name, key), paired in sets.items():
        exp = registry.experiments().get(name)
        if exp is None:
            continue
        read = compare.snapshots(paired)   # each reference's records read once for both tables
        columns = [f"{release[r]} (`{r.key}`)" for r in paired]
        lines += [f"### {name} at `{key}`", ""]
        lines += [f"- `{r.key}`: {release[r]}, run `{r.origin().get('run', '?')}`, "
                  f"{reference.code_line(r)}, host `{_host(r)}`" for r in paired] + [""]
        lines += _unlike_line(name, paired)
        claims = claim_rows(exp, read)
        if claims:
            lines += [table(["claim", "kind", "paper"] + columns + ["apart"], claims), ""]
        found = finding_rows(exp, read, base)
        if found:
            lines += [table(["result", "what it shows"] + columns + ["apart"], found), ""]
        if not claims and not found:
            lines += [f"{name} declares no claims and no release findings.", ""]
    single, in_sets = {}, {r for group in sets.values() for r in group}
    for ref in refs:
        if ref not in in_sets:
            single.setdefault((ref.experiment, release[ref]), []).append(f"`{ref.key}`")
    if single:
        lines += ["Kept on one release only (no pair to read across):", ""]
        lines += [f"- {name} on {release}: {', '.join(sorted(keys))}" for (name, release), keys in sorted(single.items())]
    if not lines:
        return "No reference kept yet."
    lines += ["", "A verdict cell is the claim's verdict on that reference, with the mean [95% interval] "
              "(trial values); `apart`: whether the 95% intervals of the first and the last column do not "
              "overlap (`-` without two trials on each side)."]
    return "\n".join(lines).rstrip()
