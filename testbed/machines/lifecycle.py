"""Bring a site up and down: boot the VMs in waves with Vagrant, provision them all at
once over SSH, wait until healthy, and keep a record of every phase's time. Existing
hosts (topology `existing:`) are checked before anything changes, provisioned over SSH
beside the VMs, and deprovisioned, never destroyed, by `down` (machines/existing.py)."""
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.machines import (accel, box_choice, disks, domains, existing, fabric, hostload, hypervisor_preflight,
                              plan, provision as provisioning, warm)
from testbed.machines.patched_box import PatchedBox, box_for
from testbed.model.clock import utc_iso
from testbed.model.state import state_root, write_json
from testbed.model import site_history, site_lock, topology
from testbed.model.errors import TestbedError
from testbed.model.schema import env_int
from testbed.network import wan
from testbed.remote import console, repair_record
from testbed.remote.profile_record import record_profile
from testbed.remote.ssh import guest_known_hosts

ACTIVE = "active-topology"
BRINGUP_RECORD = "bringup.json"
STEP = re.compile(r"^==> (\S+): (.*)$")
SHOWN_STEPS = ("Creating domain", "Starting domain", "Waiting for domain to get an IP",
               "Waiting for machine to boot", "Machine booted and ready", "Domain is already",
               "Removing domain")
# Vagrant's steps that start a bring-up phase, as the record names them
PHASES = (("Creating image (snapshot of base box volume)", "import"), ("Creating domain with", "define"),
          ("Starting domain", "start"), ("Waiting for domain to get an IP", "lease_wait"),
          ("Waiting for machine to boot", "ssh_wait"), ("Machine booted and ready", "booted"),
          ("Configuring and enabling network", "vagrant_network"),
          # `up` of a VM that already runs: Vagrant reaches it without a boot step
          ("Machine not provisioned because", "booted"))
BOOT_ATTEMPTS = 3
ERROR_LINE = re.compile(r"Libvirt::Error|Call to \w+ failed|Timed out while waiting|Vagrant::Errors::|error: ")
# Boot order: the DTN (the biggest guest) first while the host is idle, then the pool's core.
BOOT_ORDER = ("dtn", "cm", "ccb", "submit", "origin", "worker")


def vagrant_env(topo, profile_name="default"):
    env = dict(os.environ)
    env.update({"TESTBED_TOPOLOGY": topo.name, "TESTBED_TOPOLOGY_FILE": str(Path(topo.source).resolve()),
                "TESTBED_PROFILE": profile_name,
                "VAGRANT_DEFAULT_PROVIDER": "libvirt", "VAGRANT_CHECKPOINT_DISABLE": "1",
                "VAGRANT_NO_COLOR": "1", "TESTBED_MANAGED": "1"})
    return env


def active_topology(root=PROJECT_ROOT):
    """The topology that is up in this checkout: the one `testbed up` recorded, else the one
    read back from the libvirt domains this checkout's Vagrant made (a plain `vagrant up`
    records nothing), which is then recorded. None when nothing is up."""
    path = state_root() / ACTIVE
    if path.exists():
        return path.read_text().strip()
    found = domains.topology_up([p.stem for p in topology.TOPOLOGY_DIR.glob("*.yaml")], root)
    if found:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(found)
    return found


def setup_seconds():
    """The seconds `./tb` spent before the command began (the host's set-up: apt and the
    virtualenv on a fresh machine, a check once done): TB_SETUP_SECONDS, which the command
    line sets from `./tb`'s TB_STARTED as it starts; None without it."""
    try:
        return round(float(os.environ["TB_SETUP_SECONDS"]), 1)
    except (KeyError, ValueError):
        return None


def boot_waves(topo, size):
    """Hosts in boot order, `size` at a time: under TCG a guest boots about as fast alone
    as the host's cores can feed it, and nine at once starved each other for 20 minutes."""
    rank = {role: i for i, role in enumerate(BOOT_ORDER)}
    hosts = sorted(topo.vm_hosts, key=lambda h: (min(rank.get(r, 99) for r in h.roles), h.index))
    names = [h.name for h in hosts]
    return [names[i:i + size] for i in range(0, len(names), size)]


def wave_size(accelerator, cores=None):
    forced = env_int("TESTBED_BOOT_WAVE", 0, minimum=0)
    if forced:
        return forced
    if accelerator == "kvm":
        return 64
    return max(1, cores or os.cpu_count() or 1)


