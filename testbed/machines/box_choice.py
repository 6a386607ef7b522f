"""Which box a site boots: its topology's `box:`, or the one `testbed up --box SPEC` chose.

`up --box` records its choice in the site's state folder (`box-in-force`), so that every
later verb on that site (the plan the Vagrantfile reads, `provision`, `run`) sees the same
box, until `down` forgets it. A site whose VMs exist keeps the box they were made from:
choosing another one then is an error naming `down`."""
import json

from testbed.machines import domains, plan
from testbed.machines.patched_box import box_for
from testbed.model import boxspec
from testbed.model.errors import TestbedError

RECORD = "box-in-force"


def apply_recorded(site):
    """The site (testbed.remote.site.Site), its topology given the box `up --box` recorded
    for it, if any."""
    path = site.state.dir / RECORD
    if path.exists():
        spec = boxspec.parse(path.read_text().strip(), path)
        site.topo.box, site.topo.box_patches, site.topo.box_release = spec.kind, spec.patches, spec.release
    return site


def booted_box(site):
    """The box name in the plan the site's VMs were made from (None: no plan)."""
    try:
        return json.loads(plan.plan_path(site.state).read_text())["box"]["name"]
    except (OSError, ValueError, KeyError):
        return None


def choose(site, text, exists=None, record=True):
    """`up --box TEXT`: check it, refuse it if the site's VMs exist from another box, record
    it for the site (not for `up --dry-run`: `record` False) and apply it to the site's topology."""
    topo = site.topo
    spec = boxspec.parse(text, "--box")
    wanted = box_for(spec).name
    exists = exists or (lambda: any(domains.state(topo, h.name) for h in topo.vm_hosts))
    made = booted_box(site)
    if made and made != wanted and exists():
        raise TestbedError(f"--box {text}: the VMs of {topo.name} were made from box {made}; "
                           f"`testbed -t {topo.name} down` first")
    if record:
        site.state.ensure_dirs()
        (site.state.dir / RECORD).write_text(str(spec) + "\n")
    topo.box, topo.box_patches, topo.box_release = spec.kind, spec.patches, spec.release
    return spec


def forget(site):
    (site.state.dir / RECORD).unlink(missing_ok=True)
