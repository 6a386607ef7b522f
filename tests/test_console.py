"""A dead guest fails a wait at once: the console log names how its kernel died, and the SSH
layer raises GuestDown when a command could not reach such a guest."""
import time

import pytest

from testbed.model import topology
from testbed.model.errors import GuestDown
from testbed.model.state import TestbedState
from testbed.remote import console
from testbed.remote.ssh import SSH, Result
from testbed.services import health
from testbed.services.gateway import Schedd

BOOT = "\nDebian GNU/Linux 13 tb-small-submit ttyS0\n\ntb-small-submit login: "
PANIC = ("[ 3165.201] traps: PANIC: double fault, error_code: 0x0\n"
         "[ 3165.202] RIP: 0010:__kmalloc_cache_noprof+0x4c/0x2f0\n"
         "[ 3165.300] Kernel panic - not syncing: Fatal exception in interrupt\n")


@pytest.fixture
def consoles(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_CONSOLE_DIR", str(tmp_path))
    return tmp_path


def write(consoles, host, text):
    (consoles / f"tb-small-{host}.log").write_text(text)


def test_a_panic_after_the_last_login_prompt_is_a_death(consoles):
    write(consoles, "submit", BOOT + "[  12.0] rcu: INFO: rcu_sched self-detected stall on CPU\n" + PANIC)
    died = console.kernel_death(console.console_log("small", "submit"))
    assert died == "traps: PANIC: double fault, error_code: 0x0"
    # as libvirt writes it: CRLF, and kernel lines after the prompt on its own line
    write(consoles, "cm1", "\r\nDebian GNU/Linux 13 testbed ttyS0\r\n\r\ntestbed login: "
                           "[ 3165.3] Kernel panic - not syncing: Fatal exception\r\n")
    assert console.kernel_death(console.console_log("small", "cm1")) == "Kernel panic - not syncing: Fatal exception"


def test_a_panic_before_a_reboot_is_history_and_stalls_are_not_deaths(consoles):
    write(consoles, "submit", BOOT + PANIC + BOOT)
    assert console.kernel_death(console.console_log("small", "submit")) is None
    write(consoles, "dtn", BOOT + "[ 99.1] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [kworker/0:1]\n")
    assert console.kernel_death(console.console_log("small", "dtn")) is None
    assert console.kernel_death(console.console_log("small", "nowhere")) is None


def test_tail_keeps_the_last_non_empty_lines(consoles):
    write(consoles, "cm1", "one\n\ntwo\nthree\n\n")
    assert console.tail(console.console_log("small", "cm1")) == "two | three"
    assert console.tail(console.console_log("small", "cm2")) == ""


class ScriptedSSH(SSH):
    """SSH with `_run` answering from a table: {host: rc}; a call count per host."""

    def __init__(self, topo, rcs):
        super().__init__(topo, TestbedState(topo.name))
        self.rcs, self.calls = rcs, {}

    def _run(self, host, command, input_bytes=None, timeout=None):
        self.calls[host] = self.calls.get(host, 0) + 1
        rc = self.rcs.get(host, 0)
        return Result(host, rc, "[]#SPLIT#[]" if rc == 0 else "", "" if rc == 0 else "Connection timed out")


def test_an_unreachable_guest_whose_kernel_died_raises_even_unchecked(consoles):
    topo = topology.load("small")
    write(consoles, "submit", BOOT + PANIC)
    ssh = ScriptedSSH(topo, {"submit": 255})
    with pytest.raises(GuestDown) as err:
        ssh.run("submit", "condor_q", check=False)
    assert "submit: the guest's kernel died" in str(err.value)
    assert str(console.console_log("small", "submit")) in str(err.value)
    # alive but unreachable: the caller decides, as before
    write(consoles, "submit", BOOT)
    assert ssh.run("submit", "condor_q", check=False).rc == 255
    # reachable: the console is not read at all, whatever it holds
    write(consoles, "cm1", BOOT + PANIC)
    assert ScriptedSSH(topo, {}).run("cm1", "true").ok


def test_a_job_wait_on_a_dead_schedd_fails_at_its_first_check(consoles):
    topo = topology.load("small")
    write(consoles, "submit", BOOT + PANIC)
    ssh = ScriptedSSH(topo, {"submit": 255})
    started = time.monotonic()
    with pytest.raises(GuestDown):
        Schedd(ssh, "submit").wait(7, 4, timeout=1800, poll=0.01)
    assert ssh.calls["submit"] == 1 and time.monotonic() - started < 5


def test_the_health_wait_fails_at_once_on_a_dead_guest(consoles):
    topo = topology.load("small")
    write(consoles, "worker1", BOOT + PANIC)
    ssh = ScriptedSSH(topo, {"worker1": 255})
    with pytest.raises(GuestDown, match="worker1: the guest's kernel died"):
        health.wait_healthy(topo, ssh, timeout=900, interval=0.01, echo=lambda *_: None)
    assert ssh.calls["worker1"] == 1