class VagrantRun:
    """One `vagrant` command: full log kept, progress printed, each VM's steps timed."""

    def __init__(self, log_path, started, steps, on_booted=None):
        self.log_path, self.started, self.steps = log_path, started, steps
        self.on_booted = on_booted  # called with a host's name when Vagrant has reached it
        self.last_step, self.tail, self.errors = {}, [], []
        self.running = set()        # the vagrant processes not finished yet

    def __call__(self, argv, env):
        """Run to the end; safe to call from several threads (one per boot wave)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", buffering=1) as log:
            log.write(f"$ {' '.join(argv)}\n")
            proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, bufsize=1)
            self.running.add(proc)
            try:
                for line in proc.stdout:
                    log.write(line)
                    self.tail = (self.tail + [line.rstrip()])[-15:]
                    if ERROR_LINE.search(line):
                        self.errors.append(line.strip()[:300])
                    self._step(line.strip())
                return proc.wait()
            finally:
                self.running.discard(proc)

    def stop(self, grace=20):
        """End the vagrant processes still running (an interrupted bring-up): Vagrant answers
        a Ctrl-C by finishing the action under way, and holds each machine's lock until
        then, so a `vagrant destroy` right after would fail on those machines."""
        live = [p for p in list(self.running) if p.poll() is None]
        for proc in live:
            proc.terminate()
        for proc in live:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return len(live)

    def _step(self, text):
        m = STEP.match(text)
        if not m:
            return
        host, what = m.groups()
        now = round(time.monotonic() - self.started, 1)
        self.last_step[host] = what
        for prefix, phase in PHASES:
            if what.startswith(prefix):
                if phase == "booted":
                    self.mark_booted(host, now)
                else:
                    self.steps.setdefault(host, {}).setdefault(phase, now)
        if any(s in what for s in SHOWN_STEPS):
            print(f"[{now:6.0f}s] {host}: {what}", flush=True)

    def mark_booted(self, host, now=None):
        """Record that Vagrant has reached `host` (the first time only) and hand it on."""
        steps = self.steps.setdefault(host, {})
        if "booted" in steps:
            return
        steps["booted"] = now if now is not None else round(time.monotonic() - self.started, 1)
        if self.on_booted:
            self.on_booted(host)


def _console_tail(topo, host, lines=2):
    return console.tail(plan.console_log(topo, host), lines)


def _up_argv(hosts):
    return ["vagrant", "up", "--no-provision", "--no-destroy-on-error", "--provider", "libvirt", *hosts]


def boot(topo, run, env, size, overlap=None, poll=1.0):
    """Boot every VM (no provisioning), a wave at a time; a VM still booting when Vagrant's
    time-out fires is kept and waited for again, never destroyed.

    With `overlap` (the default; TESTBED_BOOT_OVERLAP=0 turns it off) the next wave starts as
    soon as this wave's guests have their management lease - past the CPU-heavy early boot -
    instead of after Vagrant has also reached them over SSH and exited (~40 s per wave)."""
    if overlap is None:
        overlap = os.environ.get("TESTBED_BOOT_OVERLAP", "1") != "0"
    threads = []
    for wave in boot_waves(topo, size):
        thread = threading.Thread(target=run, args=(_up_argv(wave), env), daemon=True)
        thread.start()
        threads.append(thread)
        while thread.is_alive() and not (overlap and all("ssh_wait" in run.steps.get(h, {}) for h in wave)):
            time.sleep(poll)
    for thread in threads:
        thread.join()
    pending = [h.name for h in topo.vm_hosts if "booted" not in run.steps.get(h.name, {})]
    for attempt in range(2, BOOT_ATTEMPTS + 1):
        for host in list(pending):
            print(f"[{time.monotonic() - run.started:6.0f}s] {host}: not ready after "
                  f"{run.last_step.get(host, 'no step')!r}; domain {domains.state(topo, host)}; "
                  f"waiting again (attempt {attempt} of {BOOT_ATTEMPTS})", flush=True)
            if run(_up_argv([host]), env) == 0:
                run.mark_booted(host)
                pending.remove(host)
    if pending:
        details = "; ".join(f"{h}: last step {run.last_step.get(h, 'none')!r}, domain "
                            f"{domains.state(topo, h)}, console: {_console_tail(topo, h) or 'empty'}"
                            for h in pending)
        why = run.errors[-1] if run.errors else "\n".join("    " + l for l in run.tail[-6:])
        raise TestbedError(f"VM(s) did not boot after {BOOT_ATTEMPTS} attempts: {details}; "
                           f"full log {run.log_path}; the error: {why}")


def up(site, profile, health, parallel=True, wait_timeout=900, dry_run=False, echo=print, box=None, cold=False,
       keep_warm=True):
    """Bring the site (testbed.remote.site.Site) up and wait until it is healthy. `health`:
    the site's health checks (testbed.services.health; passed in, as `machines` sits below
    `services`). Existing
    hosts are checked first, before anything is changed; `dry_run` stops there and prints
    every change `up` would make (VMs to create, each existing host's changes). `box`: a
    box spec (`debian13+patch:NAME`) for this site instead of the topology's, until `down`.
    A site `down` parked comes back warm when nothing it depends on changed (warm.py);
    `cold` boots anew whatever was parked (and keeps the new site's snapshot); under CI every
    bring-up is cold and keeps none; `keep_warm` False uses a parked site but keeps no new
    one after a cold boot."""
    topo, state = site.topo, site.state
    other = active_topology()
    if other and other != topo.name and not dry_run:
        raise TestbedError(f"topology {other} is up in this checkout; `testbed -t {other} down` first")
    if not dry_run:
        site_lock.hold(state, "up")
        demo_mark(topo.name).unlink(missing_ok=True)  # demo marks it again after
    if box:   # a dry run shows the plan on that box, and records nothing
        box_choice.choose(site, box, record=not dry_run)
        echo(f"box of {topo.name}: {topo.box_spec} "
             + ("(dry run: not recorded)" if dry_run
                else f"(until `testbed -t {topo.name} down` removes the site; parked, it keeps the box)"))
    topology.check_fits(topo)
    started = time.monotonic()
    checked, hv_checked, accelerator = {}, {}, None
    image = box_for(topo.box_spec)
    # the box the guests boot directly: a hypervisor on another machine gets its kernel and initrd
    direct = image if topo.box == "debian13" else None
    if topo.remote_vm_hosts:
        accelerator = accel.detect()
        echo(f"checking hypervisors {', '.join(hv.name for hv in topo.layout.involved)}")
        hv_checked = hypervisor_preflight.preflight(topo, accelerator, box=direct)
    if topo.existing_hosts:
        state.ensure_dirs()  # the SSH control sockets and known_hosts (on this machine only)
        echo(f"checking existing hosts {', '.join(h.name for h in topo.existing_hosts)}")
        checked = existing.preflight(topo, profile, site.ssh(timeout=120))
    if dry_run:
        for line in existing.dry_run_lines(topo, checked):
            echo(line)
        if topo.remote_vm_hosts:
            actions = fabric.plan_actions(topo, direct, console_dir=plan.console_dir())
            for line in hypervisor_preflight.dry_run_lines(topo, hv_checked, actions):
                echo(line)
        echo(f"dry run: nothing was changed ({len(topo.vm_hosts)} VMs, {len(checked)} existing hosts"
             + (f", {len(hv_checked)} hypervisors" if topo.remote_vm_hosts else "") + ")")
        return 0
    record = {"topology": topo.name, "profile": profile.name, "phases": {}, "vms": {},
              "existing": {name: {"checked_after": round(time.monotonic() - started, 1)} for name in checked},
              "began": utc_iso(), "box_built": False,
              "setup_seconds": setup_seconds()}
    if topo.vm_hosts:
        domains.claim_domains(topo)
        if direct:  # el9 comes from Vagrant Cloud (needs internet)
            if isinstance(direct, PatchedBox) and not direct.base.built:
                direct.base.build()
            if not direct.built or not direct.registered():
                direct.build()
                record["box_built"] = True
    record["phases"]["box"] = round(time.monotonic() - started, 1)
    state.ensure_secrets()
    (state_root() / ACTIVE).write_text(topo.name)
    _path, the_plan = plan.write(topo, profile, state, accelerator, box=image)
    back = warm.come_back(site, profile, health, cold=cold, echo=lambda m: print(m, flush=True))
    booting = back is None
    if booting:
        back = _boot_cold(site, profile, health, the_plan, record, started, direct, parallel, wait_timeout)
    record_profile(state, profile)
    print(back, flush=True)
    if booting and keep_warm and warm.wanted():
        warm.keep(site, profile.name)
    return 0


def _boot_cold(site, profile, health, the_plan, record, started, direct, parallel, wait_timeout):
    """Boot and provision every VM (in waves), provision the existing hosts, set the RAID
    members' limits and the topology's WAN, and wait until the site is healthy; returns the
    last line of `up`."""
    topo, state = site.topo, site.state
    accelerator = the_plan["accel"]
    if topo.vm_hosts:
        accel.converge_libvirtd(accelerator)  # set-up may have run before the box's kernel could tell
    if topo.remote_vm_hosts:  # the site network across hypervisors, and the box's kernel on each
        fabric.join(topo, state, direct, console_dir=plan.console_dir(), echo=lambda m: print(
            f"[{time.monotonic() - started:6.0f}s] {m}", flush=True))
    log = state.dir / "vagrant-up.log"
    log.unlink(missing_ok=True)
    size = wave_size(accelerator) if parallel else 1
    print(f"bringing up {topo.name}: {len(topo.vm_hosts)} VMs, {topo.total_memory_mb} MB guest RAM, "
          f"{accelerator.upper()}, booting {size} at a time (log: {log})"
          + (f"; {len(topo.existing_hosts)} existing hosts" if topo.existing_hosts else ""), flush=True)
    # each guest is provisioned as soon as Vagrant has reached it, while later waves boot;
    # existing hosts at once
    work = provisioning.Provisioner(site, profile, accelerator=accelerator, started=started,
                                    bundles={h["name"]: Path(h["bundle"]) for h in the_plan["hosts"]})
    # CPU seconds as each guest is reached and when the site is healthy: the floor its cores put
    # under the bring-up (benchmarks/bringup.py)
    tools_before = hostload.own_cpu_seconds()
    record["cpu"] = {"booted": {}, "guests": {}, "tools": 0.0, "cores": os.cpu_count() or 1}

    def reached(host):
        record["cpu"]["booted"][host] = hostload.cpu_seconds(topo).get(host)
        work.add(host)
    run = VagrantRun(log, started, record["vms"], on_booted=reached)
    try:
        with work:
            for host in topo.existing_hosts:
                work.add(host.name)
            if topo.vm_hosts:
                try:
                    boot(topo, run, vagrant_env(topo, profile.name), size)
                except BaseException:  # Ctrl-C, a failed boot: no vagrant left holding a machine
                    stopped = run.stop()
                    if stopped:
                        print(f"[{time.monotonic() - started:6.0f}s] stopped {stopped} vagrant process(es) "
                              "still booting", flush=True)
                    raise
            record["phases"]["boot"] = round(time.monotonic() - started, 1)
            # the RAID members' MB/s and IOPS (the DTN's provisioning may already be under
            # way: the limits only slow it down, as real disks would)
            record["disks"] = disks.set_limits(topo, echo=lambda m: print(
                f"[{time.monotonic() - started:6.0f}s] {m}", flush=True))
            print(f"[{time.monotonic() - started:6.0f}s] all VMs booted; waiting for their provisioning",
                  flush=True)
            work.finish(topo.hosts)
        for host, seconds in provisioning.last_run.items():
            kind = "existing" if topo.hosts[host].existing else "vms"
            record[kind].setdefault(host, {})["provisioned_after"] = seconds
        record["phases"]["provision"] = round(time.monotonic() - started, 1)
        booted = time.monotonic() - started
        report = health.wait_healthy(topo, site.ssh(), timeout=wait_timeout, started=started)
        record["phases"]["healthy"] = round(time.monotonic() - started, 1)
        record["cpu"].update(guests=hostload.cpu_seconds(topo),
                             tools=round(hostload.own_cpu_seconds() - tools_before, 1))
        if any(link.rtt_ms or link.loss_pct or link.rate_mbit for link in topo.wan):
            for row in wan.set_links(topo, site.ssh(), state, [], count=10):
                print(f"WAN from the topology: {row['link']} configured {row['configured_ms']:g} ms, "
                      f"measured {row['measured_ms']} ms", flush=True)
    finally:
        _write_record(state, record)
    print(health.format_report(report))
    if any("start" in steps for steps in record["vms"].values()) or site_history.read(state) is None:
        site_history.began(state, "bring-up")   # an `up` of VMs already running keeps their history
    return (f"site {topo.name} healthy in {time.monotonic() - started:.0f} s "
            f"(VMs up and provisioned after {booted:.0f} s)")


def _write_record(state, record):
    write_json(state.dir / BRINGUP_RECORD, record)


def down(site, echo=print):
    """Destroy the site's VMs, volumes and networks, when its topology is the one up here,
    and undo what the testbed installed on its existing hosts (which stay up)."""
    topo, state = site.topo, site.state
    other = active_topology()
    if other and other != topo.name:
        raise TestbedError(f"topology {other} is up in this checkout, not {topo.name}; "
                           f"`testbed -t {other} down` removes it (the two share .vagrant/)")
    site_lock.hold(state, "down")
    started = time.monotonic()
    left = {}
    if topo.existing_hosts:
        state.ensure_dirs()
        echo(f"deprovisioning existing hosts {', '.join(h.name for h in topo.existing_hosts)} "
             "(they stay up; only what the testbed recorded is undone)")
        left = existing.deprovision(topo, site.ssh(timeout=1800), echo=echo)
    if not topo.vm_hosts:
        active = state_root() / ACTIVE
        if active.exists() and active.read_text().strip() == topo.name:
            active.unlink()
        return _down_result(topo, left, started)
    site.ssh().close_masters()   # no SSH process of the testbed outlives the VMs it reached
    # the domains it parks are gone from Vagrant's and libvirt's view; a site parked already
    # (a second `down`) is removed for good
    parked = warm.park(site, echo=echo) is not None
    if not parked and warm.parked(site):
        warm.discard(site)
        echo(f"removed the parked copy of {topo.name} ({warm.park_dir(site)})")
    run = VagrantRun(state.dir / "vagrant-down.log", started, {})
    destroy_failed = False
    if state.dir.exists() or other == topo.name:
        if not plan.plan_path(state).exists():  # the Vagrantfile needs it to know the machines
            from testbed.model import profiles
            plan.write(topo, profiles.load("default"), state, box=box_for(topo.box_spec))
        destroy_failed = run(["vagrant", "destroy", "-f"], vagrant_env(topo)) != 0
    # Domains Vagrant lost track of (a bring-up killed while it created them, say) are
    # removed here whether or not `vagrant destroy` managed the rest.
    domains.sweep_libvirt(topo, [name for name, owner in domains.leftover_domains(topo)
                                 if domains.owner_is_gone(owner)])
    if destroy_failed:
        left = domains.topology_domains(topo)
        tail = "\n".join("    " + l for l in run.tail)
        if left:
            raise TestbedError(f"vagrant destroy failed and {', '.join(left)} still exist; full log "
                               f"{run.log_path}; last lines:\n{tail}")
        print(f"vagrant destroy stopped early (log {run.log_path}); the domains it left were removed "
              "with virsh", flush=True)
    for net in topo.network_names().values():
        domains._virsh("net-destroy", net)
        domains._virsh("net-undefine", net)
    if topo.remote_vm_hosts:  # the VXLAN ports, and the networks of the other machines' libvirt
        for line in fabric.leave(topo, echo=echo):
            echo(f"left: {line}")
    active = state_root() / ACTIVE
    if active.exists() and active.read_text().strip() == topo.name:
        active.unlink()
    if not parked:  # a parked site comes back on the box it was parked from: its choice stays
        box_choice.forget(site)
    guest_known_hosts(state).unlink(missing_ok=True)  # the VMs and their keys are gone
    repair_record.clear(state)  # and what their suites could not restore
    demo_mark(topo.name).unlink(missing_ok=True)
    site_history.forget(state)
    return _down_result(topo, left, started, "parked" if parked else "destroyed")


def demo_mark(name):
    """The file that says `testbed demo` brought topology `name`'s site up and left it up (in
    its state folder; gone once the site is brought up again or taken down)."""
    return state_root() / name / "left-by-demo"


def mark_left_by_demo(topo):
    """Record that `testbed demo` leaves this site up: `testbed test` may take it down to bring
    up its own (the README's two commands in either order)."""
    path = demo_mark(topo.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("testbed demo\n")


def left_by_demo(name):
    return demo_mark(name).exists()


def _down_result(topo, left, started, how="deprovisioned"):
    """The last line of `down`; TestbedError naming the existing hosts it could not clean."""
    if left:
        raise TestbedError(f"site {topo.name}: {'VMs destroyed, but ' if topo.vm_hosts else ''}"
                           "existing host(s) not cleaned: " + "; ".join(f"{h}: {why}" for h, why in left.items()))
    print(f"site {topo.name} {how} "
          f"in {time.monotonic() - started:.0f} s")
    return 0


def ssh_interactive(site, host, command):
    provisioning.check_host(site.topo, host)
    argv = site.ssh().argv(host, interactive=True) + (command or [])
    return subprocess.call(argv)
claim_domains = domains.claim_domains  # `testbed test` claims before anything `down` would undo
