"""`testbed` command line. Every error is one line and exit code 2."""
import argparse
import json
import os
import sys

from testbed import PROJECT_ROOT
from testbed.errors import TestbedError


def _topology(args):
    from testbed import topology
    return topology.load(args.topology)


def _profile(name):
    from testbed import profiles
    return profiles.load(name)


def cmd_plan(args):
    from testbed import plan
    data = plan.build(_topology(args), _profile(args.profile))
    if args.json:
        print(json.dumps(data))
    else:
        for h in data["hosts"]:
            print(h["name"], h["site_ip"], ",".join(h["roles"]))
    return 0


def cmd_topology_show(args):
    from testbed import topology, tables
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
    from testbed.box import Box
    box = Box(args.kind)
    seconds = box.build(mirror=args.mirror, force=args.force)
    print(f"box {box.name} ready in {seconds:.0f} s ({box.dir})")
    return 0


def cmd_up(args):
    from testbed import site
    return site.up(_topology(args), _profile(args.profile), parallel=not args.serial)


def cmd_down(args):
    from testbed import site
    return site.down(_topology(args))


def cmd_ssh(args):
    from testbed import site
    topo = _topology(args)
    return site.ssh_interactive(topo, args.host, args.command)


def cmd_status(args):
    from testbed import health
    topo = _topology(args)
    if args.wait:
        from testbed.errors import TestbedError
        from testbed.ssh import SSH
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


def _run(argv):
    import subprocess
    print("$ " + " ".join(argv), flush=True)
    return subprocess.call(argv, cwd=PROJECT_ROOT)


def _results_dir(suite, profile="default"):
    import time
    return PROJECT_ROOT / "results" / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{suite}-{profile}"


def _robot(suite, topo_name, outdir):
    return _run([sys.executable, "-m", "robot", "--outputdir", str(outdir), "--variable",
                 f"TOPOLOGY:{topo_name}", "--consolewidth", "100", str(PROJECT_ROOT / "robot" / "suites" / suite)])


def cmd_test(args):
    """Unit tests, then the end-to-end smoke: bring up `small`, run the smoke suite, tear down."""
    from testbed import site, topology
    rc = _run([sys.executable, "-m", "pytest", "-q", str(PROJECT_ROOT / "tests")])
    if rc != 0 or args.unit_only:
        return rc
    topo = topology.load("small")
    outdir = _results_dir("smoke")
    try:
        site.up(topo, _profile("default"))
        rc = _robot("smoke.robot", topo.name, outdir)
    finally:
        if not args.keep:
            site.down(topo)
    print(f"smoke: {'PASS' if rc == 0 else 'FAIL'}; Robot output in {outdir}")
    return rc


def cmd_demo(args):
    """Bring up the default site and run the end-to-end checks on it."""
    from testbed import site
    topo = _topology(args)
    site.up(topo, _profile("default"))
    return _robot("smoke.robot", topo.name, _results_dir("smoke"))


def build_parser():
    p = argparse.ArgumentParser(prog="testbed", description=__doc__)
    p.add_argument("--topology", "-t", default=os.environ.get("TESTBED_TOPOLOGY", "default"),
                   help="topology name (topologies/NAME.yaml) or path; env TESTBED_TOPOLOGY")
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

    s = sub.add_parser("ssh", help="log in to a VM, or run a command there")
    s.add_argument("host")
    s.add_argument("command", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_ssh)

    s = sub.add_parser("test", help="unit tests, then the end-to-end smoke on the small topology")
    s.add_argument("--unit-only", action="store_true")
    s.add_argument("--keep", action="store_true", help="leave the small site up afterwards")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("demo", help="bring up the site (default topology) and check it end to end")
    s.set_defaults(func=cmd_demo)

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
