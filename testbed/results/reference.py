"""Reference runs kept in the repository, and a run's drift from its reference.

    results/reference/<experiment>/<scale>-<topology>/
        manifest.json   the run's manifest, plus `reference`: the run it was kept from,
                        when, what --force overrode, and with --merge the runs
                        whose points it still holds
        metrics.jsonl   every complete record of the run (each with its `trial`)
        verdicts.md     the verdict table of the paper's claims, as `compare` prints it

Robot's output.xml/log.html stay in the run's own folder. A reference is saved whole or
not at all: written into a hidden folder beside its place, then renamed into it (an older
reference of the same key is renamed aside first and removed once the new one is in).

Only a finished run is kept: `complete`, `interrupted`, or `failed` by claim rows alone
(a contradicted claim fails its row: that is a result, not a broken measurement). A run
still `running`, one whose robot output shows a failed measurement row, or one whose
rows cannot be read is refused unless forced; one without metrics always.

`save --merge` keeps a run into the reference its key already has instead of in its
place: the run's records replace the reference's records of the same points (metric and
parameters but the trial), every other point of the reference stays. A suite whose rows
are too long for one run (E5's collector ramps beside its ramp, failovers and negotiation)
is kept from two runs this way; each point's trials still come from one run.

`save --add-trials` adds a run's trials to the reference's trials of the same points: the
run's records are renumbered after the last trial the reference has of the points the run
measured, and the reference's records, manifest and origin stay. A row too long to repeat
in one sitting (E5's failovers) gets its third trial this way. Only a run of the same
experiment, scale, topology, profiles and accelerator is added; the origin's `added` lists
each such run with the trials it became.

`drift` puts a run beside the reference of its experiment, scale and topology: per metric,
point and profile the reference's mean [95% interval] and the run's, and the drift
(the run's mean over the reference's); and the two verdict tables side by side.
"""
import json
import math
import re
from pathlib import Path

from testbed.model import tables
from testbed.model.clock import utc_iso, utc_seconds
from testbed.model.constants import OUTCOME_PARAMS
from testbed.model.errors import ConfigError
from testbed.results import compare, intervals, provenance, robot_output, verdict
from testbed.results.runs import (REFERENCE_ROOT, Run, folder_written_whole, trials_count, trials_text,
                                  write_json_atomic, write_records, write_synced)

KEPT_STATUSES = ("complete", "interrupted")
VERDICTS_FILE = "verdicts.md"
HISTORY = "history"             # results/reference/history/<experiment>/<key>/<run>/: replaced references
CLAIM_TAG = "claim"            # the suites' claim rows (robot/resources/experiment.resource)
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class Reference(Run):
    """A kept run: a Run read from results/reference/<experiment>/<key>/."""

    @property
    def experiment(self):
        return self.path.parent.name

    @property
    def key(self):
        return self.path.name

    @property
    def label(self):
        return f"reference {self.experiment}/{self.key}"

    def origin(self):
        """What the manifest says about where the reference came from."""
        return self.manifest().get("reference") or {}


def key_of(manifest, source="manifest.json"):
    """(experiment, `<scale>-<topology>`) of a run's manifest."""
    topo = manifest.get("topology")
    topo_name = topo.get("name") if isinstance(topo, dict) else (Path(str(topo)).stem if topo else None)
    parts = {"suite": manifest.get("suite"), "scale": manifest.get("scale"), "topology.name": topo_name}
    for field, value in parts.items():
        if not isinstance(value, str) or not SAFE_NAME.match(value):
            raise ConfigError(source, field, f"{value!r} cannot name a reference folder")
    return parts["suite"], (f"{parts['scale']}-{topo_name}{release_suffix(manifest, source)}"
                            f"{patched_suffix(manifest, source)}")


