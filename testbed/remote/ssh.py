"""Run commands on the testbed's VMs over SSH (site network, per-testbed key)."""
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from testbed.model.errors import RemoteError
from testbed.model.state import TestbedState


@dataclass
class Result:
    host: str
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self):
        return self.rc == 0


class SSH:
    """Runs commands as root on a topology's hosts. Unit tests replace `_run`."""

    def __init__(self, topo, state=None, timeout=120, addresses=None, extra_keys=()):
        """`addresses` {host: ip} overrides the site address (provisioning reaches a new
        guest on its management address); `extra_keys` are offered after the testbed's
        key (Vagrant's well-known key, until provisioning replaces it)."""
        self.topo = topo
        self.state = state or TestbedState(topo.name)
        self.timeout = timeout
        self.addresses = dict(addresses or {})
        self.extra_keys = list(extra_keys)

    def argv(self, host, interactive=False):
        ip = self.addresses.get(host) or self.topo.hosts[host].site_ip
        control = self.state.dir / "ssh" / (f"cm-{host}" if host not in self.addresses else f"cm-{host}-mgmt")
        keys = [a for k in [self.state.ssh_key, *self.extra_keys] for a in ("-i", str(k))]
        opts = keys + ["-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=15",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={control}",
                "-o", "ControlPersist=120"]
        if not interactive:
            opts += ["-o", "BatchMode=yes"]
        return ["ssh"] + opts + [f"vagrant@{ip}"]

    def _run(self, host, command, input_bytes=None, timeout=None):
        argv = self.argv(host) + ["sudo", "-n", "bash", "-c", shlex.quote(command)]
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
        if check and not result.ok:
            detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise RemoteError(f"{host}: `{command[:80]}` failed (rc {result.rc}): "
                              f"{detail[-1] if detail else 'no output'}")
        return result

    def run_many(self, commands, check=False, timeout=None):
        """{host: command} in parallel -> {host: Result}."""
        with ThreadPoolExecutor(max_workers=max(1, len(commands))) as pool:
            futures = {h: pool.submit(self.run, h, c, check, None, timeout) for h, c in commands.items()}
            return {h: f.result() for h, f in futures.items()}
