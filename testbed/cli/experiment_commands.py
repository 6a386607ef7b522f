"""Verbs for experiments: run, compare, reference, suites, test, demo."""
import os
import sys
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.cli.common import _profile, _site, report_vms_left, tb_started
from testbed.model.errors import TestbedError

def cmd_run(args):
    """Run a suite on the site as it is; `run --box` is `cmd_run_on_boxes`."""
    from testbed.harness import runner
    site, exp, scale, sets, how = _checked_run(args, running=True)
    rc, run = runner.run_reporting_interruption(site, exp, scale, sets, args.profile, **how)
    _print_comparison([run], against_paper=True, html=run.path / runner.REPORT)
    return rc


def cmd_run_on_boxes(args):
    """`run --box A --box B` (the verb the parser picks when --box is given): the same points
    on each box in turn (the site brought up on it, taken down first when it runs another
    box), every run side by side at the end. The last site stays up, as after any run."""
    from testbed.harness import release_axis, runner
    site, exp, scale, sets, how = _checked_run(args, running=False)
    specs = release_axis.box_specs(args.box, args.from_snapshot)   # every spec checked before a site moves
    runs, rc = [], 0
    for i, spec in enumerate(specs, 1):
        release_axis.bring_up_on(site, spec, f"[box {i}/{len(specs)}] {spec}")   # its topology's box is spec's then
        rc_one, run = runner.run_reporting_interruption(site, exp, scale, sets, args.profile, **how)
        runner.write_report(run)   # each box's report as soon as it ran: a later box may not come up
        runs.append(run)
        rc = rc or rc_one
    _print_comparison(runs, against_paper=True)
    return rc


def _checked_run(args, running):
    """(site, Experiment, scale, typed sets, how: run_checked's other options) of `run`'s
    options, refused on bad input before a site moves: the parameters and their bounds
    whatever the topology, the site (`running`: refused unless it is up), then whether the
    scale fits the site's topology."""
    from testbed.harness import runner
    scale = args.scale or "quick"
    exp, sets, params = runner.check_run(args.suite, scale, args.profile or [], args.set, args.repeat,
                                         args.test, args.include)
    site = _site(args, running=running)
    exp.check_topology(scale, params, site.topo)
    select = [a for name in args.test for a in ("--test", name)] + [a for tag in args.include for a in ("--include", tag)]
    return site, exp, scale, sets, dict(select=select, repeat=args.repeat, pause_unused=args.pause_unused,
                                        pin=args.pin, from_snapshot=args.from_snapshot)


def _say(line):
    """One line on the terminal at once, before a long step that prints nothing."""
    print(line, flush=True)


def _print_comparison(runs, against_paper=False, html=None):
    from testbed.harness import registry
    from testbed.results import compare
    figures = compare.load_paper() if against_paper else None
    runs = compare.snapshots(runs)    # the text and the HTML report from one reading
    print(compare.render_text(runs, figures, table_makers=registry.table_makers()))
    if html:
        path, pngs = compare.render_html(runs, html, figures, axes=registry.plot_axes(),
                                         figure_makers=registry.figure_makers(),
                                         table_makers=registry.table_makers())
        print(f"report: {path} ({len(pngs)} plots)")


def cmd_compare(args):
    from testbed.results import compare
    from testbed.results.runs import resolve
    runs = compare.check_runs(args.runs, resolve)
    if args.against == "reference":
        return _compare_with_references(runs, args.html)
    html = args.html or (runs[-1].path / ("compare.html" if len(runs) == 1 else
                                          f"compare-{len(runs)}-runs.html"))
    _print_comparison(runs, against_paper=args.against == "paper", html=html)
    return 0


def _compare_with_references(runs, html=None):
    """Each run beside the reference of its experiment, scale and topology: the drift table
    and both verdict tables on the terminal, the two runs' HTML report in the run's folder."""
    from testbed.harness import registry
    from testbed.results import compare, reference
    pairs = [(reference.for_run(run), run) for run in runs]  # every reference found before printing
    for i, (ref, run) in enumerate(pairs, 1):
        print(reference.render_drift(ref, run))
        path = run.path / "compare-reference.html"
        if html:
            path = Path(html) if len(pairs) == 1 else Path(html).with_name(f"{Path(html).stem}-{i}{Path(html).suffix}")
        path, pngs = compare.render_html([ref, run], path, compare.load_paper(), title=f"{run.label} against {ref.label}",
                                         axes=registry.plot_axes(), figure_makers=registry.figure_makers(),
                                         table_makers=registry.table_makers())
        print(f"report: {path} ({len(pngs)} plots)")
    return 0


