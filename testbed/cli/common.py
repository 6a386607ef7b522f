"""What every verb group needs: the topology and profile named on the command line, a running site."""
import os

from testbed.model.errors import TestbedError

def _topology(args):
    """--topology, else $TESTBED_TOPOLOGY, else the topology that is up, else `default`; with
    the box `up --box` chose for its site, if any."""
    from testbed.machines import box_choice, lifecycle
    from testbed.model import topology
    name = args.topology or os.environ.get("TESTBED_TOPOLOGY") or lifecycle.active_topology() or "default"
    return box_choice.apply_recorded(topology.load(name))


def _profile(name):
    from testbed.model import scaled_profiles
    return scaled_profiles.load(name)


def _site(args, change=None):
    """The running site of the command line's topology: (topology, SSH, state). `change`
    names a command that changes or measures the site (`profile apply`): it holds the site
    until it ends, and is refused while another such command holds it."""
    from testbed.remote.ssh import SSH
    from testbed.model import site_lock
    from testbed.model.state import TestbedState
    topo = _topology(args)
    state = TestbedState(topo.name)
    if not state.ssh_key.exists():
        raise TestbedError(f"{state.dir}: no testbed {topo.name} here; `testbed -t {topo.name} up` first")
    if change:
        site_lock.hold(state, change)
    return topo, SSH(topo, state), state