def release_suffix(manifest, source="manifest.json"):
    """`+release-NAME` for a run on the box of another middleware release (the manifest's
    topology.box, `debian13+release:NAME`), so that each release keeps its own reference
    beside the stock one; "" for the stock box."""
    topo = manifest.get("topology")
    box = str(topo.get("box") or "") if isinstance(topo, dict) else ""
    m = re.search(r"\+release:([^+]+)", box)
    if not m:
        return ""
    if not SAFE_NAME.match(m.group(1)):
        raise ConfigError(source, "topology.box", f"{box!r} cannot name a reference folder")
    return f"+release-{m.group(1)}"


def patched_suffix(manifest, source="manifest.json"):
    """`+patched-NAME[-NAME]` for a run on a box with rebuilt HTCondor daemons (the manifest's
    versions.condor_patches, `NAME:SHA256,...`), so that a patched run is kept and compared
    beside the stock one, never in its place; "" for the stock box."""
    listed = str((manifest.get("versions") or {}).get("condor_patches") or "").strip()
    if not listed:
        return ""
    names = [item.split(":", 1)[0].strip() for item in listed.split(",") if item.strip()]
    suffix = "+patched-" + "-".join(names)
    if not all(SAFE_NAME.match(n) for n in names):
        raise ConfigError(source, "versions.condor_patches", f"{listed!r} cannot name a reference folder")
    return suffix


def problems(run):
    """Why `run` should not become a reference ([] when it may): its status, failed
    measurement rows, robot outputs that cannot be read."""
    status = run.manifest().get("status")
    rows, unreadable = robot_output.read_rows(run.path)
    found = []
    if status == "failed" and not rows:
        found.append("status failed, with no robot output to tell a contradicted claim from a failed row")
    elif status not in KEPT_STATUSES + ("failed",):
        found.append(f"status {status} (only a complete or interrupted run is kept)")
    if unreadable:
        found.append(f"robot output unreadable: {', '.join(unreadable)}")
    if status == "interrupted" and not rows and not unreadable:
        found.append("interrupted, with no robot output to tell which rows passed")
    failed = [f"{r.name} ({r.file})" if len({x.file for x in rows}) > 1 else r.name
              for r in rows if r.status == "FAIL" and CLAIM_TAG not in r.tags]
    if failed:
        found.append(f"{len(failed)} failed row{'s' * (len(failed) != 1)}: {', '.join(failed[:4])}"
                     + (", ..." if len(failed) > 4 else ""))
    return found


def trial_count_problem(manifest, ran=None):
    """Why a run's trials (`ran`, default the manifest's count) are not the count its
    experiment declares at its scale, or ""."""
    declared, ran = manifest.get("trials_declared"), ran or manifest.get("trials") or 1
    if declared is None:
        return f"its manifest declares no trial count (ran {ran})"
    return "" if ran == declared else (f"ran {ran} trial{'s' * (ran != 1)} where {manifest.get('suite')} declares "
                                       f"{declared} at {manifest.get('scale')}")


def protocol_problems(ref):
    """Why a reference is not judged under the declared protocol ([] when it is): its trials
    from one declared run (or runs of one provenance), the declared count, and the hash of
    the measurement code it was measured with."""
    m, origin = ref.manifest(), ref.origin()
    found = []
    miscounted = trial_count_problem(m, len({trial_of(r) for r in ref.metrics()}))
    if miscounted:
        found.append(miscounted)
    others = [x["run"] for x in (origin.get("merged") or []) + (origin.get("added") or [])]
    if others and not origin.get("provenance_checked"):
        found.append(f"holds the records of {len(others) + 1} runs kept together without a check of their code "
                     f"and site")
    if not provenance.field_of(m, "code.measurement"):
        found.append("its manifest has no hash of the code that measured it")
    return found


def code_line(ref, now=None):
    """The measurement code the reference was measured with and, given the project's `now`
    (provenance.measurement_hash()), whether that is still the code. The generated docs
    leave `now` out: every change to the code would make them stale."""
    code = provenance.field_of(ref.manifest(), "code.measurement")
    if not code:
        return "measurement code unrecorded"
    if now is None:
        return f"measurement code `{code}`"
    return (f"measurement code `{code}`, the project's current" if code == now else
            f"measurement code `{code}`; the project's has changed since (`{now}`): a fresh run measures it")


