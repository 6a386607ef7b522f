"""The host ledger: what the project changed on this machine outside its folders, listed
and undone newest first, only what it lists."""
import subprocess

import pytest

from testbed import PROJECT_ROOT, cli
from testbed.machines import host_ledger
from testbed.model.errors import TestbedError


def test_notes_are_kept_once_in_order_and_parsed():
    host_ledger.note("daemon", "virtlogd")
    host_ledger.note("line", "/etc/libvirt/qemu.conf namespaces = []")
    host_ledger.note("daemon", "virtlogd")
    assert host_ledger.changes() == [host_ledger.Change("daemon", "virtlogd"),
                                     host_ledger.Change("line", "/etc/libvirt/qemu.conf namespaces = []")]
    with pytest.raises(ValueError):
        host_ledger.note("sysctl", "x")


def test_a_damaged_ledger_line_names_the_file_and_line():
    host_ledger.path().parent.mkdir(parents=True, exist_ok=True)
    host_ledger.path().write_text("package\tvagrant\nrubbish\n")
    with pytest.raises(TestbedError, match=r"host-ledger:2: not a change of the host ledger: 'rubbish'"):
        host_ledger.changes()


def test_a_folder_is_noted_only_when_the_project_makes_it(tmp_path):
    host_ledger.note_dir(tmp_path)                  # exists: not ours
    host_ledger.note_dir("/var/nonexistent-grid-testbed-x")
    assert host_ledger.changes() == [host_ledger.Change("dir", "/var/nonexistent-grid-testbed-x")]


def test_undo_goes_newest_first_keeps_what_failed_and_purges_packages_once(tmp_path):
    conf = tmp_path / "qemu.conf"
    conf.write_text("user = root\nnamespaces = []\n")
    made = tmp_path / "made"
    made.mkdir()
    for kind, what in (("package", "vagrant"), ("package", "ruby-libvirt"), ("daemon", "virtlogd"),
                       ("daemon", "libvirtd"), ("line", f"{conf} namespaces = []"), ("pool", "default"),
                       ("box", "grid-testbed-debian13-abc"), ("dir", str(made))):
        host_ledger.note(kind, what)
    ran, boxes, said = [], [], []

    def run(argv):
        ran.append(argv)
        return (1, "error: failed to get pool 'default'") if argv[-2:] == ["pool-undefine", "default"] else (0, "")
    failed = host_ledger.undo(lambda name, log: boxes.append(name), run=run, echo=said.append)
    assert conf.read_text() == "user = root\n" and not made.exists() and boxes == ["grid-testbed-debian13-abc"]
    assert ran.index(["pkill", "-x", "libvirtd"]) < ran.index(["pkill", "-x", "virtlogd"])   # newest first
    assert ran[-1] == ["apt-get", "purge", "-y", "-qq", "vagrant", "ruby-libvirt"]
    assert failed == [host_ledger.Change("pool", "default")]
    assert host_ledger.changes() == failed                     # kept, to be tried again
    assert any("libvirt storage pool default defined: error" in line for line in said)


def test_undo_of_everything_removes_the_ledger_and_the_mask_marker(tmp_path, monkeypatch):
    marker = tmp_path / "masked"
    marker.write_text("")
    monkeypatch.setattr(host_ledger, "MASK_FILES", (str(marker),))
    host_ledger.note("daemon", "libvirtd")
    assert host_ledger.undo(lambda name, log: None, run=lambda argv: (0, ""), echo=lambda line: None) == []
    assert not host_ledger.path().exists()
    assert not marker.exists()   # else the next set-up would start libvirtd unmasked on a TCG host


def test_the_cli_lists_and_refuses_to_undo_while_a_site_is_up(monkeypatch, capsys):
    assert cli.main(["host", "changes"]) == 0
    assert "made no change" in capsys.readouterr().out
    host_ledger.note("daemon", "virtlogd")
    assert cli.main(["host", "changes"]) == 0
    assert "virtlogd started by the project" in capsys.readouterr().out
    from testbed.machines import domains
    monkeypatch.setattr(domains, "testbed_domains", lambda: ["tb-small-cm1"])
    assert cli.main(["host", "undo"]) == 2
    err = capsys.readouterr().err
    assert "the testbed's VMs tb-small-cm1 still exist" in err and len(err.strip().splitlines()) == 1


def test_the_setup_scripts_note_before_they_change(tmp_path):
    """ledger.sh's ledger_note: once per line, in the file the environment names."""
    ledger = tmp_path / "l"
    script = (f". {PROJECT_ROOT}/provision/host/ledger.sh; ledger_note package vagrant; "
              "ledger_note package vagrant; ledger_note line '/etc/x a = b'")
    subprocess.run(["bash", "-c", script], check=True, env={"TESTBED_HOST_LEDGER": str(ledger), "PATH": "/usr/bin:/bin"})
    assert ledger.read_text() == "package\tvagrant\nline\t/etc/x a = b\n"
    for name in ("setup.sh", "libvirtd.sh"):   # every change of the set-up goes through it
        text = (PROJECT_ROOT / "provision" / "host" / name).read_text()
        assert "ledger.sh" in text and "ledger_note" in text
