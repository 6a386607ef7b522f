"""Verbs for the site itself: plan, topology, box, up, down, provision, ssh, status."""
import json
import os
import sys

from testbed.cli.common import _profile, _site, not_up, report_vms_left
from testbed.model.errors import TestbedError

def cmd_plan(args):
    from testbed.machines import plan
    from testbed.machines.patched_box import box_for
    if args.for_run:
        return plan_capacity(args)
    site = _site(args, running=False)
    box = box_for(site.topo.box_spec)
    if args.write:
        path, data = plan.write(site.topo, _profile(args.profile), site.state, box=box)
        print(f"plan written to {path}", file=sys.stderr)
    else:
        data = plan.build(site.topo, _profile(args.profile), site.state, box=box)
    if args.json:
        print(json.dumps(data))
    else:
        for h in data["hosts"]:
            print(h["name"], h["site_ip"], ",".join(h["roles"]),
                  *([h["hypervisor"]["name"]] if h.get("hypervisor") else []))
    return 0


def plan_capacity(args):
    """`plan --for EXPERIMENT:SCALE`: the hosts a run needs and the topology to write."""
    from testbed.harness import capacity, runner
    from testbed.model import tables
    p = capacity.plan(args.for_run, args.host_memory_mb, args.host_cpus, runner.parse_sets(args.set))
    print(f"{p.experiment} at {p.scale}: {p.hosts} hosts, {p.memory_mb} MB RAM, {p.cpus} cores, "
          f"{p.disk_gb} GB disk in all (hosts of at most {p.host_mb} MB and {p.host_cpus} cores)")
    print(tables.render(["hosts", "roles", "count", "RAM MB", "cores", "disk GB", "why"], capacity.table_rows(p)))
    for note in p.notes:
        print(f"note: {note}")
    print()
    print(capacity.skeleton(p), end="")
    return 0


def cmd_topology_show(args):
    from testbed.model import topology
    topo = _site(args, running=False).topo
    if not args.no_ram_check:
        topology.check_fits(topo)
    print("\n".join(topology.show_lines(topo)))
    return 0


def cmd_box_build(args):
    from testbed.machines.box import Box
    if args.patch:
        from testbed.machines.patched_box import PatchedBox
        if args.kind != "debian13":
            raise TestbedError(f"box build --patch: patches apply to the debian13 box, not {args.kind}")
        box = PatchedBox(args.patch, mirror=args.mirror)
        seconds = box.build(mirror=args.mirror, force=args.force)
        recipe = box.recipe()
        timings = ", ".join(f"{k} {v:g} s" for k, v in recipe.get("timings_s", {}).items())
        spec = "debian13" + "".join(f"+patch:{p.name}" for p in box.patches)
        print(f"box {box.name} ready in {seconds:.0f} s ({box.dir}; its build {recipe.get('built')}: {timings}); "
              f"a site boots it with `box: {spec}` in its topology or `testbed up --box {spec}`")
        return 0
    release = None
    if args.release:
        from testbed.model import boxspec
        release = boxspec.parse(f"{args.kind}+release:{args.release}", "testbed box build", "--release").release
    box = Box(args.kind, release=release)
    seconds = box.build(mirror=args.mirror, force=args.force)
    print(f"box {box.name} ready in {seconds:.0f} s ({box.dir})"
          + (f"; a site boots it with `box: {args.kind}+release:{args.release}` in its topology or "
             f"`testbed up --box {args.kind}+release:{args.release}`" if release else ""))
    return 0


def cmd_up(args):
    from testbed.machines import lifecycle
    from testbed.services import health
    site = _site(args, running=False)
    try:
        return lifecycle.up(site, _profile(args.profile), health, parallel=not args.serial,
                            dry_run=args.dry_run, box=args.box, cold=getattr(args, "cold", False))
    except KeyboardInterrupt:  # the VMs booted so far stay: say which, and how to remove them
        report_vms_left(site.topo)
        raise


def cmd_down(args):
    from testbed.machines import lifecycle
    return lifecycle.down(_site(args, running=False))


def cmd_host_changes(args):
    from testbed.machines import host_ledger
    from testbed.model import tables
    found = host_ledger.changes()
    if not found:
        print(f"the project has made no change to this machine outside its folders ({host_ledger.path()} is empty)")
        return 0
    print(tables.render(["kind", "what", "change"], [[c.kind, c.what, c.describe()] for c in found]))
    print(f"{len(found)} change(s), in the order made ({host_ledger.path()}); `testbed host undo` undoes them")
    return 0


def cmd_host_undo(args):
    from testbed.machines import box, domains, host_ledger
    up = domains.testbed_domains()
    if up:
        raise TestbedError(f"testbed host undo: the testbed's VMs {', '.join(up)} still exist; "
                           f"take their sites down first (`./tb -t TOPOLOGY down`)")
    if not host_ledger.changes():
        print("testbed host undo: nothing to undo (the ledger is empty)")
        return 0
    failed = host_ledger.undo(box.remove_box)
    if failed:
        raise TestbedError(f"testbed host undo: {len(failed)} change(s) not undone (listed above; "
                           f"kept in {host_ledger.path()})")
    print("testbed host undo: every change undone; the next ./tb sets this machine up again")
    return 0