def keep_history(older, root, replaced_by, why, now):
    """Move the reference `older` replaces into history/<experiment>/<key>/<its run>/, with
    replaced.json saying by which run, when and why: the docs list every run ever judged."""
    dest = Path(root) / HISTORY / older.experiment / older.key / str(older.origin().get("run") or "unknown")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "metrics.jsonl", VERDICTS_FILE):
        if (older.path / name).exists():
            write_synced(dest / name, (older.path / name).read_text())
    write_json_atomic(dest / "replaced.json", {"replaced_by": replaced_by, "when": now(), "why": why})


def history(experiment, key, root=None):
    """[(Run, {replaced_by, when, why})] of the references kept before this one, oldest first."""
    base = Path(root or REFERENCE_ROOT) / HISTORY / experiment / key
    out = []
    for path in sorted(base.glob("*/replaced.json")):
        out.append((Run(path.parent), json.loads(path.read_text())))
    return sorted(out, key=lambda x: x[1].get("when", ""))


def verdicts_text(run, paper_dir=compare.PAPER_DIR):
    """The verdict table of `run`'s claims, as `compare --against paper` prints it."""
    return verdict.render_text(compare.verdicts([run], paper_dir)) or \
        f"{run.manifest().get('suite')} declares no claims in {paper_dir}"


def _rows(selection):
    """The rows a run measured, in words: "rows a, b" or "every row"."""
    rows = ", ".join(s for s in selection or [] if not s.startswith("--"))
    return f"rows {rows}" if rows else "every row"


def _label(origin):
    """The runs a reference holds, in the order they were kept: the run, the merged, the added."""
    return " + ".join([origin.get("run")] + [x["run"] for x in origin.get("merged") or []]
                      + [x["run"] for x in origin.get("added") or []])


def _verdicts_md(m, label, experiment, key, text, merged_from=None, added=None):
    also = "".join(f" Its points that run did not measure are kept from run `{x['run']}` "
                   f"({x['records']} record{'s' * (x['records'] != 1)} when merged; {_rows(x.get('selection'))})."
                   for x in merged_from or [])
    also += "".join(f" Trial{'s' * (len(x['trials']) != 1)} {', '.join(map(str, x['trials']))} of "
                    f"{_rows(x.get('selection'))} {'are' if len(x['trials']) != 1 else 'is'} added from run "
                    f"`{x['run']}` ({x['records']} record{'s' * (x['records'] != 1)})."
                    + (f" Run `{x['replaced_by']}` measured some of those points again: their records are "
                       f"that run's." if x.get("replaced_by") else "")
                    for x in added or [])
    return (f"# {experiment} at {key}: does it reproduce the paper?\n\n"
            f"Kept from run `{label}` (status {m.get('status')}, {trials_text(m)}, "
            f"git {m.get('git_revision')}, {m.get('accel')}).{also} "
            f"Made by `testbed reference save`; `testbed compare RUN --against reference` "
            f"judges this reference's records again with the claims results/paper/ holds then.\n\n"
            f"```text\n{text}\n```\n")


def trial_of(record):
    return int((record.get("params") or {}).get("trial") or 1)


def with_trials_added(old_records, new_records):
    """The older reference's records, then the new run's with each trial renumbered after
    the reference's last trial; (records, [new trial numbers]). One offset for all, so a
    claim's points stay paired by trial and the trials stay numbered without gaps."""
    last = max((trial_of(r) for r in old_records), default=0)
    renumbered = [dict(r, params={**(r.get("params") or {}),
                                  "trial": last + int((r.get("params") or {}).get("trial") or 1)})
                  for r in new_records]
    return list(old_records) + renumbered, sorted({r["params"]["trial"] for r in renumbered})


def point_of(record):
    """A record's point: its metric and its parameters but the trial and those that say what
    the measurement found (OUTCOME_PARAMS: a ramp that stopped elsewhere measured the same
    point)."""
    params = {k: str(v) for k, v in (record.get("params") or {}).items()
              if k != "trial" and k not in OUTCOME_PARAMS}
    return record.get("name"), tuple(sorted(params.items()))


