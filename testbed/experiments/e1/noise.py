"""E1's host-noise benchmark (benchmarks/e1_noise.py): the coefficient of variation of
e1.efficiency_lost over one point's trials, in two arms measured one after the other (without,
then with pausing the unused guests and pinning the measured ones), and the pairs of arms
kept in the repository so the documentation's figures have their runs:

    results/benchmarks/e1-noise/<point>-<jobs>jobs-<topology>/
        without/manifest.json, metrics.jsonl   the arm's run, as reference runs keep it
        with/manifest.json, metrics.jsonl      (manifest `kept_from`: the run's folder name)

A pair is written whole into a hidden folder beside its place, then renamed into it
(runs.folder_written_whole, as reference runs are)."""
import os
from pathlib import Path

from testbed.experiments.e1 import jobs as e1_jobs, transfer
from testbed.model import tables
from testbed.model.errors import ConfigError
from testbed.results import intervals
from testbed.results.runs import RESULTS_ROOT, Run, folder_written_whole, matching, write_json_atomic, write_records

GOAL_CV = 0.10
METRIC = "e1.efficiency_lost"
KEPT_ROOT = RESULTS_ROOT / "benchmarks" / "e1-noise"
ARMS = (("without", "without pausing/pinning"), ("with", "with pausing/pinning"))


def point_values(run, point):
    """{trial: efficiency lost} of the point's records in the run."""
    rtt, factor, profile = transfer.parse_point(point)
    found = matching(run.metrics(), METRIC, profile=profile, rate=e1_jobs.rate_label(factor), rtt_ms=rtt)
    return {r["params"].get("trial", 1): r["value"] for r in found}


def jobs_of(run):
    """Jobs per point of the run (its sweep_jobs), None when the manifest does not say."""
    return (run.manifest().get("experiment_parameters") or {}).get("sweep_jobs")


def quiet_text(run):
    q = run.manifest().get("quiet") or {}
    paused = ", ".join(q.get("paused") or []) or "none"
    pinned = ", ".join(f"{h}:{c}" for h, c in (q.get("pin_plan") or {}).items()) or "none"
    return f"paused {paused}; pinned {pinned}"


def report(arms, point):
    """The table of (label, Run) arms and the goal's line; returns (text, CVs). Each CV is
    printed with its standard error (intervals.cv_standard_error): 5 trials pin a CV down to
    about a third of itself, so two arms' CVs within it of each other are not told apart."""
    rows, cvs, ses = [], [], []
    for label, run in arms:
        values = [v for _t, v in sorted(point_values(run, point).items())]
        jobs = jobs_of(run)
        cells = [label, run.label, "-" if jobs is None else str(jobs), len(values)]
        cv = se = None
        if len(values) >= 2:
            mean, sd, cv = intervals.spread(values)
            se = None if cv is None else intervals.cv_standard_error(cv, len(values))
            rows.append(cells + [f"{mean:.3f}", f"{sd:.3f}", "-" if cv is None else _percent(cv, se),
                                 quiet_text(run)])
        else:
            rows.append(cells + ["-", "-", "-", quiet_text(run)])
        cvs.append(cv)
        ses.append(se)
    text = tables.render(["arm", "run", "jobs/point", "trials", "mean", "sd", "CV (± 1 se)", "host noise"], rows)
    without, with_ = cvs[0], cvs[-1]
    if without and with_ is not None:
        text += f"\nCV with / without: {with_ / without:.2f}"
    if with_ is not None:
        near = abs(with_ - GOAL_CV) <= ses[-1]
        text += (f"\ngoal CV <= {100 * GOAL_CV:.0f}% with pausing and pinning: "
                 f"{'met' if with_ <= GOAL_CV else 'not met'} ({_percent(with_, ses[-1])}"
                 f"{'; the goal is within one standard error' if near else ''})")
    else:
        text += f"\nno CV: fewer than two trials of {point} recorded {METRIC}"
    return text, cvs


def _percent(cv, se):
    return f"{100 * cv:.1f}% ± {100 * se:.1f}%"


class KeptArm(Run):
    """One arm of a kept pair, labelled by the run it was kept from."""

    @property
    def label(self):
        return self.manifest().get("kept_from") or self.path.name


def pair_key(arms, point):
    """`<point>-<jobs>jobs-<topology>` of a pair, from its second arm's manifest."""
    run = arms[-1][1]
    topo = (run.manifest().get("topology") or {}).get("name", "unknown")
    return f"{point}-{jobs_of(run) or 'unknown'}jobs-{topo}"


def keep(arms, point, root=None):
    """Copy the two arms' manifest and records into KEPT_ROOT/<pair_key>/{without,with}/,
    whole or not at all (an older pair of the same key is replaced); the pair's folder."""
    if len(arms) != len(ARMS):
        raise ConfigError("e1_noise", "--keep", f"needs {len(ARMS)} arms, got {len(arms)}")
    for _label, run in arms:
        if not point_values(run, point):
            raise ConfigError(run.path, "metrics.jsonl", f"no {METRIC} of {point}: nothing to keep")
    target = Path(root or KEPT_ROOT) / pair_key(arms, point)
    with folder_written_whole(target) as tmp:
        for (name, _label), (_l, run) in zip(ARMS, arms):
            (tmp / name).mkdir()
            write_json_atomic(tmp / name / "manifest.json",
                              dict(run.manifest(), kept_from=run.label, kept_point=point))
            write_records(tmp / name / "metrics.jsonl", run.metrics())
    return target


def kept(root=None):
    """[(point, [(label, KeptArm), ...])] of every kept pair."""
    out = []
    for folder in Path(root or KEPT_ROOT).glob("*/with/manifest.json"):
        pair = folder.parent.parent
        if pair.name.startswith("."):
            continue
        arms = [(label, KeptArm(pair / name)) for name, label in ARMS]
        out.append((arms[-1][1].manifest().get("kept_point") or pair.name, arms))
    # by point, then jobs per point as a number (8 before 16), then topology
    return sorted(out, key=lambda p: (p[0], jobs_of(p[1][-1][1]) or 0,
                                      (p[1][-1][1].manifest().get("topology") or {}).get("name", "")))


def section(root=None):
    """Markdown: each kept pair's table, as the benchmark prints it."""
    pairs = kept(root)
    if not pairs:
        return ("No benchmark run is kept: `benchmarks/e1_noise.py --keep` keeps one into "
                "`results/benchmarks/e1-noise/`.")
    parts = []
    for point, arms in pairs:
        text, _cvs = report(arms, point)
        where = os.path.relpath(arms[-1][1].path.parent, RESULTS_ROOT.parent)
        parts += [f"`{point}`, kept in `{where}/`:", "", "```text", text, "```", ""]
    return "\n".join(parts).rstrip()
