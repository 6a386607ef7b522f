"""`testbed` command line. Every error is one line and exit code 2."""
import argparse
import json
import os
import sys

from testbed import PROJECT_ROOT
from testbed.model.errors import TestbedError


def _topology(args):
    """--topology, else $TESTBED_TOPOLOGY, else the topology that is up, else `default`."""
    from testbed.machines import site
    from testbed.model import topology
    name = args.topology or os.environ.get("TESTBED_TOPOLOGY") or site.active_topology() or "default"
    return topology.load(name)


def _profile(name):
    from testbed.model import profiles
    return profiles.load(name)


def cmd_plan(args):
    from testbed.machines import plan
    data = plan.build(_topology(args), _profile(args.profile))
    if args.json:
        print(json.dumps(data))
    else:
        for h in data["hosts"]:
            print(h["name"], h["site_ip"], ",".join(h["roles"]))
    return 0


def cmd_topology_show(args):
    from testbed.model import topology, tables
    topo = _topology(args)
    need = topology.check_fits(topo) if not args.no_ram_check else topo.total_memory_mb
    rows = []
    for h in topo.hosts.values():
        detail = []
        if h.has("worker"):
            detail.append(f"{h.startds} startd x {h.slots_per_startd} slots")
        if h.disks:
            detail.append(f"RAID{h.disks.raid_level} {h.disks.count} x {h.disks.size_gb} GB")
        if h.has("dtn"):
            detail.append(f"{h.dtn_slots} DTN slots")
        if h.has("origin"):
            detail.append(f"{h.origin_files} files x {h.origin_file_mb} MB")
        rows.append([h.name, h.site_ip, ", ".join(h.roles), h.memory_mb, h.cpus, "; ".join(detail)])
    print(f"topology {topo.name} ({topo.source})")
    print(tables.render(["VM", "site address", "roles", "RAM MB", "vCPU", "details"], rows))
    print(f"networks: management {topo.management_net} (host-only), site {topo.site_net} (host-only)")
    for link in topo.wan:
        print(f"wan: {link.a} <-> {link.b} {link.rtt_ms:g} ms RTT")
    print(f"total guest RAM {topo.total_memory_mb} MB (with qemu overhead {need} MB); "
          f"{topo.planned_slots} execute slots planned")
    return 0


def cmd_box_build(args):
    from testbed.machines.box import Box
    box = Box(args.kind)
    seconds = box.build(mirror=args.mirror, force=args.force)
    print(f"box {box.name} ready in {seconds:.0f} s ({box.dir})")
    return 0


def cmd_up(args):
    from testbed.machines import site
    return site.up(_topology(args), _profile(args.profile), parallel=not args.serial)


def cmd_down(args):
    from testbed.machines import site
    return site.down(_topology(args))


def cmd_provision(args):
    """Apply edited templates or role scripts to a running site, every host in parallel."""
    from testbed.remote import health
    from testbed.machines import site
    from testbed.machines.state import TestbedState
    topo = _topology(args)
    state = TestbedState(topo.name)
    if not state.ssh_key.exists():
        raise TestbedError(f"{state.dir}: no testbed {topo.name} here; `testbed -t {topo.name} up` first")
    profile = _profile(args.profile) if args.profile else health.recorded_profile(state) or _profile("default")
    seconds = site.provision(topo, profile, args.hosts or None)
    print(f"provisioned in {seconds:.0f} s; `testbed status --wait 600` to see the site healthy again")
    return 0


def cmd_ssh(args):
    from testbed.machines import site
    topo = _topology(args)
    return site.ssh_interactive(topo, args.host, args.command)


def cmd_status(args):
    from testbed.remote import health
    topo = _topology(args)
    if args.wait:
        from testbed.model.errors import TestbedError
        from testbed.remote.ssh import SSH
        try:
            report = health.wait_healthy(topo, SSH(topo, timeout=40), timeout=args.wait,
                                         echo=lambda line: print(line, file=sys.stderr))
        except TestbedError as exc:
            print(f"testbed: {str(exc).splitlines()[0]}", file=sys.stderr)
            report = health.collect(topo)
    else:
        report = health.collect(topo)
    print(json.dumps(report, indent=2) if args.json else health.format_report(report))
    return 0 if report["healthy"] else 1


