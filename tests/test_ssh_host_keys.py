"""A VM's SSH host key is pinned when it is provisioned and checked on every connection."""
import pytest

from testbed.model import topology
from testbed.model.errors import RemoteError
from testbed.model.state import TestbedState
from testbed.remote.ssh import SSH, Result, forget_host_key, guest_known_hosts


@pytest.fixture
def ssh(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    return SSH(topo, TestbedState(topo.name))


def test_a_vm_is_reached_with_its_pinned_key_under_one_alias_whatever_the_address(ssh):
    site = ssh.argv("worker1")
    assert "StrictHostKeyChecking=accept-new" in site and "StrictHostKeyChecking=no" not in site
    assert f"UserKnownHostsFile={guest_known_hosts(ssh.state)}" in site and "UserKnownHostsFile=/dev/null" not in site
    mgmt = SSH(ssh.topo, ssh.state, addresses={"worker1": "192.168.121.9"}).argv("worker1")
    assert "HostKeyAlias=small-worker1" in site and "HostKeyAlias=small-worker1" in mgmt


def test_a_changed_key_is_one_line_naming_the_vm_even_unchecked(ssh, monkeypatch):
    stderr = ("@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
              "Host key verification failed.\n")
    monkeypatch.setattr(ssh, "_run", lambda *a, **k: Result("worker1", 255, "", stderr))
    monkeypatch.setattr(ssh, "check_alive", lambda host: None)
    with pytest.raises(RemoteError) as err:
        ssh.run("worker1", "true", check=False)
    text = str(err.value)
    assert text.startswith("worker1: its SSH host key is not the one pinned") and "\n" not in text
    assert "testbed -t small provision worker1" in text


def test_forgetting_a_key_drops_that_vm_only(ssh):
    path = guest_known_hosts(ssh.state)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("small-worker1 ssh-ed25519 AAAA1\nsmall-submit ssh-ed25519 AAAA2\nsmall-worker10 ssh-ed25519 AAAA3\n")
    forget_host_key(ssh.state, ssh.topo, "worker1")
    assert path.read_text() == "small-submit ssh-ed25519 AAAA2\nsmall-worker10 ssh-ed25519 AAAA3\n"
    forget_host_key(ssh.state, ssh.topo, "nohost")  # nothing pinned: nothing to do
    path.unlink()
    forget_host_key(ssh.state, ssh.topo, "worker1")  # no file yet: nothing to do


def test_provisioning_forgets_the_old_key_before_it_connects(ssh, monkeypatch):
    from testbed.machines import provision
    path = guest_known_hosts(ssh.state)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("small-worker1 ssh-ed25519 OLD\n")
    seen = []

    class Fake:
        def run(self, host, command, check, input_bytes):
            seen.append(path.read_text())
            return Result(host, 0, "testbed: ok\n", "")

    work = provision.Provisioner.__new__(provision.Provisioner)
    work.topo, work.ssh, work.state = ssh.topo, Fake(), ssh.state
    work.bundles = {"worker1": type("B", (), {"read_bytes": lambda self: b""})()}
    work.command, work.existing_command, work.started = "true", "true", 0.0
    assert work._one("worker1") and seen == [""]


def test_closing_masters_exits_each_open_one_and_leaves_no_socket(ssh, monkeypatch):
    import subprocess
    sockets = ssh.state.dir / "ssh"
    sockets.mkdir(parents=True, exist_ok=True)
    for name in ("cm-worker1", "cm-dtn-mgmt"):
        (sockets / name).write_text("")
    exited = []

    def fake_run(argv, **kwargs):
        exited.append(argv)
        if "cm-dtn-mgmt" in argv[2]:
            raise subprocess.TimeoutExpired(argv, 10)   # a master that does not answer
        return subprocess.CompletedProcess(argv, 0)
    monkeypatch.setattr(subprocess, "run", fake_run)
    ssh.close_masters()
    assert sorted(a[2] for a in exited) == [f"ControlPath={sockets / 'cm-dtn-mgmt'}",
                                            f"ControlPath={sockets / 'cm-worker1'}"]
    assert all(a[0] == "ssh" and a[3:5] == ["-O", "exit"] for a in exited)
    assert not list(sockets.iterdir())
    ssh.close_masters()   # none open: nothing to run
    assert len(exited) == 2