def cmd_reference_save(args):
    from testbed.results import reference, runs
    run = runs.resolve(args.run)
    if args.merge and args.add_trials:
        raise TestbedError("testbed reference save: --merge and --add-trials do not go together")
    kept, replaced = reference.save(run, force=args.force, merge=args.merge, add_trials=args.add_trials,
                                    why=args.why, variant=args.variant)
    print(reference.verdicts_text(kept))
    if args.add_trials:
        added = kept.origin()["added"][-1]
        print(f"added {run.label} to {kept.path} as trial{'s' * (len(added['trials']) != 1)} "
              f"{', '.join(map(str, added['trials']))} of the points it measured")
        return 0
    forced = kept.origin().get("overridden") or []
    kept_from = [m["run"] for m in kept.origin().get("merged") or []]
    print(f"kept {run.label} as {kept.label} in {kept.path}"
          + (f", keeping the points {run.label} did not measure from {', '.join(kept_from)}" if kept_from
             else f", replacing the one kept from {replaced}" if replaced else "")
          + (f"; forced past: {'; '.join(forced)}" if forced else ""))
    if kept.path.resolve().is_relative_to(PROJECT_ROOT.resolve()):
        print(f"to share it: git add {kept.path.resolve().relative_to(PROJECT_ROOT.resolve())}")
    return 0


def cmd_reference_list(args):
    from testbed.results import reference
    print(reference.list_table())
    return 0


def cmd_suites(args):
    """Each suite's generated rows against its registry entry: print what differs (exit 1
    if anything does), or rewrite the blocks with --write."""
    from testbed.harness import registry, rows
    exps = [registry.get(name, "testbed suites") for name in args.names] if args.names else list(registry.experiments().values())
    stale = 0
    for exp in exps:
        blocks = list(exp.generated_rows())
        if not blocks:
            print(f"{exp.suite}: no generated rows")
        elif args.write:
            changed = rows.write_suite(exp)
            print(f"{exp.suite}: " + (f"rewrote {', '.join(changed)}" if changed else
                                      f"{', '.join(blocks)} already as the registry renders them"))
        else:
            found = rows.check_suite(exp)
            stale += len(found)
            for name in blocks:
                print(found.get(name) or f"{exp.suite}: block {name} as the registry renders it")
    return 1 if stale else 0


def _run(argv):
    import subprocess
    print("$ " + " ".join(argv), flush=True)
    return subprocess.call(argv, cwd=PROJECT_ROOT)


