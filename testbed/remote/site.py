"""The site: one topology in this checkout, its state folder and SSH to its hosts."""
from testbed.model.state import TestbedState
from testbed.remote.ssh import SSH


class Site:
    """A topology in this checkout. `state` (its folder: SSH key, secrets, records) is built
    once, and `ssh()` reaches the hosts with that folder's key and pinned host keys, so
    whatever a command hands the site to reads and writes the same files."""

    def __init__(self, topo, root=None):
        self.topo = topo
        self.state = TestbedState(topo.name, root)

    @property
    def name(self):
        return self.topo.name

    def ssh(self, timeout=120, **kw):
        """SSH to the site's hosts; `kw` as SSH takes them (a new guest's address, Vagrant's key)."""
        return SSH(self.topo, self.state, timeout=timeout, **kw)
