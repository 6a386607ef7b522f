"""Bring-up: boot waves, retries of a guest still booting, the plan the Vagrantfile reads."""
import json
import os
import time
from pathlib import Path

import pytest

from testbed.machines import accel, lifecycle, plan
from testbed.machines.patched_box import box_for
from testbed.model import profiles, topology
from testbed.model.errors import TestbedError
from testbed.model.state import TestbedState
from testbed.remote.site import Site


def test_boot_waves_put_the_dtn_first_and_respect_the_size():
    topo = topology.load("default")
    waves = lifecycle.boot_waves(topo, 2)
    assert waves[0][0] == "dtn" and all(len(w) <= 2 for w in waves)
    assert sorted(n for w in waves for n in w) == sorted(topo.hosts)
    assert lifecycle.boot_waves(topo, 64) == [[n for w in waves for n in w]]


def test_wave_size_follows_cores_under_tcg_and_env(monkeypatch):
    monkeypatch.delenv("TESTBED_BOOT_WAVE", raising=False)
    assert lifecycle.wave_size("tcg", cores=2) == 2 and lifecycle.wave_size("kvm", cores=2) == 64
    monkeypatch.setenv("TESTBED_BOOT_WAVE", "1")
    assert lifecycle.wave_size("tcg", cores=8) == 1


class FakeVagrant:
    """`vagrant up` that reports every host of a call booted, except those that need more
    attempts: {host: attempts before it is ready}."""

    on_booted = None
    mark_booted = lifecycle.VagrantRun.mark_booted

    def __init__(self, slow, steps, started):
        self.slow, self.calls, self.steps, self.started = dict(slow), [], steps, started
        self.last_step, self.errors, self.tail, self.log_path = {}, [], [], "vagrant-up.log"

    def __call__(self, argv, env):
        hosts = [a for a in argv[2:] if not a.startswith("--") and a != "libvirt"]
        self.calls.append(hosts)
        rc = 0
        for h in hosts:
            if self.slow.get(h, 0) > 0:
                self.slow[h] -= 1
                self.last_step[h] = "Waiting for domain to get an IP address..."
                self.errors.append("Vagrant::Errors::VMBootTimeout")
                rc = 1
            else:
                self.steps.setdefault(h, {})["booted"] = 1.0
        return rc


def test_a_guest_still_booting_is_waited_for_again_not_destroyed(monkeypatch):
    topo = topology.load("small")
    monkeypatch.setattr(lifecycle.domains, "state", lambda t, h: "running")
    run = FakeVagrant({"dtn": 1}, {}, time.monotonic())
    lifecycle.boot(topo, run, {}, 2, poll=0.01)
    assert run.calls[0] == ["dtn", "cm1"] and run.calls[-1] == ["dtn"] and len(run.calls) == 4
    assert all("--no-destroy-on-error" not in c for c in run.calls)  # hosts only, flags filtered
    assert set(run.steps) == set(topo.hosts)


def test_a_guest_that_never_boots_is_named_with_its_phase_and_error(monkeypatch):
    topo = topology.load("small")
    monkeypatch.setattr(lifecycle.domains, "state", lambda t, h: "running")
    monkeypatch.setattr(lifecycle, "_console_tail", lambda t, h: "Begin: Running /scripts/local-block")
    run = FakeVagrant({"dtn": 5}, {}, time.monotonic())
    with pytest.raises(TestbedError) as err:
        lifecycle.boot(topo, run, {}, 2, poll=0.01)
    text = str(err.value)
    assert "dtn: last step 'Waiting for domain to get an IP address...'" in text
    assert "domain running" in text and "local-block" in text and "VMBootTimeout" in text
    assert "cm1" not in text.split("did not boot")[1].split(";")[0]


