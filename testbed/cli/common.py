"""What every verb group needs: the topology and profile named on the command line, its site
(and what is left of it after an interruption), and when `./tb` started the command."""
import os
import sys

from testbed.model.errors import TestbedError


def tb_started(env=None):
    """When `./tb` started (its TB_STARTED: epoch seconds, as `date +%s` writes them), or None
    for a command `./tb` did not start or a value that is not such a number."""
    env = os.environ if env is None else env
    started = env.get("TB_STARTED") or ""
    return float(started) if started.replace(".", "", 1).isdigit() else None


def _site(args, change=None, running=True):
    """The site (testbed.remote.site.Site) of --topology, else $TESTBED_TOPOLOGY, else the
    topology that is up, else `default`; with the box `up --box` chose for it, if any.
    `running`: refused unless it was brought up in this checkout. `change` names a command
    that changes or measures the site (`profile apply`): it holds the site until it ends,
    and is refused while another such command holds it."""
    from testbed.machines import box_choice, lifecycle
    from testbed.model import topology
    from testbed.remote.site import Site
    name = args.topology or os.environ.get("TESTBED_TOPOLOGY") or lifecycle.active_topology() or "default"
    site = box_choice.apply_recorded(Site(topology.load(name)))
    if change:
        return held(site, change)
    if running:
        refuse_unless_up(site)
    return site


def refuse_unless_up(site):
    why = not_up(site)
    if why:
        raise TestbedError(why)


def held(site, change):
    """The site, up in this checkout, held for the command `change` until it ends (refused
    while another such command holds it)."""
    from testbed.model import site_lock
    refuse_unless_up(site)
    site_lock.hold(site.state, change)
    return site


def not_up(site):
    """Why the site is not up in this checkout ("" when it is): `down` keeps the state folder
    (its keys and snapshots) but not the record of the topology that is up, so the folder
    alone says nothing."""
    from testbed.machines import lifecycle
    up_here = lifecycle.active_topology()
    if up_here == site.name and site.state.ssh_key.exists():
        return ""
    # a site parked by `down` is not up either: `up` brings it back warm
    return (f"site {site.name} is not up in this checkout ({f'topology {up_here} is' if up_here else 'nothing is'}); "
            f"`testbed -t {site.name} up` first")


def _profile(name):
    from testbed.model import scaled_profiles
    return scaled_profiles.load(name)


def report_vms_left(topo, out=None):
    """After an interruption: which VMs of `topo` exist and in which state, and how to take
    them down (or that none is left). Returns {domain: state}."""
    from testbed.machines import domains
    out = out or (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        left = {domains.domain_name(topo, h): domains.state(topo, h) for h in topo.hosts}
    except (OSError, TestbedError) as exc:
        out(f"testbed: could not ask libvirt which VMs of {topo.name} are up ({exc}); "
            f"`./tb -t {topo.name} status`, then `./tb -t {topo.name} down`")
        return {}
    left = {name: st for name, st in left.items() if st}
    if not left:
        out(f"testbed: no VM of topology {topo.name} is left")
        return left
    out(f"testbed: topology {topo.name} is (partly) up: {len(left)} of {len(topo.hosts)} VMs: "
        + ", ".join(f"{name} ({st})" for name, st in sorted(left.items())))
    out(f"testbed: take it down with `./tb -t {topo.name} down`")
    return left
