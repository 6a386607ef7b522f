"""Provision hosts over SSH, all at once: the one provisioning path for `up`,
plain `vagrant up` (its trigger calls `testbed provision HOST`) and re-provisioning."""
import shlex
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from testbed import PROJECT_ROOT
from testbed.model.state import TestbedState
from testbed.model.errors import TestbedError
from testbed.remote.ssh import SSH


def provision(topo, profile, hosts=None, ssh=None, accelerator=None, bundles=None):
    """Re-render every host's bundle and apply it over SSH, all hosts at once (`vagrant
    provision` does one host after another). Idempotent: unchanged config restarts nothing.
    `bundles` {host: tarball}: already rendered (by the plan `up` just wrote)."""
    from testbed.machines import packages, plan, render
    state = TestbedState(topo.name)
    names = hosts or list(topo.hosts)
    for name in names:
        check_host(topo, name)
    if bundles is None:
        bundles = render.write_all(state, topo, profile, accelerator or plan.recorded_accel(state))
    apply_sh = (PROJECT_ROOT / "provision" / "apply.sh").read_text()
    install = " && ".join(packages.install_commands(topo.box))  # el9 only; the Debian box has all
    command = ((f"{install} && " if install else "")
               + "f=$(mktemp /tmp/testbed-provision.XXXXXX) && cat > \"$f\" && "
               f"bash -c {shlex.quote(apply_sh)} apply \"$f\"; rc=$?; rm -f \"$f\"; exit $rc")
    ssh = ssh or first_contact_ssh(topo, state, names)
    started = time.monotonic()
    print(f"provisioning {', '.join(names)} with profile {profile.name}", flush=True)
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = {pool.submit(ssh.run, n, command, False, bundles[n].read_bytes()): n for n in names}
        failed, seconds = [], {}
        for future in as_completed(futures):
            result = future.result()
            lines = [l for l in result.stdout.splitlines() if l.startswith("testbed:")]
            print(f"[{time.monotonic() - started:6.0f}s] {futures[future]}: "
                  + ("; ".join(l[len("testbed: "):] for l in lines) if result.ok else
                     f"FAILED (rc {result.rc}): {(result.stderr.strip() or result.stdout.strip())[-300:]}"),
                  flush=True)
            if not result.ok:
                failed.append(futures[future])
            seconds[futures[future]] = round(time.monotonic() - started, 1)
    if failed:
        raise TestbedError(f"provisioning failed on {', '.join(sorted(failed))}")
    last_run.clear()
    last_run.update(seconds)
    return time.monotonic() - started


last_run = {}  # {host: seconds until its provisioning finished}, of the last call


def first_contact_ssh(topo, state, names):
    """SSH that reaches new guests on their management address (the site address is set by
    provisioning) with the testbed key or, the first time, Vagrant's well-known key."""
    from testbed.machines import domains, plan
    addresses = {n: a for n in names if (a := domains.management_address(topo, n))}
    return SSH(topo, state, timeout=1800, addresses=addresses, extra_keys=[plan.bootstrap_key()])


def check_host(topo, name):
    if name not in topo.hosts:
        raise TestbedError(f"{topo.source}: hosts: no host {name!r} (hosts: {', '.join(topo.hosts)})")