def cmd_profile_show(args):
    from testbed.model import profiles, tables
    prof = _profile(args.name)
    print(f"profile {prof.name} ({prof.source}){': ' + prof.description if prof.description else ''}")
    if len(prof.chain) > 1:
        print("extends: " + " <- ".join(prof.chain))
    if prof.reference:
        print(f"reference: {prof.reference}")
    print(tables.render(["role", "section", "key", "value"], profiles.flatten(prof)))
    for link in prof.wan:
        print(f"wan: {link['between'][0]} <-> {link['between'][1]} {link.get('rtt_ms', 0)} ms RTT")
    return 0


def cmd_profile_diff(args):
    from testbed.model import profiles, tables
    a, b = _profile(args.a), _profile(args.b)
    rows = profiles.diff(a, b)
    if not rows:
        print(f"profiles {a.name} and {b.name} set the same values")
        return 0
    print(tables.render(["role", "section", "key", a.name, b.name], rows))
    return 0


def _site(args):
    from testbed.remote.ssh import SSH
    from testbed.machines.state import TestbedState
    topo = _topology(args)
    state = TestbedState(topo.name)
    if not state.ssh_key.exists():
        raise TestbedError(f"{state.dir}: no testbed {topo.name} here; `testbed -t {topo.name} up` first")
    return topo, SSH(topo, state), state


def cmd_profile_apply(args):
    from testbed.remote import health
    from testbed.network import netem, wan
    from testbed.services import tuning
    topo, ssh, state = _site(args)
    prof = _profile(args.name)
    outcome = tuning.apply(topo, ssh, prof, health.recorded_profile(state))
    if prof.wan:
        wan.set_links(topo, ssh, state, netem.parse_links(prof.wan, prof.source, "wan"))
    health.record_profile(state, prof, outcome)
    print(f"recorded in {state.profile_record}")
    return 0


def cmd_wan_set(args):
    from testbed.network import netem, wan
    from testbed.model import tables
    topo, ssh, state = _site(args)
    links = [netem.parse_spec(spec) for spec in args.links]
    for link in links:
        for group in (link.a, link.b):
            try:
                topo.group(group)
            except KeyError:
                raise TestbedError(f"wan set: {link.a}:{link.b}: unknown host group {group!r} "
                                   f"(hosts and roles of {topo.name})") from None
    rows = wan.set_links(topo, ssh, state, links)
    print(tables.render(["link", "probe", "configured RTT ms", "measured ms (median)", "min", "max"],
                        [[r["link"], f"{r['from']}->{r['to']}", f"{r['configured_ms']:g}", r["measured_ms"],
                          r["min_ms"], r["max_ms"]] for r in rows]))
    return 0


def cmd_wan_show(args):
    from testbed.network import wan
    topo, ssh, state = _site(args)
    record = wan.in_force(state)
    if not record["links"]:
        print("no WAN emulation recorded (all links at LAN latency)")
    for link in record["links"]:
        print(f"{link['a']} <-> {link['b']}: {link['rtt_ms']:g} ms RTT"
              + (f", jitter {link['jitter_ms']:g} ms" if link.get("jitter_ms") else "")
              + (f", loss {link['loss_pct']:g}%" if link.get("loss_pct") else "")
              + (f", rate {link['rate_mbit']:g} Mbit/s" if link.get("rate_mbit") else ""))
    for row in record.get("measured", []):
        print(f"  measured {row['from']}->{row['to']}: {row['measured_ms']} ms (configured {row['configured_ms']:g})")
    if args.qdiscs:
        for host, text in wan.show(topo, ssh).items():
            print(f"--- {host}\n{text}")
    return 0


def cmd_wan_clear(args):
    from testbed.network import wan
    topo, ssh, state = _site(args)
    wan.clear(topo, ssh, state)
    print(f"WAN emulation cleared on {len(topo.hosts)} hosts")
    return 0


