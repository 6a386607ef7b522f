"""Benchmark: does quieting the host narrow E1's spread? One E1 point, repeated (5 trials by
default) without and then with pausing the guests E1 does not use and pinning the measured
ones, in one invocation, through `testbed run`'s own path and sizing (the same as `./tb run e1 --test
POINT --repeat 5 --no-pause-unused --no-pin`, then `--pause-unused --pin`). Prints the
coefficient of variation (sample standard deviation / mean) of e1.efficiency_lost over each
run's trials, and their ratio. Issue #32's goal: CV <= 10% with pausing and pinning.
Printed, not asserted: the spread is the host's, not the code's.

    .venv/bin/python benchmarks/e1_noise.py [-t TOPOLOGY] [--test rtt80-2W-default] [--trials 5]
                                            [--scale quick] [--no-pin] [--set sweep_jobs=16 ...]
    .venv/bin/python benchmarks/e1_noise.py --from RUN_WITHOUT RUN_WITH   (print two finished runs)
"""
import argparse
import sys

from testbed.experiments import e1_transfer, runner
from testbed.machines import plan, site
from testbed.model import tables, topology
from testbed.model.state import TestbedState
from testbed.model.errors import ConfigError, TestbedError
from testbed.results import runs, verdict

GOAL_CV = 0.10
METRIC = "e1.efficiency_lost"


def point_values(run, point):
    """{trial: efficiency lost} of the point's records in the run."""
    rtt, factor, profile = e1_transfer.parse_point(point)
    found = runs.matching(run.metrics(), METRIC, profile=profile, rate=e1_transfer.rate_label(factor),
                          rtt_ms=float(rtt))
    return {r["params"].get("trial", 1): r["value"] for r in found}


def quiet_text(run):
    q = run.manifest().get("quiet") or {}
    paused = ", ".join(q.get("paused") or []) or "none"
    pinned = ", ".join(f"{h}:{c}" for h, c in (q.get("pin_plan") or {}).items()) or "none"
    return f"paused {paused}; pinned {pinned}"


def jobs_text(run):
    """Jobs per point of the run (its sweep_jobs), '-' when the manifest does not say."""
    return str((run.manifest().get("experiment_parameters") or {}).get("sweep_jobs", "-"))


def report(arms, point):
    """The table of (label, Run) arms and the verdict line; returns (text, CVs)."""
    rows, cvs = [], []
    for label, run in arms:
        values = [v for _t, v in sorted(point_values(run, point).items())]
        if len(values) >= 2:
            mean, sd, cv = verdict.spread(values)
            rows.append([label, run.label, jobs_text(run), len(values), f"{mean:.3f}", f"{sd:.3f}",
                         "-" if cv is None else f"{100 * cv:.1f}%", quiet_text(run)])
        else:
            cv = None
            rows.append([label, run.label, jobs_text(run), len(values), "-", "-", "-", quiet_text(run)])
        cvs.append(cv)
    text = tables.render(["arm", "run", "jobs/point", "trials", "mean", "sd", "CV", "host noise"], rows)
    without, with_ = cvs[0], cvs[-1]
    if without and with_ is not None:
        text += f"\nCV with / without: {with_ / without:.2f}"
    if with_ is not None:
        text += (f"\ngoal CV <= {100 * GOAL_CV:.0f}% with pausing and pinning: "
                 f"{'met' if with_ <= GOAL_CV else 'not met'} ({100 * with_:.1f}%)")
    else:
        text += f"\nno CV: fewer than two trials of {point} recorded {METRIC}"
    return text, cvs


# the point names these; a --set of them would measure another point
POINT_KEYS = ("rtts", "rate_factors")


def arm_sets(topo, point, scale, accelerator, extra=None, echo=print):
    """The --set values of both arms: the point's RTT and rate, the user's `extra` ones
    (e.g. {"sweep_jobs": "16"}), sized for this site as `testbed run` sizes it (E1 under
    TCG: the saturation jobs the submit host carries, unless `extra` sets them)."""
    rtt, factor, _profile = e1_transfer.parse_point(point)
    extra = dict(extra or {})
    for key in extra:
        if key.lower() in POINT_KEYS:
            raise ConfigError("--set", f"{key}={extra[key]}", f"{key} comes from --test {point}")
    return runner.sized_for_site("e1", scale, topo, accelerator,
                                 {**extra, "rtts": f"{rtt:g}", "rate_factors": f"{factor:g}"}, echo=echo)


def measure(topo, point, trials, scale, pin, extra=None):
    """Run the two arms, each with the same --set values; [(label, Run)]."""
    _rtt, _factor, profile = e1_transfer.parse_point(point)
    sets = arm_sets(topo, point, scale, plan.recorded_accel(TestbedState(topo.name)), extra,
                    echo=lambda line: print(line, flush=True))
    arms = []
    for label, quiet in (("without pausing/pinning", False), ("with pausing" + (" + pinning" if pin else ""), True)):
        print(f"== {label}: {trials} trials of {point} at {scale} scale on {topo.name}", flush=True)
        _rc, run = runner.run(topo, "e1", [profile], scale, sets, select=["--test", point], repeat=trials,
                              pause_unused=quiet, pin=pin and quiet)
        arms.append((label, run))
    return arms


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--test", default="rtt80-2W-default", help="the E1 point (a sweep row of the suite)")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--scale", choices=("ci", "quick", "full"), default="quick")
    p.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                   help="pin the measured guests in the second arm too (default: yes)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="an E1 parameter for both arms, as `testbed run --set` takes it (e.g. sweep_jobs=16)")
    p.add_argument("--from", dest="runs", nargs=2, metavar=("RUN_WITHOUT", "RUN_WITH"),
                   help="print two finished runs instead of running them")
    args = p.parse_args(argv)
    try:
        e1_transfer.parse_point(args.test)
        if args.runs:
            arms = [(label, runs.resolve(ref)) for label, ref in
                    zip(("without pausing/pinning", "with pausing/pinning"), args.runs)]
            selection = arms[0][1].manifest().get("selection") or []
            point = selection[selection.index("--test") + 1] if "--test" in selection else args.test
        else:
            if args.trials < 2:
                raise TestbedError("--trials: a coefficient of variation needs at least 2 trials")
            topo = topology.load(args.topology or site.active_topology() or "default")
            point = args.test
            arms = measure(topo, point, args.trials, args.scale, args.pin, runner.parse_sets(args.set))
    except (TestbedError, ValueError) as exc:
        print(f"e1_noise: {exc}", file=sys.stderr)
        return 2
    text, cvs = report(arms, point)
    print(f"E1 noise: {METRIC} of {point}, CV over each run's trials")
    print(text)
    return 0 if all(cv is not None for cv in cvs) else 1


if __name__ == "__main__":
    sys.exit(main())
