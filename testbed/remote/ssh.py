"""Run commands on the testbed's hosts over SSH: a VM on the site network with the
per-testbed key as `vagrant`, its host key pinned when it is provisioned and checked on
every connection; an existing host (topology `existing:`) at its own address as its own
user with its own key, its host key remembered on first contact."""
import shlex
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from testbed.model.errors import GuestDown, RemoteError
from testbed.remote import console


# ssh's own failure (no connection, the connection lost) and this module's time-out
UNREACHED = (255, 124)
# what ssh prints when it never reached the remote shell: the command did not start, so
# running it again cannot run it twice (a guest under TCG that has just booted can be too
# slow to send sshd's banner within ConnectTimeout)
NOT_CONNECTED = ("during banner exchange", "kex_exchange_identification", "Connection refused",
                 "Connection timed out", "Connection reset by peer", "No route to host")

# what ssh prints when the host key differs from the one pinned
KEY_CHANGED = ("REMOTE HOST IDENTIFICATION HAS CHANGED", "Host key verification failed")
_pins = threading.Lock()


def guest_known_hosts(state):
    """The pinned host keys of a testbed's VMs, one line per VM under its alias."""
    return state.dir / "ssh" / "guest_known_hosts"


def key_alias(topo, host):
    """The name a VM's host key is pinned under, whichever address reaches it."""
    return f"{topo.name}-{host}"


def forget_host_key(state, topo, host):
    """Drop a VM's pinned key, so that its next connection pins the key the guest has now:
    provisioning does this (a VM created again, by `up` or by plain Vagrant, has a new key
    from its first boot)."""
    path, alias = guest_known_hosts(state), key_alias(topo, host)
    with _pins:
        if path.exists():
            path.write_text("".join(l for l in path.read_text().splitlines(keepends=True)
                                    if l.split(" ", 1)[0] != alias))


@dataclass
class Result:
    host: str
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self):
        return self.rc == 0

    @property
    def never_connected(self):
        """ssh failed before the remote command started (see NOT_CONNECTED)."""
        return self.rc == 255 and any(text in self.stderr for text in NOT_CONNECTED)