def cmd_run(args):
    from testbed.experiments import runner as suites
    topo, _ssh, _state = _site(args)
    scale = "full" if args.full else "quick"
    rc, run = suites.run(topo, args.suite, args.profile, scale, suites.parse_sets(args.set))
    _print_comparison([run], against_paper=True, html=run.path / "comparison.html")
    return rc


def _print_comparison(runs, against_paper=False, html=None):
    from testbed.results import compare
    figures = compare.load_paper() if against_paper else None
    print(compare.render_text(runs, figures))
    if html:
        path, pngs = compare.render_html(runs, html, figures)
        print(f"report: {path} ({len(pngs)} plots)")


def cmd_compare(args):
    from testbed.results import compare, runs as results
    runs = compare.check_runs(args.runs, results.resolve)
    html = args.html or (runs[-1].path / ("comparison.html" if len(runs) == 1 else
                                          f"compare-{len(runs)}-runs.html"))
    _print_comparison(runs, against_paper=args.against == "paper", html=html)
    return 0


def _run(argv):
    import subprocess
    print("$ " + " ".join(argv), flush=True)
    return subprocess.call(argv, cwd=PROJECT_ROOT)


def cmd_test(args):
    """Unit tests, then end to end on the small site: bring it up, run the smoke suite
    and every experiment suite at quick scale, compare two runs, tear down."""
    from testbed.results import compare
    from testbed.machines import site
    from testbed.experiments import runner as suites
    from testbed.model import topology
    rc = _run([sys.executable, "-m", "pytest", "-q", str(PROJECT_ROOT / "tests")])
    if rc != 0 or args.unit_only:
        return rc
    topo = topology.load("small")
    site.claim_domains(topo)  # before anything that `down` would undo
    failures, runs = [], []
    try:
        site.up(topo, _profile("default"))
        for suite, profs in CI_SUITES:
            if not suites.suite_file(suite).exists():
                failures.append(f"{suite} (suite file missing)")
                continue
            rc_suite, run = suites.run(topo, suite, profs, "quick")
            runs.append(run)
            if rc_suite != 0:
                failures.append(suite)
        experiments = [r for r in runs if r.manifest().get("suite") != "smoke"]
        if len(experiments) >= 2:
            report = experiments[-1].path / "compare-ci.html"
            path, pngs = compare.render_html(experiments[-2:], report, compare.load_paper())
            print(compare.render_text(experiments[-2:], compare.load_paper()))
            if not path.exists() or not pngs:
                failures.append("compare (no report)")
            print(f"compare report: {path} ({len(pngs)} plots)")
    finally:
        if not args.keep:
            try:
                site.down(topo)
            except TestbedError as exc:  # keep the error that stopped the run on screen
                print(f"testbed: tear-down failed: {exc}", file=sys.stderr)
                failures.append("down")
    print(f"end to end: {'PASS' if not failures else 'FAIL: ' + ', '.join(failures)}; "
          f"results in {', '.join(str(r.path) for r in runs)}")
    return 0 if not failures else 1


CI_SUITES = (("smoke", ["default"]), ("e1", ["default", "wan-tuned"]), ("e2", ["default", "raid-stripe-32768"]))


def cmd_demo(args):
    """Bring up the default site, run the headline experiment (E1) at quick scale with the
    default and Table 4 profiles, print and save the comparison with the paper."""
    from testbed.machines import site
    from testbed.experiments import runner as suites
    from testbed.model import topology
    topo = topology.load(args.topology or os.environ.get("TESTBED_TOPOLOGY") or "default")
    site.up(topo, _profile("default"))
    rc, run = suites.run(topo, "e1", ["default", "wan-tuned"], "quick")
    _print_comparison([run], against_paper=True, html=run.path / "comparison.html")
    return rc