def cmd_box_knobs(args):
    """The running site's release record beside the kept ones; with --keep, kept."""
    from testbed.machines import box_choice
    from testbed.model import tables
    from testbed.results import release_record
    from testbed.services import release_knobs
    site = _site(args)
    record = release_knobs.collect(site.topo, site.ssh())
    others = [r for r in release_record.load_all()
              if r.get("versions", {}).get("condor") != record["versions"].get("condor")]
    name = release_record.release_name(record["versions"])
    print(f"{name}: {len(record['defaults'])} knobs the testbed sets, "
          f"{sum(v is None for v in record['defaults'].values())} without a default of the release")
    for other in others:
        diffs = release_record.differences([other, record])
        print(f"\nbeside {release_record.release_name(other.get('versions'))}: {len(diffs)} defaults differ")
        if diffs:
            print(tables.render(["knob", "kept", "this site", "set by"],
                                [[k, d[0], d[1], ", ".join(w)] for k, d, w, _ in diffs]))
    lines = [line for lines in record["xrootd_lines"].values() for line in lines]
    print(f"\nXRootD's lines on the rendered configuration: {len(lines)}" + "".join(f"\n  {x}" for x in lines))
    if args.keep:
        print(f"kept: {release_record.keep(record, box_choice.booted_box(site) or site.topo.box)}")
    return 0


def cmd_provision(args):
    """Apply edited templates or role scripts to a running site, every host in parallel."""
    from testbed.machines import provision as provisioning
    from testbed.remote import profile_record
    site = _site(args, change="provision")
    profile = (_profile(args.profile) if args.profile else
               profile_record.recorded_profile(site.state) or _profile("default"))
    seconds = provisioning.provision(site, profile, args.hosts or None)
    print(f"provisioned in {seconds:.0f} s; `testbed status --wait 600` to see the site healthy again")
    return 0


def cmd_ssh(args):
    from testbed.machines import lifecycle
    return lifecycle.ssh_interactive(_site(args, running=False), args.host, args.command)


def cmd_status(args):
    from testbed.machines import quiesce
    from testbed.services import health
    site = _site(args, running=False)
    why = not_up(site)
    if why:  # nothing to probe: every host would time out one by one
        print(f"testbed: {why}", file=sys.stderr)
        return 1
    topo, ssh = site.topo, site.ssh(timeout=40)
    paused = quiesce.paused_now(site.state)  # by a `testbed run` going on: listed, not probed
    if args.wait:
        from testbed.model.errors import TestbedError
        try:
            report = health.wait_healthy(topo, ssh, timeout=args.wait,
                                         echo=lambda line: print(line, file=sys.stderr), skip=paused)
        except TestbedError as exc:
            print(f"testbed: {str(exc).splitlines()[0]}", file=sys.stderr)
            report = health.collect(topo, ssh, skip=paused)
    else:
        report = health.collect(topo, ssh, skip=paused)
    from testbed.machines import hostload
    report["host_load"] = hostload.usage(topo, window=args.load_window) if args.load_window > 0 else {}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(health.format_report(report))
        load = report["host_load"]
        if len(load) > 1:
            from testbed.model import tables
            print(tables.render(["VM", "qemu RSS MB", "CPU % of a core"],
                                [[h, v["rss_mb"], v["cpu_pct"]] for h, v in load.items() if h != "total"]))
            print(f"host cost of the site over {args.load_window:g} s: {load['total']['cpu_pct']}% of all "
                  f"{os.cpu_count()} cores, {load['total']['rss_mb']} MB resident")
    return 0 if report["healthy"] else 1


def cmd_snapshot_save(args):
    from testbed.machines import snapshots
    from testbed.remote import profile_record
    from testbed.services import health
    site = _site(args, change="snapshot save")
    snapshots.check_snapshottable(site.topo)
    report = health.collect(site.topo, site.ssh())
    if not report["healthy"]:
        raise TestbedError(f"site {site.name} is not healthy ({report['problems'][0]}); "
                           "snapshots are taken of a healthy site")
    prof = profile_record.recorded_profile(site.state)
    snapshots.save(site, args.name, prof.name if prof else "default")
    return 0


def cmd_snapshot_restore(args):
    from testbed.machines import snapshots
    from testbed.services import health
    site = _site(args, change="snapshot restore")
    snapshots.restore(site, args.name, site.ssh(), health=health)
    return 0


def cmd_snapshot_list(args):
    from testbed.machines import snapshots
    from testbed.model import tables
    site = _site(args)
    rows = [[r.get("name"), r.get("created", "?"), r.get("profile", "?"), r.get("provisioning", "?"),
             r.get("disk_mb", "?"), r.get("seconds", "?")] for r in snapshots.records(site)]
    if not rows:
        print(f"no snapshots of {site.name}")
        return 0
    print(tables.render(["snapshot", "created (UTC)", "profile", "provisioning", "disk MB", "save s"], rows))
    return 0


def cmd_snapshot_delete(args):
    from testbed.machines import snapshots
    snapshots.delete(_site(args, change="snapshot delete"), args.name)
    return 0