def merged(old_records, new_records):
    """The older reference's records of every point the new run did not measure, then the
    new run's records."""
    measured = {point_of(r) for r in new_records}
    return [r for r in old_records if point_of(r) not in measured] + list(new_records)


class _Kept(Run):
    """The folder being written, judged under the label the verdicts file names."""

    def __init__(self, path, label):
        super().__init__(path)
        self._label = label

    @property
    def label(self):
        return self._label


def save(run, root=None, force=False, paper_dir=compare.PAPER_DIR, now=utc_iso, merge=False, add_trials=False,
         why="", variant=""):
    """Keep `run` as the reference of its experiment, scale and topology; returns
    (Reference, the label of the run it replaced or None). Refused (ConfigError) when
    `problems` finds any, unless `force`; always when the run has no metrics. With `merge`,
    the reference the key has keeps every point `run` did not measure (`merged`); with
    `add_trials`, `run`'s trials are added to the reference's (`with_trials_added`); both
    only from a run of the same provenance (results/provenance.py). A reference it replaces
    goes to history/ with `why`. A run of another trial count than its experiment declares
    is refused unless `force`. With `variant`, the key is `<key>+VARIANT`: a run of other
    parameters or of some rows only, kept beside the reference of the whole suite."""
    manifest = run.manifest()
    experiment, key = key_of(manifest, run.manifest_path)
    if variant:
        if not SAFE_NAME.match(variant) or "/" in variant:
            raise ConfigError("--variant", "", f"{variant!r} cannot name a reference folder")
        key = f"{key}+{variant}"
    records = run.metrics()
    if not records:
        raise ConfigError(run.path, "metrics.jsonl", "no metrics to keep")
    found = problems(run)
    if found and not force:
        raise ConfigError(run.path, "", f"not kept as a reference: {'; '.join(found)} (--force keeps it anyway)")
    parent = Path(root or REFERENCE_ROOT) / experiment
    target = parent / key
    older = Reference(target) if (target / "manifest.json").exists() else None
    if (merge or add_trials) and older is not None:
        provenance.refuse_mixed(older.manifest(), manifest, run.manifest_path)
    if add_trials:
        return _add_trials(run, records, older, target, paper_dir, now, found), None
    miscounted = trial_count_problem(manifest)
    if miscounted and not merge:
        if not force:
            raise ConfigError(run.manifest_path, "trials", f"not kept as a reference: {miscounted} (a reference is "
                                                           f"judged on the declared trials; --force keeps it anyway)")
        found = found + [miscounted]
    replaced = older.origin().get("run") if older else None
    # merged or added runs are refused unless of the same provenance (`refuse_mixed` above)
    origin = {"run": run.label, "kept": now(), "forced": bool(found), "overridden": found, "provenance_checked": True}
    if variant:
        origin["variant"] = variant
    if older is not None and not merge:
        keep_history(older, Path(root or REFERENCE_ROOT), run.label, why or "replaced", now)
    if merge and older:
        new_count = len(records)
        measured, old_records = {point_of(r) for r in records}, older.metrics()
        records = merged(old_records, records)
        before = older.origin()
        origin["merged"] = [m for m in before.get("merged") or [] if m["run"] != run.label] + \
            ([{"run": before.get("run"), "kept": before.get("kept"), "selection": older.manifest().get("selection"),
               "records": len(records) - new_count, "seconds": run_seconds(older.manifest())}]
             if before.get("run") != run.label else [])
        if before.get("added"):   # the trials added earlier stay named where their records stay
            origin["added"] = [_after_merge(x, old_records, measured, run.label) for x in before["added"]]
    _write_reference(target, dict(manifest, reference=origin), records, paper_dir)
    return Reference(target), replaced


def run_seconds(manifest):
    """The wall time of the run a manifest records (None without its start and end)."""
    if not (manifest.get("start") and manifest.get("end")):
        return None
    return round(utc_seconds(manifest["end"]) - utc_seconds(manifest["start"]))