def build_parser():
    p = argparse.ArgumentParser(prog="testbed", description=__doc__)
    p.add_argument("--topology", "-t", default=None,
                   help="topology name (topologies/NAME.yaml) or path; default: $TESTBED_TOPOLOGY, "
                        "else the topology that is up, else `default`")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("plan", help="validate, render host bundles, print the Vagrant plan")
    s.add_argument("--profile", default="default")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_plan)

    topo = sub.add_parser("topology", help="inspect topologies").add_subparsers(dest="sub", required=True)
    s = topo.add_parser("show", help="print the plan: VMs, addresses, roles, RAM")
    s.add_argument("--no-ram-check", action="store_true", help="do not compare with the host's free RAM")
    s.set_defaults(func=cmd_topology_show)

    box = sub.add_parser("box", help="the guest box").add_subparsers(dest="sub", required=True)
    s = box.add_parser("build", help="build the box if its recipe changed, and add it to Vagrant")
    s.add_argument("--kind", default="debian13")
    s.add_argument("--mirror", default=None)
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_box_build)

    s = sub.add_parser("up", help="bring the site up and wait until it is healthy")
    s.add_argument("--profile", default="default")
    s.add_argument("--serial", action="store_true", help="boot one VM at a time")
    s.set_defaults(func=cmd_up)

    s = sub.add_parser("down", help="destroy the site's VMs and networks")
    s.set_defaults(func=cmd_down)

    s = sub.add_parser("provision", help="re-render and re-apply host config on the running site, "
                                         "all hosts in parallel (after editing templates or scripts)")
    s.add_argument("hosts", nargs="*", help="default: every host")
    s.add_argument("--profile", default=None, help="default: the profile in force")
    s.set_defaults(func=cmd_provision)

    s = sub.add_parser("ssh", help="log in to a VM, or run a command there")
    s.add_argument("host")
    s.add_argument("command", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_ssh)

    s = sub.add_parser("test", help="unit tests, then the end-to-end smoke on the small topology")
    s.add_argument("--unit-only", action="store_true")
    s.add_argument("--keep", action="store_true", help="leave the small site up afterwards")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("demo", help="bring up the site (default topology), run E1 quick, compare with the paper")
    s.set_defaults(func=cmd_demo)


    prof = sub.add_parser("profile", help="tuning profiles").add_subparsers(dest="sub", required=True)
    s = prof.add_parser("show", help="every value a profile sets, per role")
    s.add_argument("name")
    s.set_defaults(func=cmd_profile_show)
    s = prof.add_parser("diff", help="the values where two profiles differ")
    s.add_argument("a")
    s.add_argument("b")
    s.set_defaults(func=cmd_profile_diff)
    s = prof.add_parser("apply", help="apply a profile to the running site, read it back, record it")
    s.add_argument("name")
    s.set_defaults(func=cmd_profile_apply)

    w = sub.add_parser("wan", help="emulated WAN links (netem)").add_subparsers(dest="sub", required=True)
    s = w.add_parser("set", help="set links, e.g. submit:worker:40ms[:jitter=1ms][:loss=0.1%%][:rate=1000mbit]")
    s.add_argument("links", nargs="+", metavar="A:B:RTT")
    s.set_defaults(func=cmd_wan_set)
    s = w.add_parser("show", help="the links in force and their measured RTT")
    s.add_argument("--qdiscs", action="store_true", help="also print each host's tc qdiscs")
    s.set_defaults(func=cmd_wan_show)
    s = w.add_parser("clear", help="remove all WAN emulation")
    s.set_defaults(func=cmd_wan_clear)

    s = sub.add_parser("run", help="run an experiment suite into a new results folder")
    s.add_argument("suite", help="smoke, e1, e2")
    s.add_argument("--profile", action="append", default=None,
                   help="profile to compare (repeat for a sweep; default: default)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="suite parameter, e.g. rtts=0,20,40 (repeatable)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="minutes; what CI runs (the default)")
    g.add_argument("--full", action="store_true", help="the paper's shape, scaled to the testbed")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("compare", help="table + HTML report of one or more runs")
    s.add_argument("runs", nargs="*", metavar="RUN", help="results folder, its name, or latest[-SUITE]")
    s.add_argument("--against", choices=["paper"], help="put the papers' published figures beside")
    s.add_argument("--html", default=None, help="where to write the report")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("status", help="one table: VMs, daemons, HA, CCB, slots, XRootD, RAID")
    s.add_argument("--json", action="store_true")
    s.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                   help="wait up to SECONDS for the site to become healthy")
    s.set_defaults(func=cmd_status)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130
