"""Bring a site up and down with Vagrant, with progress, then wait for health."""
import os
import re
import shlex
import subprocess
import time

from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.remote import health
from testbed.model import topology
from testbed.machines.box import Box
from testbed.model.errors import TestbedError
from testbed.remote.ssh import SSH
from testbed.machines.state import TestbedState, state_root

ACTIVE = "active-topology"
STEP = re.compile(r"^==> (\S+): (.*)$")
SHOWN_STEPS = ("Creating domain", "Starting domain", "Waiting for domain to get an IP",
               "Waiting for machine to boot", "Machine booted and ready", "Running provisioner",
               "provisioned (", "Machine already provisioned", "Domain is already", "Removing domain")


def vagrant_env(topo, profile_name="default"):
    env = dict(os.environ)
    env.update({"TESTBED_TOPOLOGY": topo.name, "TESTBED_PROFILE": profile_name,
                "VAGRANT_DEFAULT_PROVIDER": "libvirt", "VAGRANT_CHECKPOINT_DISABLE": "1",
                "VAGRANT_NO_COLOR": "1"})
    return env


def active_topology():
    path = state_root() / ACTIVE
    return path.read_text().strip() if path.exists() else None


def _stream(argv, env, log_path, started):
    """Run vagrant, keep the full log, print the steps that show progress."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", buffering=1) as log:
        proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        last = []
        for line in proc.stdout:
            log.write(line)
            last = (last + [line.rstrip()])[-15:]
            m = STEP.match(line.strip())
            text = line.strip()
            if m and any(s in m.group(2) for s in SHOWN_STEPS) or "testbed:" in text and "provisioned" in text:
                print(f"[{time.monotonic() - started:6.0f}s] {text.replace('==> ', '')}", flush=True)
        rc = proc.wait()
    if rc != 0:
        tail = "\n".join("    " + l for l in last)
        raise TestbedError(f"vagrant failed (rc {rc}); full log {log_path}; last lines:\n{tail}")


def up(topo, profile, parallel=True, wait_timeout=900):
    other = active_topology()
    if other and other != topo.name:
        raise TestbedError(f"topology {other} is up in this checkout; `testbed -t {other} down` first")
    topology.check_fits(topo)
    claim_domains(topo)
    started = time.monotonic()
    if topo.box == "debian13":  # el9 comes from Vagrant Cloud (needs internet)
        box = Box(topo.box)
        if not box.built or not box.registered():
            box.build()
    state = TestbedState(topo.name).ensure_secrets()
    (state_root() / ACTIVE).write_text(topo.name)
    argv = ["vagrant", "up", "--provider", "libvirt"] + ([] if parallel else ["--no-parallel"])
    print(f"bringing up {topo.name}: {len(topo.hosts)} VMs, {topo.total_memory_mb} MB guest RAM"
          f" (log: {state.dir / 'vagrant-up.log'})", flush=True)
    _stream(argv, vagrant_env(topo, profile.name), state.dir / "vagrant-up.log", started)
    booted = time.monotonic() - started
    print(f"[{booted:6.0f}s] all VMs provisioned; waiting for the site to be healthy", flush=True)
    report = health.wait_healthy(topo, SSH(topo), timeout=wait_timeout, started=started)
    print(health.format_report(report))
    total = time.monotonic() - started
    health.record_profile(state, profile)
    print(f"site {topo.name} healthy in {total:.0f} s (VMs up and provisioned after {booted:.0f} s)")
    return 0


def down(topo):
    state = TestbedState(topo.name)
    started = time.monotonic()
    _stream(["vagrant", "destroy", "-f"], vagrant_env(topo), state.dir / "vagrant-down.log", started)
    sweep_libvirt(topo, [name for name, owner in leftover_domains(topo) if owner_is_gone(owner)])
    for net in topo.network_names().values():
        subprocess.run(["virsh", "-c", "qemu:///system", "net-destroy", net], capture_output=True)
        subprocess.run(["virsh", "-c", "qemu:///system", "net-undefine", net], capture_output=True)
    active = state_root() / ACTIVE
    if active.exists() and active.read_text().strip() == topo.name:
        active.unlink()
    print(f"site {topo.name} destroyed in {time.monotonic() - started:.0f} s")
    return 0


def _virsh(*args):
    return subprocess.run(["virsh", "-c", "qemu:///system", *args], capture_output=True, text=True)


OWNER_TAG = "testbed checkout "


def our_domain_ids(root=PROJECT_ROOT):
    """UUIDs of the domains Vagrant made from this checkout."""
    return {p.read_text().strip() for p in Path(root, ".vagrant", "machines").glob("*/libvirt/id")
            if p.read_text().strip()}


def leftover_domains(topo):
    """Domains named for this topology that this checkout's Vagrant does not know:
    [(name, owning checkout path or None when the domain does not say)]."""
    prefix, ours, found = f"tb-{topo.name}-", our_domain_ids(), []
    for name in _virsh("list", "--all", "--name").stdout.split():
        if name.startswith(prefix) and _virsh("domuuid", name).stdout.strip() not in ours:
            desc = _virsh("desc", name).stdout.strip()
            found.append((name, desc[len(OWNER_TAG):] if desc.startswith(OWNER_TAG) else None))
    return found


def owner_is_gone(owner):
    """A domain whose checkout is this one (Vagrant lost track of it) or no longer exists."""
    return owner is not None and (owner == str(PROJECT_ROOT) or not Path(owner, "Vagrantfile").exists())


def claim_domains(topo):
    """Before `up`: sweep domains orphaned by deleted checkouts; refuse to take over those of
    another checkout that still exists (two testbeds of one topology share names and networks)."""
    leftovers = leftover_domains(topo)
    for name, owner in leftovers:
        if owner is None:
            raise TestbedError(f"libvirt domain {name} exists and no checkout claims it; remove it with "
                               f"`virsh -c qemu:///system destroy {name}; virsh -c qemu:///system undefine "
                               f"{name}` (names and networks would clash)")
        if not owner_is_gone(owner):
            raise TestbedError(f"libvirt domain {name} belongs to the testbed in {owner}; run "
                               f"`./tb -t {topo.name} down` there first (names and networks would clash)")
    if leftovers:
        print(f"removing {len(leftovers)} domain(s) left by a deleted checkout: "
              f"{', '.join(n for n, _ in leftovers)}", flush=True)
        sweep_libvirt(topo, [n for n, _ in leftovers])


def sweep_libvirt(topo, names):
    """Remove these domains of the testbed and, when none of its domains is left, its volumes."""
    prefix = f"tb-{topo.name}-"
    for name in names:
        _virsh("destroy", name)
        _virsh("undefine", name, "--nvram")
    if any(n.startswith(prefix) for n in _virsh("list", "--all", "--name").stdout.split()):
        return
    for line in _virsh("vol-list", "default").stdout.splitlines()[2:]:
        vol = line.split()[0] if line.split() else ""
        if vol.startswith(prefix):
            _virsh("vol-delete", "--pool", "default", vol)


def provision(topo, profile, hosts=None, ssh=None, accelerator=None):
    """Re-render every host's bundle and apply it over SSH, all hosts at once (`vagrant
    provision` does one host after another). Idempotent: unchanged config restarts nothing."""
    from testbed.machines import accel, render
    state = TestbedState(topo.name)
    names = hosts or list(topo.hosts)
    for name in names:
        _check_host(topo, name)
    bundles = render.write_all(state, topo, profile, accelerator or accel.detect())
    apply_sh = (PROJECT_ROOT / "provision" / "apply.sh").read_text()
    command = (f"cat > /tmp/testbed-provision.tgz && bash -c {shlex.quote(apply_sh)} apply "
               f"/tmp/testbed-provision.tgz")
    ssh = ssh or SSH(topo, timeout=1800)
    started = time.monotonic()
    print(f"provisioning {', '.join(names)} with profile {profile.name}", flush=True)
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = {pool.submit(ssh.run, n, command, False, bundles[n].read_bytes()): n for n in names}
        failed = []
        for future in as_completed(futures):
            result = future.result()
            lines = [l for l in result.stdout.splitlines() if l.startswith("testbed:")]
            print(f"[{time.monotonic() - started:6.0f}s] {futures[future]}: "
                  + ("; ".join(l[len("testbed: "):] for l in lines) if result.ok else
                     f"FAILED (rc {result.rc}): {(result.stderr.strip() or result.stdout.strip())[-300:]}"),
                  flush=True)
            if not result.ok:
                failed.append(futures[future])
    if failed:
        raise TestbedError(f"provisioning failed on {', '.join(sorted(failed))}")
    return time.monotonic() - started


def _check_host(topo, name):
    if name not in topo.hosts:
        raise TestbedError(f"{topo.source}: hosts: no host {name!r} (hosts: {', '.join(topo.hosts)})")


def ssh_interactive(topo, host, command):
    _check_host(topo, host)
    argv = SSH(topo).argv(host, interactive=True) + (command or [])
    return subprocess.call(argv)
