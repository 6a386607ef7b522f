"""Provision hosts over SSH, all at once: the one provisioning path for `up`,
plain `vagrant up` (its trigger calls `testbed provision HOST`) and re-provisioning.
An existing host goes the same way, after provision/existing/prepare.sh has recorded
and made the changes only it needs (testbed/machines/ledger.py)."""
import shlex
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from testbed import PROJECT_ROOT
from testbed.model.errors import TestbedError
from testbed.remote.ssh import forget_host_key


def provision(site, profile, hosts=None, ssh=None, accelerator=None, bundles=None):
    """Re-render every host's bundle and apply it over SSH, all hosts of the site
    (testbed.remote.site.Site) at once (`vagrant provision` does one host after another).
    Idempotent: unchanged config restarts nothing. `bundles` {host: tarball}: already
    rendered (by the plan `up` just wrote)."""
    names = hosts or list(site.topo.hosts)
    for name in names:
        check_host(site.topo, name)
    print(f"provisioning {', '.join(names)} with profile {profile.name}", flush=True)
    with Provisioner(site, profile, accelerator=accelerator, bundles=bundles, ssh=ssh) as work:
        for name in names:
            work.add(name)
        return work.finish()


class Provisioner:
    """Provisions hosts over SSH, each in its own thread, as they are `add`ed: `up` adds a
    guest the moment Vagrant has reached it, so the first guests are provisioned while the
    later ones still boot. `finish` waits for all, raises if any failed, and leaves each
    host's seconds (since the Provisioner began) in `last_run`."""

    def __init__(self, site, profile, accelerator=None, bundles=None, ssh=None, started=None):
        from testbed.machines import ledger, packages, plan, render
        self.site, self.topo, self.state = site, site.topo, site.state
        self.profile, self.ssh = profile, ssh
        if bundles is None:
            bundles = render.write_all(self.state, self.topo, profile, accelerator or plan.recorded_accel(self.state))
        self.bundles = bundles
        apply_sh = (PROJECT_ROOT / "provision" / "apply.sh").read_text()
        install = " && ".join(packages.install_commands(self.topo.box))  # el9 only; the Debian box has all
        self.command = ((f"{install} && " if install else "")
                        + "f=$(mktemp /tmp/testbed-provision.XXXXXX) && cat > \"$f\" && "
                        f"bash -c {shlex.quote(apply_sh)} apply \"$f\"; rc=$?; rm -f \"$f\"; exit $rc")
        self.existing_command = ledger.provision_command(apply_sh)
        self.started = started if started is not None else time.monotonic()
        self.pool = ThreadPoolExecutor(max_workers=len(self.topo.hosts))
        self.futures = {}
        self.lock = threading.Lock()
        last_run.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_exc):
        # after an interrupt or a failure, hosts not started are not provisioned, and nothing
        # waits for those under way (their ssh ends with the Ctrl-C of the process group)
        self.pool.shutdown(wait=exc_type is None, cancel_futures=exc_type is not None)

    def add(self, name):
        with self.lock:
            if name not in self.futures:
                self.futures[name] = self.pool.submit(self._one, name)

    def command_for(self, name):
        """What provisions this host: apply.sh, preceded on an existing host by prepare.sh."""
        return self.existing_command if self.topo.hosts[name].existing else self.command

    def _one(self, name):
        ssh = self.ssh or first_contact_ssh(self.site, [name])
        if not self.topo.hosts[name].existing:
            forget_host_key(self.state, self.topo, name)  # provisioning pins the key the guest has now
        for attempt in range(1, CONNECT_ATTEMPTS + 1):
            result = ssh.run(name, self.command_for(name), False, self.bundles[name].read_bytes())
            if not result.never_connected or attempt == CONNECT_ATTEMPTS:
                break
            print(f"[{time.monotonic() - self.started:6.0f}s] {name}: SSH did not connect "
                  f"({result.stderr.strip().splitlines()[-1][-120:]}); again in {CONNECT_RETRY_S} s "
                  f"({attempt} of {CONNECT_ATTEMPTS})", flush=True)
            time.sleep(CONNECT_RETRY_S)
        lines = [l for l in result.stdout.splitlines() if l.startswith("testbed:")]
        seconds = round(time.monotonic() - self.started, 1)
        print(f"[{seconds:6.0f}s] {name}: "
              + ("; ".join(l[len("testbed: "):] for l in lines) if result.ok else
                 f"FAILED (rc {result.rc}): {(result.stderr.strip() or result.stdout.strip())[-300:]}"),
              flush=True)
        last_run[name] = seconds
        return result.ok

    def finish(self, names=()):
        """Add `names` not added yet, wait for every host; seconds since the start."""
        for name in names:
            self.add(name)
        failed = [n for n, f in self.futures.items() if not f.result()]
        if failed:
            raise TestbedError(f"provisioning failed on {', '.join(sorted(failed))}")
        return time.monotonic() - self.started


last_run = {}  # {host: seconds until its provisioning finished}, of the last call
# a guest whose sshd does not answer yet (just booted, the host's cores busy with the other
# guests) is tried again this many times, this far apart, before its provisioning fails
CONNECT_ATTEMPTS, CONNECT_RETRY_S = 6, 15


def first_contact_ssh(site, names):
    """SSH that reaches the site's new guests on their management address (the site address
    is set by provisioning) with the testbed key or, the first time, Vagrant's well-known
    key; a guest of another hypervisor through that hypervisor's SSH login."""
    from testbed.machines import domains, plan
    topo = site.topo
    addresses = {n: a for n in names if not topo.hosts[n].existing and (a := domains.management_address(topo, n))}
    # a guest of another libvirt: its management network is reached through that hypervisor
    proxies = {n: topo.hypervisor_of(n).proxy_command() for n in addresses if not topo.hypervisor_of(n).local}
    return site.ssh(timeout=1800, addresses=addresses, extra_keys=[plan.bootstrap_key()], proxies=proxies)


def check_host(topo, name):
    if name not in topo.hosts:
        raise TestbedError(f"{topo.source}: hosts: no host {name!r} (hosts: {', '.join(topo.hosts)})")
