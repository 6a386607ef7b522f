"""Benchmark: does quieting the host narrow E1's spread? One E1 point, repeated (5 trials by
default) without and then with pausing the guests E1 does not use and pinning the measured
ones, in one invocation, through `testbed run`'s own path and sizing (the same as `./tb run e1 --test
POINT --repeat 5 --no-pause-unused --no-pin`, then `--pause-unused --pin`). Prints the
coefficient of variation (sample standard deviation / mean) of e1.efficiency_lost over each
run's trials, and their ratio. The goal: CV <= 10% with pausing and pinning.
Printed, not asserted: the spread is the host's, not the code's. `--keep` keeps the two
arms in results/benchmarks/e1-noise/ (testbed/experiments/e1/noise.py), whose tables
`testbed report docs` puts in docs/operations/runs.md.

    .venv/bin/python benchmarks/e1_noise.py [-t TOPOLOGY] [--test rtt80-2W-default] [--trials 5]
                                            [--scale quick] [--no-pin] [--set sweep_jobs=16 ...]
    .venv/bin/python benchmarks/e1_noise.py --from RUN_WITHOUT RUN_WITH   (print two finished runs)
    .venv/bin/python benchmarks/e1_noise.py ... --keep        (and keep them in the repository)
"""
import argparse
import sys

from testbed.experiments.e1 import noise as e1_noise, e1_scale, transfer
from testbed.harness import registry, runner
from testbed.machines import lifecycle, plan
from testbed.model import topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.remote.site import Site
from testbed.results import runs

# the point names these; a --set of them would measure another point
POINT_KEYS = ("rtts", "rate_factors")


def arm_sets(topo, point, scale, accelerator, extra=None, echo=print):
    """The --set values of both arms: the point's RTT and rate, the user's `extra` ones
    (e.g. {"sweep_jobs": "16"}), sized for this site as `testbed run` sizes it (E1 under
    TCG: the saturation jobs the submit host carries, unless `extra` sets them)."""
    rtt, factor, _profile = transfer.parse_point(point)
    extra = dict(extra or {})
    for key in extra:
        if key.lower() in POINT_KEYS:
            raise ConfigError("--set", f"{key}={extra[key]}", f"{key} comes from --test {point}")
    return runner.sized_for_site(registry.get("e1"), scale, topo, accelerator,
                                 {**extra, "rtts": f"{rtt:g}", "rate_factors": f"{factor:g}"}, echo=echo)


def measure(site, point, trials, scale, pin, extra=None):
    """Run the two arms on the site, each with the same --set values; [(label, Run)]."""
    topo = site.topo
    _rtt, _factor, profile = transfer.parse_point(point)
    sets = arm_sets(topo, point, scale, plan.recorded_accel(site.state), extra,
                    echo=lambda line: print(line, flush=True))
    arms = []
    for (_name, label), quiet in zip(e1_noise.ARMS, (False, True)):
        label = label if pin or not quiet else "with pausing"
        print(f"== {label}: {trials} trials of {point} at {scale} scale on {topo.name}", flush=True)
        _rc, run = runner.run(site, "e1", [profile], scale, sets, select=["--test", point], repeat=trials,
                              pause_unused=quiet, pin=pin and quiet)
        arms.append((label, run))
        if not quiet:   # the second arm's jobs sized as the first's: the arms differ only in the quieting
            sized = e1_scale.sizing_sets(run.manifest().get("experiment_parameters"), run.metrics())
            sets = {**sets, **sized}
            print("   the second arm is sized as the first: " + (", ".join(f"{k}={v}" for k, v in sized.items())
                                                                 or "no saturation rate recorded"), flush=True)
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
    p.add_argument("--keep", action="store_true",
                   help="keep both arms in results/benchmarks/e1-noise/ for the documentation")
    p.add_argument("--from", dest="runs", nargs=2, metavar=("RUN_WITHOUT", "RUN_WITH"),
                   help="print two finished runs instead of running them")
    args = p.parse_args(argv)
    try:
        transfer.parse_point(args.test)
        if args.runs:
            arms = [(label, runs.resolve(ref)) for (_name, label), ref in zip(e1_noise.ARMS, args.runs)]
            selection = arms[0][1].manifest().get("selection") or []
            point = selection[selection.index("--test") + 1] if "--test" in selection else args.test
        else:
            if args.trials < 2:
                raise TestbedError("--trials: a coefficient of variation needs at least 2 trials")
            site = Site(topology.load(args.topology or lifecycle.active_topology() or "default"))
            point = args.test
            arms = measure(site, point, args.trials, args.scale, args.pin, runner.parse_sets(args.set))
    except (TestbedError, ValueError) as exc:
        print(f"e1_noise: {exc}", file=sys.stderr)
        return 2
    text, cvs = e1_noise.report(arms, point)
    print(f"E1 noise: {e1_noise.METRIC} of {point}, CV over each run's trials")
    print(text)
    if args.keep:
        try:
            print(f"kept in {e1_noise.keep(arms, point)}; `./tb report docs` puts it in docs/operations/runs.md")
        except TestbedError as exc:
            print(f"e1_noise: {exc}", file=sys.stderr)
            return 2
    return 0 if all(cv is not None for cv in cvs) else 1


if __name__ == "__main__":
    sys.exit(main())
