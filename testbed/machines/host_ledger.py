"""The host ledger: every change the project made to this machine outside its own folders
(packages, a libvirt setting, daemons it started, libvirt's storage pool, boxes, folders
under /var), one line each, written before the change and only when the change is made.
provision/host/ledger.sh writes the set-up's lines; the box build and the plan write theirs
here. `testbed host changes` lists them; `testbed host undo` undoes them, newest first,
and then the machine is as the project found it."""
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testbed.model.errors import TestbedError

KINDS = ("package", "line", "daemon", "restarted", "pool", "box", "dir")
VIRSH = ["virsh", "-c", "qemu:///system"]
# provision/host/libvirtd.sh's marker of a masked libvirtd and the file it masks /dev/kvm with
MASK_FILES = ("/run/testbed-libvirtd-kvm-masked", "/run/testbed-kvm-mask")


def path():
    return Path(os.environ.get("TESTBED_HOST_LEDGER", "/var/lib/grid-testbed/host-ledger"))


@dataclass(frozen=True)
class Change:
    kind: str
    what: str

    def describe(self):
        return {"package": f"apt package {self.what} installed",
                "line": f"line added to {self.what.split(' ', 1)[0]}: {self.what.split(' ', 1)[-1]}",
                "daemon": f"{self.what} started by the project",
                "restarted": f"the host's {self.what} restarted with /dev/kvm masked",
                "pool": f"libvirt storage pool {self.what} defined",
                "box": f"Vagrant box {self.what} added (and libvirt's base volume made from it)",
                "dir": f"folder {self.what} made"}[self.kind]


def note(kind, what):
    """Add a change before it is made (a change listed already is not listed again)."""
    if kind not in KINDS:
        raise ValueError(kind)
    line = f"{kind}\t{what}"
    ledger = path()
    ledger.parent.mkdir(parents=True, exist_ok=True)
    if line not in (ledger.read_text().splitlines() if ledger.exists() else []):
        with open(ledger, "a") as fh:
            fh.write(line + "\n")


def note_dir(folder):
    """Note a folder under /var the project is about to make (not one that is there)."""
    folder = Path(folder)
    if not folder.exists() and str(folder).startswith("/var/"):
        note("dir", str(folder))


def changes():
    """[Change] in the order they were made; a line that is not KIND<TAB>WHAT is an error
    naming the ledger and the line."""
    ledger = path()
    if not ledger.exists():
        return []
    out = []
    for number, line in enumerate(ledger.read_text().splitlines(), 1):
        kind, sep, what = line.partition("\t")
        if not line.strip():
            continue
        if not sep or kind not in KINDS or not what:
            raise TestbedError(f"{ledger}:{number}: not a change of the host ledger: {line!r}")
        out.append(Change(kind, what))
    return out


def _run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode, (proc.stderr or proc.stdout).strip()


def undo(remove_box, run=_run, echo=print):
    """Undo every change, newest first; the ledger keeps the ones that failed (said on the
    way) and is removed when none did. Returns the changes that failed. `remove_box(name,
    log)` removes a box the project built (machines/box.py, which notes boxes here)."""
    failed = []
    todo = changes()
    packages = [c.what for c in todo if c.kind == "package"]
    for change in reversed([c for c in todo if c.kind != "package"]):
        problem = _undo_one(change, run, remove_box)
        echo(f"undo: {change.describe()}: {problem or 'undone'}")
        if problem:
            failed.append(change)
    if packages:  # one apt call: it orders the removals itself
        rc, out = run(["apt-get", "purge", "-y", "-qq", *packages])
        echo(f"undo: apt purge of {len(packages)} package(s) the project installed: "
             + ("done" if rc == 0 else f"failed: {out[-200:]}"))
        if rc != 0:
            failed += [c for c in todo if c.kind == "package"]
    kept = [c for c in todo if c in failed]
    if kept:
        path().write_text("".join(f"{c.kind}\t{c.what}\n" for c in kept))
    else:
        path().unlink(missing_ok=True)
        note_parent = path().parent
        if note_parent.exists() and not any(note_parent.iterdir()):
            note_parent.rmdir()
    return failed


def _forget_mask():
    """libvirtd.sh's record that libvirtd runs with /dev/kvm masked: a libvirtd started later
    must not be taken for that one (the next set-up masks it again)."""
    for marker in MASK_FILES:
        Path(marker).unlink(missing_ok=True)


def _undo_one(change, run, remove_box):
    """None when undone, else what went wrong."""
    if change.kind == "line":
        target, _, text = change.what.partition(" ")
        file = Path(target)
        if file.exists():
            lines = file.read_text().splitlines(keepends=True)
            file.write_text("".join(l for l in lines if l.rstrip("\n") != text))
        return None
    if change.kind == "daemon":
        rc, out = run(["pkill", "-x", change.what])
        _forget_mask()
        return None if rc in (0, 1) else out      # 1: not running any more
    if change.kind == "restarted":
        run(["pkill", "-x", change.what])
        _forget_mask()
        rc, out = run(["systemctl", "start", change.what]) if Path("/run/systemd/system").exists() \
            else run([change.what, "-d"])
        return None if rc == 0 else out
    if change.kind == "pool":
        run(VIRSH + ["pool-destroy", change.what])
        rc, out = run(VIRSH + ["pool-undefine", change.what])
        return None if rc == 0 or "not found" in out.lower() or "no storage pool" in out.lower() else out
    if change.kind == "box":
        remove_box(change.what, log=lambda line: None)
        return None
    if change.kind == "dir":
        shutil.rmtree(change.what, ignore_errors=True)
        return None if not Path(change.what).exists() else "still there"
    return f"unknown kind {change.kind}"