def _after_merge(entry, old_records, measured, run_label):
    """An `added` entry once a merge has replaced the records of the points `measured`: it
    names the merging run when any record of its trials was among them."""
    trials = set(entry["trials"])
    hit = any(point_of(r) in measured and int((r.get("params") or {}).get("trial") or 1) in trials
              for r in old_records)
    return dict(entry, replaced_by=run_label) if hit else entry


def _add_trials(run, records, older, target, paper_dir, now, overridden):
    """`save --add-trials`: the reference at `target` with `run`'s trials added."""
    manifest = run.manifest()
    if older is None:
        raise ConfigError(target, "", f"no reference to add {run.label}'s trials to (keep one first)")
    kept = older.manifest()
    origin = older.origin()
    if run.label in {origin.get("run")} | {x["run"] for x in origin.get("merged") or []} | \
            {x["run"] for x in origin.get("added") or []}:
        raise ConfigError(run.manifest_path, "", f"{run.label} is already in the reference")
    combined, trials = with_trials_added(older.metrics(), records)
    declared = kept.get("trials_declared")
    if declared is not None and max(trials) > declared:
        raise ConfigError(run.manifest_path, "trials", f"the reference would have {max(trials)} trials where "
                                                       f"{kept.get('suite')} declares {declared} at {kept.get('scale')}: "
                                                       f"more trials are a run of their own, judged on its own")
    origin = dict(origin, added=(origin.get("added") or []) + [
        {"run": run.label, "kept": now(), "selection": manifest.get("selection"), "records": len(records),
         "trials": trials, "overridden": overridden}])
    _write_reference(target, dict(kept, reference=origin), combined, paper_dir)
    return Reference(target)


def _write_reference(target, manifest, records, paper_dir):
    """Write a reference whole into a hidden folder beside `target`, then swap it in:
    `manifest` (with its `reference` origin), `records`, and the verdicts of the runs the
    origin names."""
    origin = manifest["reference"]
    with folder_written_whole(target) as tmp:
        write_json_atomic(tmp / "manifest.json", manifest)
        write_records(tmp / "metrics.jsonl", records)
        text = verdicts_text(_Kept(tmp, _label(origin)), paper_dir)
        write_synced(tmp / VERDICTS_FILE, _verdicts_md(manifest, origin.get("run"), target.parent.name, target.name,
                                                        text, origin.get("merged"), origin.get("added")))


def listing(root=None):
    """Every reference under `root`, by experiment and key."""
    return [Reference(p.parent) for p in sorted(Path(root or REFERENCE_ROOT).glob("*/*/manifest.json"))
            if not p.parent.name.startswith(".")]


def find(experiment, key, root=None):
    """The reference of `experiment` at `key` (`<scale>-<topology>`); a one-line error
    naming the references there are when it has none."""
    path = Path(root or REFERENCE_ROOT) / experiment / key
    if (path / "manifest.json").exists():
        return Reference(path)
    there = ", ".join(f"{r.experiment}/{r.key}" for r in listing(root)) or "none"
    raise ConfigError(path, "", f"no reference for {experiment} at {key} (references: {there}; "
                                f"keep one with `testbed reference save RUN`)")


def for_run(run, root=None):
    """The reference of `run`'s experiment, scale and topology."""
    return find(*key_of(run.manifest(), run.manifest_path), root=root)


def list_table(root=None, paper_dir=compare.PAPER_DIR):
    """The references as a terminal table (or a line saying there are none)."""
    refs = listing(root)
    if not refs:
        return f"no references in {root or REFERENCE_ROOT} (keep one with `testbed reference save RUN`)"
    judged = {id(run): vs for run, vs in compare.verdicts(refs, paper_dir)}
    now = provenance.measurement_hash()
    rows = []
    for ref in refs:
        m, origin = ref.manifest(), ref.origin()
        counts = {}
        for v in judged.get(id(ref), []):
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
        rows.append([ref.experiment, ref.key, origin.get("run", "?"), m.get("status"), trials_count(m),
                     str(m.get("git_revision", ""))[:12], origin.get("kept", "?")
                     + (" (forced)" if origin.get("forced") else ""),
                     ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "-",
                     "current" if provenance.field_of(m, "code.measurement") == now else
                     (provenance.field_of(m, "code.measurement") or "unrecorded")[:16] + " (changed since)"])
    return tables.render(["experiment", "scale-topology", "kept from", "status", "trials", "git", "kept",
                          "verdicts", "measurement code"], rows)


