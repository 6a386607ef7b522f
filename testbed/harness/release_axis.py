"""The release axis of `testbed run --box A --box B` (the same run on each box in turn): its
boxes, checked before a site moves, and the site moved onto each one, only when it runs
another (taken down first when it is up); the last site stays up, as after any run."""
from testbed.machines import box_choice, lifecycle, patched_box
from testbed.model import boxspec, scaled_profiles
from testbed.model.errors import TestbedError
from testbed.services import health


def box_specs(texts, from_snapshot):
    """The boxes of `run --box A --box B`, parsed; refused when one is named twice."""
    specs = [boxspec.parse(text, "--box") for text in texts]
    if len({str(s) for s in specs}) != len(specs):
        raise TestbedError(f"--box: a box is named twice ({', '.join(texts)})")
    if specs and from_snapshot:
        raise TestbedError("--box and --from-snapshot do not go together: a snapshot belongs to one box's site")
    return specs


def bring_up_on(site, spec, label, echo=print):
    """The site brought up on box `spec`: kept when it runs it already, else taken down first
    when it is up; raises unless healthy."""
    up_here = lifecycle.active_topology() == site.name
    if up_here and box_choice.booted_box(site) == patched_box.box_for(spec).name:
        echo(f"{label}: the site of {site.name} runs it already")
        return
    if up_here:
        echo(f"{label}: taking {site.name} down (it runs {box_choice.booted_box(site)})")
        lifecycle.down(site)   # up's box choice replaces the box down leaves in the topology
    echo(f"{label}: bringing {site.name} up on it")
    lifecycle.up(site, scaled_profiles.load("default"), health, box=str(spec))