def cmd_test(args):
    """Unit tests and the documentation build, then end to end on the small site: bring it up, run the smoke suite
    and every experiment of the registry at ci scale with its default profiles, compare
    two runs, tear down."""
    from testbed.results import compare, robot_output
    from testbed.machines import lifecycle
    from testbed.harness import registry, runner
    from testbed.model import topology
    from testbed.remote.site import Site
    from testbed.services import health
    phases = PhaseClock()
    site = Site(topology.load("small"))
    topo = site.topo
    if not args.unit_only:
        make_room_for(topo)   # before the unit tests: they run with no site of this checkout up
    # one pytest worker per host core: the tests are CPU-bound and independent
    rc = _run([sys.executable, "-m", "pytest", "-q", "-n", "auto", str(PROJECT_ROOT / "tests")])
    phases.done("unit tests")
    if rc == 0:
        rc = build_docs()
        phases.done("documentation build")
    if rc != 0 or args.unit_only:
        return rc
    lifecycle.claim_domains(topo)  # before anything that `down` would undo
    failures, runs, failed_runs, interrupted, recoveries, earlier = [], [], [], False, [], []

    def bring_back():  # once per `testbed test`: a guest's kernel died under TCG
        lifecycle.down(site)
        lifecycle.up(site, _profile("default"), health)
        phases.done(f"bring-up of {topo.name} again")
    try:
        lifecycle.up(site, _profile("default"), health)
        phases.done(f"bring-up of {topo.name}")
        for suite, exp in registry.experiments().items():
            if not exp.suite_path.exists():
                failures.append(f"{suite} (suite file missing)")
                continue
            rc_suite, suite_runs, recovered = runner.run_on_live_guests(
                site, suite, list(exp.ci_profiles or exp.profiles), "ci", bring_back, may_recover=not recoveries)
            run = suite_runs[-1]
            recoveries += [recovered] if recovered else []
            phases.done(f"suite {suite} at ci scale" + ("" if rc_suite == 0 else " (FAILED)"))
            runs.append(run)
            earlier += suite_runs[:-1]
            if rc_suite != 0:
                failures.append(suite)
                failed_runs.append((suite, run))
        experiments = [r for r in runs if r.manifest().get("suite") != "smoke"]
        if len(experiments) >= 2:
            report = experiments[-1].path / "compare-ci.html"
            compared = compare.snapshots(experiments[-2:])    # the HTML report and the text from one reading
            path, pngs = compare.render_html(compared, report, compare.load_paper(),
                                             axes=registry.plot_axes(),
                                             figure_makers=registry.figure_makers(),
                                             table_makers=registry.table_makers())
            print(compare.render_text(compared, compare.load_paper(),
                                      table_makers=registry.table_makers()))
            if not path.exists() or not pngs:
                failures.append("compare (no report)")
            print(f"compare report: {path} ({len(pngs)} plots)")
    except KeyboardInterrupt:
        interrupted = True
        print(f"testbed test: interrupted; {'keeping' if args.keep else 'taking down'} {topo.name}",
              file=sys.stderr, flush=True)
        raise
    finally:
        if not args.keep:
            try:
                lifecycle.down(site)
            except TestbedError as exc:  # keep the error that stopped the run on screen
                print(f"testbed: tear-down failed: {exc}", file=sys.stderr)
                failures.append("down")
                report_vms_left(topo)
            except KeyboardInterrupt:  # a Ctrl-C during the tear-down: say what it left
                report_vms_left(topo)
                raise
        elif interrupted:
            report_vms_left(topo)
        phases.done("tear-down")
    print(phases.table())
    for suite, run in failed_runs:  # the tail of a CI log says why, not only which
        for line in robot_output.failure_lines(run.path):
            print(f"  {suite}: FAIL {line}")
    for text in recoveries:  # the emulator's fault, met and recovered from: said, not hidden
        print(f"  a guest's kernel died {text}; the site was brought back and the suite run again")
    print(f"end to end: {'PASS' if not failures else 'FAIL: ' + ', '.join(failures)}; "
          f"results in {', '.join(str(r.path) for r in runs)}"
          + (f"; runs that met a dead guest: {', '.join(str(r.path) for r in earlier)}" if earlier else ""))
    return 0 if not failures else 1


def make_room_for(topo, echo=None):
    """Before `testbed test` brings up `topo`: the site `testbed demo` left up in this checkout
    is taken down (one line says so); any other topology up here is refused in one line."""
    from testbed.machines import lifecycle
    echo = echo or _say
    other = lifecycle.active_topology()
    if not other or other == topo.name:
        return None
    if not lifecycle.left_by_demo(other):
        raise TestbedError(f"topology {other} is up in this checkout; `testbed -t {other} down` first "
                           f"(the end-to-end tests bring up {topo.name} and tear it down)")
    from testbed.model import topology
    from testbed.remote.site import Site
    echo(f"testbed test: taking down {other}, the site `testbed demo` left up (the end-to-end tests "
         f"bring up {topo.name}; its results stay in results/)")
    lifecycle.down(Site(topology.load(other)))
    return other


def docs_build_argv(site_dir):
    """`mkdocs build --strict` of mkdocs.yml into `site_dir` (a temporary folder: the site is
    not kept)."""
    return [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
            "--config-file", str(PROJECT_ROOT / "mkdocs.yml"), "--site-dir", str(site_dir)]


def build_docs(run=None, browse=None):
    """Build the documentation site strictly into a temporary folder, then open its pages and
    a kept reference's report in headless Chromium (`browse(site_dir)` -> [problem lines]);
    returns the exit code and, on a failure, says so in one line after what went wrong."""
    import tempfile
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # the theme's banner about its successor, not a problem of ours
    with tempfile.TemporaryDirectory(prefix="testbed-site-") as site_dir:
        rc = (run or _run)(docs_build_argv(site_dir))
        if rc != 0:
            print("testbed test: the documentation does not build (`mkdocs build --strict`, warnings above): "
                  "fix the page or link it names, or run `testbed report docs`", file=sys.stderr, flush=True)
            return rc
        found = (browse or browse_docs)(site_dir)
    for line in found:
        print(f"testbed test: in Chromium, {line}", file=sys.stderr, flush=True)
    return 1 if found else 0