def test_plan_file_carries_accel_cpu_and_console(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", str(tmp_path / "console"))
    small = topology.load("small")
    path, data = plan.write(small, profiles.load("default"), TestbedState("small"), accelerator="tcg",
                            box=box_for(small.box_spec))
    saved = json.loads(path.read_text())
    assert saved["accel"] == "tcg" and saved["guest_cpu"]["model"] == "qemu64"
    assert "aes" in saved["guest_cpu"]["features"] and saved["guest_cpu"]["tb_cache_mb"] > 0
    assert all(h["console_log"].startswith(str(tmp_path / "console")) for h in saved["hosts"])
    kvm = accel.guest_cpu("kvm")
    assert kvm["mode"] == "host-passthrough" and kvm["tb_cache_mb"] is None


def test_down_refuses_a_topology_that_is_not_the_one_up(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    (tmp_path / lifecycle.ACTIVE).write_text("default")
    with pytest.raises(TestbedError, match="topology default is up in this checkout, not small"):
        lifecycle.down(Site(topology.load("small")))


def test_guest_boot_record_is_parsed_from_systemd_and_the_journal():
    from testbed.remote import bootrecord
    text = """Startup finished in 13.908s (kernel) + 1min 1.016s (userspace) = 1min 14.925s
[   44.836138] testbed sshd[372]: Server listening on 0.0.0.0 port 22.
[   44.910651] testbed systemd[1]: Reached target multi-user.target - Multi-User System.
[   60.365147] testbed dhclient[431]: DHCPACK of 192.168.160.247 from 192.168.160.1
uptime=193.90
"""
    rec = bootrecord.parse(text)
    assert rec == {"kernel": 13.91, "userspace": 61.02, "total": 74.92, "sshd": 44.836138,
                   "multi_user": 44.910651, "lease": 60.365147, "uptime": 193.9}
    assert bootrecord.seconds("640ms") == 0.64 and bootrecord.parse("") == {}


def test_host_load_reads_qemu_rss_and_cpu_from_proc(tmp_path):
    from testbed.machines import hostload
    topo = topology.load("small")
    ticks = {"101": [100, 150]}

    def write(pid, name, utime):
        d = tmp_path / pid
        d.mkdir(exist_ok=True)
        (d / "cmdline").write_bytes(b"/usr/bin/qemu-system-x86_64\0-name\0guest=tb-small-" + name.encode()
                                    + b",debug-threads=on\0")
        (d / "stat").write_text(f"{pid} (qemu-system-x86) S " + " ".join(["0"] * 10) + f" {utime} 0 0 0")
        (d / "status").write_text("Name: qemu\nVmRSS:\t  524288 kB\n")
    write("101", "cm1", ticks["101"][0])
    (tmp_path / "self").mkdir()
    assert hostload.qemu_processes(topo, tmp_path) == {"cm1": 101}
    out = hostload.usage(topo, window=1.0, proc=tmp_path, sleep=lambda s: write("101", "cm1", ticks["101"][1]))
    hz = __import__("os").sysconf("SC_CLK_TCK")
    assert out["cm1"]["rss_mb"] == 512 and out["cm1"]["cpu_pct"] == round(100.0 * 50 / hz, 1)


def test_the_next_wave_starts_when_this_one_has_its_leases(monkeypatch):
    """Overlap: wave 2 must not start before every guest of wave 1 reached `ssh_wait`."""
    import threading
    topo = topology.load("small")
    steps, order, gate = {}, [], threading.Event()

    class SlowVagrant(FakeVagrant):
        def __call__(self, argv, env):
            hosts = [a for a in argv[2:] if not a.startswith("--") and a != "libvirt"]
            order.append((tuple(hosts), sorted(h for h, s in steps.items() if "ssh_wait" in s)))
            if hosts == ["dtn", "cm1"]:
                for h in hosts:
                    steps.setdefault(h, {})["ssh_wait"] = 1.0
                gate.wait(5)  # still reaching them over SSH while wave 2 boots
            elif not gate.is_set():
                gate.set()
            for h in hosts:
                steps.setdefault(h, {})["booted"] = 2.0
            return 0
    run = SlowVagrant({}, steps, time.monotonic())
    lifecycle.boot(topo, run, {}, 2, overlap=True, poll=0.01)
    assert order[0][0] == ("dtn", "cm1") and order[1][1] == ["cm1", "dtn"]
    assert gate.is_set() and set(steps) == set(topo.hosts)


def test_test_phases_are_timed_from_the_tb_start():
    from testbed.cli.experiment_commands import PhaseClock
    ticks = iter([100.0, 130.0, 400.0])
    clock = PhaseClock(now=lambda: next(ticks), env={"TB_STARTED": "40"})
    clock.done("unit tests")
    clock.done("bring-up of small")
    text = clock.table()
    assert [r[0] for r in clock.rows] == ["host set-up and start", "unit tests", "bring-up of small"]
    assert [round(r[1]) for r in clock.rows] == [60, 30, 270] and "360" in text


def test_test_refuses_when_another_topology_is_up(tmp_path, monkeypatch, capsys):
    from testbed import cli
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    (tmp_path / lifecycle.ACTIVE).write_text("default")
    monkeypatch.setattr("testbed.cli.experiment_commands._run", lambda argv: 0)
    destroyed = []
    monkeypatch.setattr(lifecycle, "down", lambda site: destroyed.append(site.name))
    assert cli.main(["test"]) == 2
    assert "topology default is up in this checkout" in capsys.readouterr().err and destroyed == []


def test_integer_overrides_from_the_environment_are_one_line_errors(monkeypatch):
    from testbed.model.errors import ConfigError
    monkeypatch.setenv("TESTBED_BOOT_WAVE", "two")
    with pytest.raises(ConfigError, match="environment: TESTBED_BOOT_WAVE: 'two' is not a whole number"):
        lifecycle.wave_size("tcg", cores=2)
    monkeypatch.setenv("TESTBED_TB_CACHE_MB", "-5")
    with pytest.raises(ConfigError, match="TESTBED_TB_CACHE_MB: -5 is below the minimum 0"):
        accel.guest_cpu("tcg")


def test_provision_uses_bundles_already_rendered(tmp_path, monkeypatch):
    from testbed.machines import provision, render
    from testbed.remote.ssh import Result
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(render, "write_all", lambda *a, **k: pytest.fail("rendered twice"))
    topo = topology.load("small")
    bundle = tmp_path / "b.tgz"
    bundle.write_bytes(b"\x1f\x8b")

    class FakeSSH:
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            return Result(host, 0, f"testbed: {host} provisioned\n", "")
    provision.provision(Site(topo), profiles.load("default"), ssh=FakeSSH(),
                        bundles={h: bundle for h in topo.hosts})
    assert set(provision.last_run) == set(topo.hosts)


def test_a_guest_is_handed_to_provisioning_once_when_vagrant_reaches_it(tmp_path):
    reached = []
    run = lifecycle.VagrantRun(tmp_path / "log", time.monotonic(), {}, on_booted=reached.append)
    for line in ("==> cm1: Waiting for machine to boot. This may take a few minutes...",
                 "==> cm1: Machine booted and ready!", "==> dtn: Starting domain.",
                 "==> cm1: Machine booted and ready!", "==> dtn: Machine booted and ready!"):
        run._step(line)
    assert reached == ["cm1", "dtn"]


def test_provisioner_runs_hosts_as_they_are_added_and_names_the_failed(tmp_path, monkeypatch):
    from testbed.machines import provision
    from testbed.remote.ssh import Result
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    bundle = tmp_path / "b.tgz"
    bundle.write_bytes(b"\x1f\x8b")
    done = []

    class FakeSSH:
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            done.append(host)
            return Result(host, 1 if host == "dtn" else 0, f"testbed: {host} provisioned\n", "md0 busy")
    work = provision.Provisioner(Site(topo), profiles.load("default"), ssh=FakeSSH(),
                                 bundles={h: bundle for h in topo.hosts})
    with work:
        work.add("cm1")
        work.add("cm1")
        with pytest.raises(TestbedError, match="provisioning failed on dtn"):
            work.finish(topo.hosts)
    assert sorted(done) == sorted(topo.hosts)  # each host once, cm1 too
    assert set(provision.last_run) == set(topo.hosts)


def test_a_guest_whose_ssh_did_not_connect_is_tried_again_and_a_failed_command_is_not(tmp_path, monkeypatch,
                                                                                       capsys):
    from testbed.machines import provision
    from testbed.remote.ssh import Result
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(provision, "CONNECT_RETRY_S", 0)
    topo = topology.load("small")
    bundle = tmp_path / "b.tgz"
    bundle.write_bytes(b"\x1f\x8b")
    tries = {}

    class FakeSSH:
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            tries[host] = tries.get(host, 0) + 1
            if host == "cm1" and tries[host] < 3:     # sshd too slow to send its banner, twice
                return Result(host, 255, "", "Connection timed out during banner exchange\n")
            if host == "dtn":                         # apply.sh itself exited 255: never run twice
                return Result(host, 255, "", "mdadm: exited 255\n")
            return Result(host, 0, f"testbed: {host} provisioned\n", "")
    work = provision.Provisioner(Site(topo), profiles.load("default"), ssh=FakeSSH(),
                                 bundles={h: bundle for h in topo.hosts})
    with work:
        with pytest.raises(TestbedError, match="provisioning failed on dtn$"):
            work.finish(topo.hosts)
    assert tries["cm1"] == 3 and tries["dtn"] == 1
    assert "cm1: SSH did not connect (Connection timed out during banner exchange); again in 0 s (1 of 6)" in \
        capsys.readouterr().out


def test_a_vm_that_already_runs_counts_as_booted_without_a_second_attempt(capsys):
    # `vagrant up` of running VMs prints no "Machine booted and ready" (seen on a second `./tb demo`)
    handed = []
    run = lifecycle.VagrantRun(Path("/dev/null"), time.monotonic(), {}, on_booted=handed.append)
    for line in ["==> cm1: Machine not provisioned because `--no-provision` is specified.",
                 "==> cm1: Machine not provisioned because `--no-provision` is specified.",
                 "==> cm1: Running action triggers after up ..."]:
        run._step(line)
    assert "booted" in run.steps["cm1"] and handed == ["cm1"]


def test_an_interrupted_bring_up_ends_the_vagrant_processes_still_running(tmp_path):
    """Vagrant finishes its action under way on a Ctrl-C and holds the machine's lock until
    then: `stop` ends it, so that the tear-down's `vagrant destroy` is not refused."""
    import threading
    run = lifecycle.VagrantRun(tmp_path / "log", time.monotonic(), {})
    worker = threading.Thread(target=run, args=(["sleep", "300"], dict(os.environ)), daemon=True)
    worker.start()
    for _ in range(100):
        if run.running:
            break
        time.sleep(0.05)
    proc = next(iter(run.running))
    assert run.stop(grace=5) == 1 and proc.poll() is not None
    worker.join(timeout=5)
    assert not worker.is_alive() and not run.running and run.stop() == 0


def test_the_bringup_floor_is_its_cpu_seconds_over_the_cores(tmp_path):
    from testbed.machines import hostload
    cpu = {"guests": {"cm1": 150.0, "dtn": 250.0}, "tools": 40.0, "booted": {}}
    assert hostload.floor(cpu, 330.0, cores=2) == {"cpu_seconds": 440.0, "cores": 2, "floor_seconds": 220.0,
                                                  "over_floor": 1.5}
    assert hostload.floor({"guests": {}, "tools": 0.0}, 10.0, cores=2)["over_floor"] is None


def test_a_vms_cpu_seconds_come_from_its_qemu_process(tmp_path):
    import os
    from testbed.machines import hostload
    topo = topology.load("small")
    proc = tmp_path / "101"
    proc.mkdir()
    (proc / "cmdline").write_bytes(b"/usr/bin/qemu-system-x86_64\0-name\0guest=tb-small-cm1,debug-threads=on\0")
    hz = os.sysconf("SC_CLK_TCK")
    (proc / "stat").write_text(f"101 (qemu-system-x86) S " + " ".join(["0"] * 10) + f" {30 * hz} {12 * hz} 0 0\n")
    assert hostload.cpu_seconds(topo, tmp_path) == {"cm1": 42.0}


def test_a_vms_vcpu_threads_wait_for_host_cores_as_their_schedstat_says(tmp_path):
    from testbed.machines import hostload
    topo = topology.load("small")
    proc = tmp_path / "101"
    (proc / "task").mkdir(parents=True)
    (proc / "cmdline").write_bytes(b"/usr/bin/qemu-system-x86_64\0-name\0guest=tb-small-worker1,debug-threads=on\0")

    def thread(tid, comm, ran_s, waited_s):
        d = proc / "task" / tid
        d.mkdir(exist_ok=True)
        (d / "comm").write_text(comm + "\n")
        (d / "schedstat").write_text(f"{int(ran_s * 1e9)} {int(waited_s * 1e9)} 7\n")
    thread("101", "qemu-system-x86", 3.0, 1.0)     # the main loop: not a vCPU
    thread("104", "CPU 0/TCG", 10.0, 2.0)
    thread("105", "CPU 1/TCG", 10.0, 1.0)
    before = hostload.vcpu_schedstat(topo, "worker1", tmp_path)
    assert before == {"104": (10.0, 2.0), "105": (10.0, 1.0)}
    thread("104", "CPU 0/TCG", 14.0, 3.0)
    thread("105", "CPU 1/TCG", 14.0, 5.0)
    after = hostload.vcpu_schedstat(topo, "worker1", tmp_path)
    assert hostload.vcpu_wait_share(before, after, 8.0) == 0.5     # CPU 1 waited 4 s of 8
    assert hostload.vcpu_schedstat(topo, "cm1", tmp_path) == {}   # not a VM of this machine
    assert hostload.vcpu_wait_share({}, after, 8.0) is None


def test_tb_started_is_read_as_tb_writes_it_and_both_its_readers_skip_anything_else():
    from testbed import cli
    from testbed.cli.common import tb_started
    from testbed.cli.experiment_commands import PhaseClock
    assert tb_started({"TB_STARTED": "1000"}) == 1000.0 and tb_started({"TB_STARTED": "1000.5"}) == 1000.5
    for env in ({}, {"TB_STARTED": ""}, {"TB_STARTED": "soon"}, {"TB_STARTED": "-5"}):
        assert tb_started(env) is None and PhaseClock(now=lambda: 100.0, env=env).rows == []
        cli.note_setup_seconds(env, now=100.0)
        assert "TB_SETUP_SECONDS" not in env


def test_a_bring_up_records_the_host_set_up_that_tb_spent_before_it(monkeypatch):
    from testbed import cli
    env = {"TB_STARTED": "1000.0"}
    cli.note_setup_seconds(env, now=1051.26)
    assert env["TB_SETUP_SECONDS"] == "51.3"
    cli.note_setup_seconds(env, now=2000.0)          # a command started by another keeps the first
    assert env["TB_SETUP_SECONDS"] == "51.3"
    monkeypatch.setenv("TB_SETUP_SECONDS", env["TB_SETUP_SECONDS"])
    assert lifecycle.setup_seconds() == 51.3
    monkeypatch.delenv("TB_SETUP_SECONDS")
    assert lifecycle.setup_seconds() is None
    empty = {}
    cli.note_setup_seconds(empty)                    # `python -m testbed` without ./tb: nothing to say
    assert empty == {}


def test_a_kept_bring_up_gives_the_first_run_pages_times_and_floor(tmp_path):
    from testbed.model import topology
    from testbed.report import site_sections
    from testbed.results import bringup_record
    record = {"topology": "small", "began": "2026-11-29T11:30:10Z", "box_built": True, "setup_seconds": 51.0,
              "phases": {"box": 137.2, "boot": 639.6, "provision": 675.0, "healthy": 711.4},
              "cpu": {"guests": {"dtn": 300.0, "cm1": 150.0}, "tools": 50.0, "cores": 2}, "vms": {}}
    path = bringup_record.keep(record, topology.load("small"), tmp_path, accel="tcg", host={"cores": 2})
    assert path.name == "small-20261129T113010Z.json"
    [kept] = bringup_record.load_all(tmp_path)
    f = bringup_record.figures(kept)
    assert f["setup"] == 51.0 and f["box_built"] and f["healthy"] == 711.4
    # the floor is over the bring-up after the box: 500 CPU s / 2 cores = 250 s against 574.2 s
    assert f["floor_seconds"] == 250.0 and f["over_floor"] == round(574.2 / 250, 2)
    text = site_sections.bringup_costs_section(tmp_path)
    assert "| `small` | 5 | 2026-11-29 | 51 s | 137 s (built) | 640 s | 675 s | 711 s |" in text
    assert "2.3x" in text and "TCG, 2 cores" in text
    assert "No bring-up is kept" in site_sections.bringup_costs_section(tmp_path / "none")
    older = {k: v for k, v in record.items() if k not in ("began", "setup_seconds", "box_built")}
    bringup_record.keep(older | {"written": "2026-11-28T09:00:00Z"}, topology.load("small"), tmp_path,
                        accel="tcg", host={"cores": 2})
    first = site_sections.bringup_costs_section(tmp_path).splitlines()[2]   # oldest first, by when written
    assert first.startswith("| `small` | 5 | 2026-11-28 | - | 137 s |")