# --- a run against its reference -------------------------------------------------------------
def drift_rows(ref, run):
    """(headers, rows): per metric, point and profile the reference's and the run's mean
    [95% interval] n, the drift (run / reference) and whether the run's mean is outside
    the reference's interval."""
    spreads = {}
    columns, rows, _ = compare.collect([ref, run], axes=compare.DEFAULT_AXES, trials=spreads)
    profiles = list(dict.fromkeys(p for _label, p in columns))
    out = []
    for (metric, params, unit), values in rows.items():
        for profile in profiles:
            a, b = (ref.label, profile), (run.label, profile)
            if a not in values and b not in values:
                continue
            per = spreads[(metric, params, unit)]
            cells = [compare.cell_text(values[c], per[c]) if c in values else "-" for c in (a, b)]
            drift, outside = "-", "-"
            if a in values and b in values:
                if values[a]:
                    drift = f"{values[b] / values[a]:.2f}x"
                if len(per[a]) > 1:
                    _mean, _median, lo, hi = intervals.interval(per[a])
                    outside = "no" if within(values[b], lo, hi) else "yes"
            out.append([metric, compare.format_params(dict(params)), profile, unit] + cells + [drift, outside])
    headers = ["metric", "parameters", "profile", "unit", "reference", "this run", "drift", "outside ref. interval"]
    return headers, out


def within(value, lo, hi):
    """`lo <= value <= hi`, an edge met within float rounding (a zero-width interval of trials
    that all gave 6.4 holds a run's 6.4)."""
    return lo <= value <= hi or math.isclose(value, lo, rel_tol=1e-9) or math.isclose(value, hi, rel_tol=1e-9)


def _judged(v):
    if v is None:
        return "-", "-"
    if v.verdict == verdict.NO_DATA:
        return v.verdict, "-"
    return v.verdict, v.estimate()


def verdict_rows(ref, run, paper_dir=compare.PAPER_DIR):
    """(headers, rows): each claim's verdict on the reference and on the run, side by side."""
    judged = {id(r): {v.claim.id: v for v in vs} for r, vs in compare.verdicts([ref, run], paper_dir)}
    on_ref, on_run = judged.get(id(ref), {}), judged.get(id(run), {})
    rows = []
    for cid in list(dict.fromkeys(list(on_ref) + list(on_run))):
        a, b = on_ref.get(cid), on_run.get(cid)
        claim = (a or b).claim
        (va, ea), (vb, eb) = _judged(a), _judged(b)
        rows.append([cid, va, ea, vb, eb, claim.paper_text(), "same" if va == vb else "changed"])
    return ["claim", "reference", "mean [interval] (trials)", "this run", "mean [interval] (trials)", "paper",
            "verdict"], rows


def render_drift(ref, run, paper_dir=compare.PAPER_DIR):
    """The terminal text of `compare RUN --against reference`."""
    m, origin = ref.manifest(), ref.origin()
    head = (f"{run.label} against {ref.label} (kept from {origin.get('run', '?')}, {trials_text(m)}, "
            f"git {str(m.get('git_revision', ''))[:12]}); drift = this run's mean / the reference's; "
            f"{verdict.INTERVAL_METHOD}")
    headers, rows = drift_rows(ref, run)
    parts = [head, tables.render(headers, rows) if rows else "no metrics in either run"]
    vh, vrows = verdict_rows(ref, run, paper_dir)
    if vrows:
        changed = sum(r[-1] == "changed" for r in vrows)
        parts += ["", f"verdicts, reference beside this run ({changed} of {len(vrows)} changed)",
                  tables.render(vh, vrows)]
    parts.append(f"status: {ref.label}: {m.get('status')}; {run.label}: {run.manifest().get('status')}")
    return "\n".join(parts)