def browse_docs(site_dir):
    """The built site's pages and a kept reference's report as headless Chromium renders them."""
    from testbed.report import browser
    checked = browser.check_docs(site_dir, browser.chromium())
    print(f"testbed test: the documentation's pages and a reference's report rendered in Chromium: "
          f"{len(checked) or 'no'} problem{'s' * (len(checked) != 1)}", flush=True)
    return checked


class PhaseClock:
    """Times of the phases of `testbed test`; set-up is measured from `./tb`'s start
    (TB_STARTED, epoch seconds), when given."""

    def __init__(self, now=None, env=None):
        import time
        self._time = now or time.time
        self.rows, self.last = [], self._time()
        started = tb_started(env)
        if started is not None:
            self.rows.append(("host set-up and start", self.last - started))

    def done(self, name):
        now = self._time()
        self.rows.append((name, now - self.last))
        self.last = now

    def table(self):
        from testbed.model import tables
        total = sum(s for _, s in self.rows)
        return tables.render(["phase", "seconds", "minutes"],
                             [[n, f"{s:.0f}", f"{s / 60:.1f}"] for n, s in self.rows]
                             + [["total", f"{total:.0f}", f"{total / 60:.1f}"]])



def cmd_demo(args):
    """Bring up the default site, run the registry's headline experiment (E1) at quick scale
    with its default profiles (default and Table 4's), print and save the comparison with
    the paper."""
    from testbed.machines import lifecycle
    from testbed.harness import registry, runner
    from testbed.model import topology
    from testbed.remote.site import Site
    from testbed.services import health
    head = registry.headline()
    site = Site(topology.load(args.topology or os.environ.get("TESTBED_TOPOLOGY") or "default"))
    topo, state = site.topo, site.state
    try:
        # a parked site comes back warm; a cold one keeps no snapshot: the demo's 20 minutes
        # on a fresh machine have no room for it (the next cold `up` keeps one)
        lifecycle.up(site, _profile("default"), health, keep_warm=False)
        from testbed.machines import plan
        accelerator = plan.recorded_accel(state)
        sets = runner.sized_for_site(head, "quick", topo, accelerator, {}, label="demo", echo=_say)
        for name, value in head.demo_sets.items():
            if name not in sets:
                sets[name] = value
                runner.scale_line("demo", accelerator,
                                  f"{name} {head.scales['quick'][name]} -> {value}: fewer points, so the demo "
                                  f"stays within half an hour; a claim that reads the others says no data "
                                  f"(`./tb run {head.name}` runs them all)", echo=_say)
        print(f"demo: one trial of {head.name} at quick scale, to stay within half an hour on a fresh "
              f"machine; its claims' verdicts need repeated trials: `./tb run {head.name}` (3 trials)", flush=True)
        profiles = list(head.demo_profiles or head.profiles)
        # one trial, no verdict to protect from the host's noise: nothing paused or pinned
        def bring_back():  # a guest's kernel died under TCG: the site again, then E1 again
            lifecycle.down(site)
            lifecycle.up(site, _profile("default"), health, keep_warm=False)
        rc, runs, recovered = runner.run_on_live_guests(site, head.name, profiles, "quick", bring_back,
                                                        echo=_say, sets=sets,
                                                        repeat=1, pause_unused=False, pin=False)
        run = runs[-1]  # its folder has summary.html
        if recovered:
            print(f"demo: a guest's kernel died {recovered}; the site was brought back and "
                  f"{head.name} run again", flush=True)
    except KeyboardInterrupt:  # a half-built site too: say what is up and how to take it down
        print("testbed demo: interrupted", file=sys.stderr, flush=True)
        report_vms_left(topo)
        raise
    lifecycle.mark_left_by_demo(topo)
    _print_comparison([run], against_paper=True)
    print(f"demo: the {topo.name} site is still up ({len(topo.vm_hosts)} VMs, "
          f"{topo.total_memory_mb} MB of guest RAM) for `./tb run`, `./tb status` and the "
          f"tour; `./tb down` takes it down, and `./tb test` takes it down itself before it brings up its own",
          flush=True)
    return rc
