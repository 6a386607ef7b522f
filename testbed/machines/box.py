"""The guest box: built locally from the Debian mirror, cached by recipe hash."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.machines import host_ledger
from testbed.model.clock import utc_iso
from testbed.model.errors import TestbedError

RECIPE_DIR = PROJECT_ROOT / "provision" / "box"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
RECIPES = {
    "debian13": ["build-debian.sh", "configure-guest.sh", "debian-packages.txt", "python-e3.txt"],
}


def cache_root():
    """Outside the repo; readable by libvirt's qemu user, which boots the kernel from here."""
    if os.environ.get("TESTBED_BOX_CACHE"):
        return Path(os.environ["TESTBED_BOX_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/grid-testbed")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "grid-testbed"


def recipe_hash(kind="debian13", recipe_dir=RECIPE_DIR, release=None):
    """The hash of the files a box is built from; a release's file (boxspec.RELEASE_DIR) is one of them."""
    if kind not in RECIPES:
        raise TestbedError(f"box {kind!r} cannot be built here (offline builds: {', '.join(RECIPES)}); "
                           "see docs/architecture/index.md, 'Boxes'")
    digest = hashlib.sha256()
    for path in [Path(recipe_dir) / name for name in RECIPES[kind]] + ([Path(release)] if release else []):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


class Box:
    def __init__(self, kind="debian13", release=None):
        """`release`: the file of another middleware release (`box: debian13+release:NAME`)."""
        self.kind, self.release = kind, release
        self.hash = recipe_hash(kind, release=release)
        self.flavour = f"{kind}-{Path(release).stem}" if release else kind   # what the box's name says
        self.name = f"grid-testbed-{self.flavour}-{self.hash}"
        self.dir = cache_root() / "boxes" / self.name
        self.kernel = self.dir / "vmlinuz"
        self.initrd = self.dir / "initrd.img"

    @property
    def built(self):
        return all((self.dir / f).exists() for f in ("box.img", "vmlinuz", "initrd.img", "metadata.json"))

    def versions(self):
        path = self.dir / "versions.txt"
        if not path.exists():
            return {}
        return dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)

    def registered(self):
        try:
            out = subprocess.run(["vagrant", "box", "list", "--machine-readable"], capture_output=True,
                                 text=True, check=True, cwd=cache_root()).stdout
        except (OSError, subprocess.CalledProcessError):
            return False
        return any(line.split(",")[-1].strip() == self.name for line in out.splitlines()
                   if ",box-name," in line)

    def build(self, mirror=None, force=False, log=print):
        """Build (if the recipe changed) and register with Vagrant. Returns seconds spent."""
        start = time.monotonic()
        if force or not self.built:
            if os.geteuid() != 0:
                raise TestbedError("box build needs root (debootstrap, chroot, loop-free mkfs)")
            host_ledger.note_dir(cache_root())
            tmp = self.dir.with_name(self.dir.name + ".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            log(f"building box {self.name} (recipe hash {self.hash}); this takes a few minutes")
            cmd = ["bash", str(RECIPE_DIR / "build-debian.sh"), str(tmp), mirror or DEFAULT_MIRROR,
                   str(cache_root() / "apt-cache")]
            # the recipe's pip downloads run with this interpreter (the project's venv has pip)
            env = dict(os.environ, TB_HOST_PYTHON=sys.executable)
            if self.release:
                env["TB_RELEASE_FILE"] = str(self.release)
            if subprocess.run(cmd, env=env).returncode != 0:
                raise TestbedError(f"box build failed (recipe {RECIPE_DIR}); see the output above")
            (tmp / "recipe.json").write_text(json.dumps({"hash": self.hash, "kind": self.kind,
                                                         "release": Path(self.release).stem if self.release else None,
                                                         "built": utc_iso()}))
            shutil.rmtree(self.dir, ignore_errors=True)
            tmp.chmod(0o755)
            tmp.rename(self.dir)
        else:
            log(f"box {self.name} is up to date (recipe hash {self.hash})")
        if force or not self.registered():
            self.register(log)
            self.prune(log)
        return time.monotonic() - start

    def register(self, log=print):
        """Add the built box to Vagrant under its name (a box of that name is replaced)."""
        tarball = self.dir / "testbed.box"
        if not tarball.exists():
            subprocess.run(["tar", "-C", str(self.dir), "-cf", str(tarball), "metadata.json",
                            "Vagrantfile", "box.img"], check=True)
        log(f"adding box {self.name} to vagrant")
        host_ledger.note("box", self.name)
        # run outside the project so Vagrant does not load our Vagrantfile
        proc = subprocess.run(["vagrant", "box", "add", "--force", "--name", self.name, str(tarball)],
                              cwd=self.dir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise TestbedError(f"vagrant box add failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        tarball.unlink()  # vagrant keeps its own copy

    def stale(self, names):
        """The boxes among `names` (cached box folders) that this build replaces: the stock
        boxes of this kind with another recipe hash, never a patched box (patched_box.py)."""
        own = re.compile(rf"^grid-testbed-{re.escape(self.flavour)}-[0-9a-f]{{12}}$")
        return [n for n in names if own.match(n) and n != self.name]

    def prune(self, log=print):
        """Drop the boxes this one replaces (`stale`): Vagrant's copy, libvirt's base volume, our cache."""
        for name in self.stale(sorted(p.name for p in (cache_root() / "boxes").glob("grid-testbed-*"))):
            remove_box(name, log)


def remove_box(name, log=print):
    """One box gone: Vagrant's copy, libvirt's base volume made from it, our cached folder."""
    log(f"removing old box {name}")
    subprocess.run(["vagrant", "box", "remove", "--force", "--all", name], cwd=cache_root(),
                   capture_output=True)
    vols = subprocess.run(["virsh", "-c", "qemu:///system", "vol-list", "default"],
                          capture_output=True, text=True).stdout.split()
    for vol in vols:
        if vol.startswith(name + "_vagrant_box_image"):
            subprocess.run(["virsh", "-c", "qemu:///system", "vol-delete", "--pool", "default", vol],
                           capture_output=True)
    shutil.rmtree(cache_root() / "boxes" / name, ignore_errors=True)