class SSH:
    """Runs commands as root on a topology's hosts with the key and the pinned host keys in
    `state`, the topology's TestbedState (a Site, remote/site.py, hands out SSH bound to its
    own). Unit tests replace `_run`."""

    def __init__(self, topo, state, timeout=120, addresses=None, extra_keys=(), proxies=None):
        """`addresses` {host: ip} overrides the site address (provisioning reaches a new
        guest on its management address); `extra_keys` are offered after the testbed's
        key (Vagrant's well-known key, until provisioning replaces it); `proxies` {host:
        ProxyCommand} reach such an address through the guest's hypervisor (a management
        network is host-only on each hypervisor)."""
        self.topo = topo
        self.state = state
        self.timeout = timeout
        self.addresses = dict(addresses or {})
        self.extra_keys = list(extra_keys)
        self.proxies = dict(proxies or {})

    def existing(self, host):
        """The host's `existing:` spec when it is an existing host reached at its own address."""
        spec = self.topo.hosts[host].existing
        return spec if spec and host not in self.addresses else None

    def known_hosts(self):
        return self.state.dir / "ssh" / "known_hosts"

    def argv(self, host, interactive=False):
        spec = self.existing(host)
        control = self._control(host, mgmt=host in self.addresses)
        if spec:
            # a machine of the user's: only its own key, and its host key checked after the first login
            opts = ["-i", str(spec.key), "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=accept-new",
                    "-o", f"UserKnownHostsFile={self.known_hosts()}"]
            target = spec.target
        else:
            ip = self.addresses.get(host) or self.topo.hosts[host].site_ip
            opts = [a for k in [self.state.ssh_key, *self.extra_keys] for a in ("-i", str(k))]
            # the key of the guest's first connection after provisioning forgot the old one
            # is pinned; any other key is refused (run() names the VM)
            opts += ["-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={guest_known_hosts(self.state)}",
                     "-o", f"HostKeyAlias={key_alias(self.topo, host)}"]
            if host in self.addresses and self.proxies.get(host):
                opts += ["-o", f"ProxyCommand={self.proxies[host]}"]
            target = f"vagrant@{ip}"
        opts += ["-o", "LogLevel=ERROR",
                 "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=15",
                 "-o", "ControlMaster=auto", "-o", f"ControlPath={control}",
                 "-o", "ControlPersist=120"]
        if not interactive:
            opts += ["-o", "BatchMode=yes"]
        return ["ssh"] + opts + [target]

    def _control(self, host, mgmt=False):
        """The socket of the host's SSH master connection (one per address it is reached at)."""
        return self.state.dir / "ssh" / (f"cm-{host}-mgmt" if mgmt else f"cm-{host}")

    def close_masters(self):
        """End the master connections to every host. A guest reverted to a snapshot, or gone,
        no longer shares a master's TCP and cipher state: a command sent through it hangs
        until ServerAliveInterval x 3 gives up, so they are closed first."""
        for host in self.topo.hosts:
            for control in (self._control(host), self._control(host, mgmt=True)):
                if control.exists():
                    try:
                        subprocess.run(["ssh", "-o", f"ControlPath={control}", "-O", "exit", "master"],
                                       capture_output=True, timeout=10)
                    except subprocess.TimeoutExpired:
                        pass   # a master that does not answer is left to its own ServerAlive end
                    control.unlink(missing_ok=True)

    def root_prefix(self, host):
        """What runs a command as root: sudo without a password, unless the login is root."""
        spec = self.existing(host)
        return [] if spec and spec.user == "root" else ["sudo", "-n"]

    def _run(self, host, command, input_bytes=None, timeout=None):
        argv = self.argv(host) + self.root_prefix(host) + ["bash", "-c", shlex.quote(command)]
        try:
            proc = subprocess.run(argv, input=input_bytes, capture_output=True,
                                  timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired:
            return Result(host, 124, "", f"timed out after {timeout or self.timeout}s")
        return Result(host, proc.returncode, proc.stdout.decode(errors="replace"),
                      proc.stderr.decode(errors="replace"))

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        if host not in self.topo.hosts:
            raise RemoteError(f"{self.topo.source}: hosts: no host {host!r} in topology {self.topo.name}")
        result = self._run(host, command, input_bytes, timeout)
        if result.rc in UNREACHED:
            self.check_alive(host)
        if result.rc == 255 and not self.existing(host) and any(t in result.stderr for t in KEY_CHANGED):
            raise RemoteError(f"{host}: its SSH host key is not the one pinned when it was provisioned "
                              f"({guest_known_hosts(self.state)}, {key_alias(self.topo, host)}); if the VM was created "
                              f"again outside the testbed, `testbed -t {self.topo.name} provision {host}` pins its new key")
        if check and not result.ok:
            detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise RemoteError(f"{host}: `{command[:80]}` failed (rc {result.rc}): "
                              f"{detail[-1] if detail else 'no output'}")
        return result

    def check_alive(self, host):
        """GuestDown when the guest's console tells that its kernel died since it booted (a
        VM of this machine; another hypervisor's console is not read here)."""
        if self.existing(host):
            return
        log = console.console_log(self.topo.name, host)
        died = console.kernel_death(log)
        if died:
            raise GuestDown(f"{host}: the guest's kernel died and it no longer answers: {died!r} "
                            f"(console: {log})")

    def run_many(self, commands, check=False, timeout=None):
        """{host: command} in parallel -> {host: Result}."""
        with ThreadPoolExecutor(max_workers=max(1, len(commands))) as pool:
            futures = {h: pool.submit(self.run, h, c, check, None, timeout) for h, c in commands.items()}
            return {h: f.result() for h, f in futures.items()}
