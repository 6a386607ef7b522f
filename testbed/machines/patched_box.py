"""A box of its own: the stock Debian box with HTCondor daemons rebuilt from patched source.

`testbed box build --patch FILE...` and a topology's `box: debian13+patch:NAME` come here.
The box is named `<stock box>-patched-<hash>` (hash of the source, the patches and the build
recipe, testbed/machines/daemon_build.py) and cached beside the stock box, which it never
changes: its image is a copy of the stock image with each rebuilt daemon written over the
packaged one (kept as `<daemon>.debian`) and constants.BOX_PATCHES_FILE listing the patches.
Its recipe.json records the patches and their hashes, the source, the chroot, the binaries
and the build's timings. A stock build never prunes a patched box, and a patched build
prunes only patched boxes made from another stock box.
"""
import json
import re
import shutil
import time
from pathlib import Path

from testbed.machines.box import Box, cache_root, remove_box
from testbed.machines.box_image import ImageError, RawImage, sha256
from testbed.machines.daemon_build import DaemonBuild, digest, remove_tree
from testbed.model import constants as c
from testbed.model.clock import utc_iso
from testbed.model.errors import TestbedError

BOX_FILES = ("vmlinuz", "initrd.img", "metadata.json", "Vagrantfile")   # as the stock box has them
PATCHED = re.compile(r"^(?P<base>grid-testbed-[a-z0-9]+-[0-9a-f]{12})-patched-(?P<hash>[0-9a-f]{12})$")


def copy_plain(source, target):
    """Bytes and mode only: no extended attributes. libvirt's DAC driver keeps the owner it
    will restore and a use count in `trusted.libvirt.security.*` on a kernel that running
    guests boot (the stock box's, while a site is up); copied along, they make libvirt refuse
    to start a guest from the copy ("Setting different DAC user or group ... already in use")."""
    shutil.copyfile(source, target)
    shutil.copymode(source, target)


class PatchedBox(Box):
    def __init__(self, patch_files, base=None, mirror=None, daemons=None):
        self.base = base or Box("debian13")
        self.kind, self.release = self.base.kind, None
        self.flavour = getattr(self.base, "flavour", self.kind)
        self.daemons = daemons or DaemonBuild(patch_files, mirror=mirror)
        self.hash = digest(self.base.hash, self.daemons.recipe_hash)[:12]
        self.name = f"{self.base.name}-patched-{self.hash}"
        self.dir = cache_root() / "boxes" / self.name
        self.kernel = self.dir / "vmlinuz"
        self.initrd = self.dir / "initrd.img"

    @property
    def patches(self):
        return self.daemons.patches

    def recipe(self):
        path = self.dir / "recipe.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def build(self, mirror=None, force=False, log=print):
        """Rebuild the daemons (cached), make the image (if they changed), register it with
        Vagrant. The stock box must be built; it is only read. Returns seconds spent."""
        start = time.monotonic()
        if not self.base.built:
            raise TestbedError(f"box build --patch: the stock box {self.base.name} is not built; "
                               "run `testbed box build` first")
        self.daemons.echo = log
        binaries = self.daemons.build(self.base.versions().get("condor"), force=force)
        made = json.loads((binaries / "build.json").read_text())
        if force or not self.built or self.recipe().get("daemons_key") != made["key"]:
            log(f"making box {self.name} from {self.base.name} and the rebuilt "
                f"{', '.join(made['daemons'])}")
            self.make(binaries, made)
        else:
            log(f"box {self.name} is up to date (patches {self.describe()})")
        if force or not self.registered():
            self.register(log)
            self.prune(log)
        return time.monotonic() - start

    def describe(self):
        return ", ".join(f"{p.name} {p.sha256[:12]}" for p in self.patches)

    def make(self, binaries, made):
        partial = self.dir.with_name(self.dir.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log = partial / "image.log"
        started = time.monotonic()
        image = RawImage.from_qcow2(self.base.dir / "box.img", partial / "root.raw", log)
        self.check_libraries(image, partial)
        for daemon, info in made["daemons"].items():
            installed = info["installs"]
            image.install(binaries / "bin" / daemon, installed, keep_as=installed + c.PACKAGED_SUFFIX)
            if image.read(installed, partial / f"{daemon}.check") != info["sha256"]:
                raise ImageError(log, f"{installed} read back from the image is not the rebuilt {daemon}")
            (partial / f"{daemon}.check").unlink()
        listing = partial / "condor-patches"
        listing.write_text("".join(f"{p['name']}:{p['sha256']}\n" for p in made["patches"]))
        image.mkdir(Path(c.BOX_PATCHES_FILE).parent)
        image.add(listing, c.BOX_PATCHES_FILE, mode="0100644")
        listing.unlink()
        image.check()
        image.to_qcow2(partial / "box.img")
        (partial / "root.raw").unlink()
        for name in BOX_FILES:
            copy_plain(self.base.dir / name, partial / name)
        versions = (self.base.dir / "versions.txt").read_text()
        patches = ",".join(f"{p['name']}:{p['sha256'][:12]}" for p in made["patches"])
        (partial / "versions.txt").write_text(versions.rstrip("\n") + f"\ncondor-patches {patches}\n")
        recipe = {"hash": self.hash, "kind": self.kind, "name": self.name,
                  "built": utc_iso(),
                  "base": {"name": self.base.name, "hash": self.base.hash},
                  "patches": made["patches"], "source": made["source"], "chroot": made["chroot"],
                  "daemons": made["daemons"], "daemons_key": made["key"], "daemons_dir": str(binaries),
                  "timings_s": {**made["timings_s"], "image": round(time.monotonic() - started, 1)}}
        (partial / "recipe.json").write_text(json.dumps(recipe, indent=1) + "\n")
        remove_tree(self.dir)
        partial.chmod(0o755)
        partial.rename(self.dir)

    def check_libraries(self, image, scratch):
        """The packaged libraries the daemons were linked against are, byte for byte, the box's."""
        for lib in sorted(set(c.CONDOR_PACKAGED_LIBS.values())):
            ours = self.daemons.chroot / lib.lstrip("/")
            theirs = image.read(lib, scratch / Path(lib).name)
            (scratch / Path(lib).name).unlink()
            if not ours.exists() or sha256(ours) != theirs:
                raise ImageError(image.log, f"{lib} in the build chroot is not the box's (the rebuilt daemon "
                                            "links against it)")

    def stale(self, names):
        """Patched boxes made from a stock box other than this one's base; never a stock box."""
        return [n for n in names if (m := PATCHED.match(n)) and m["base"] != self.base.name]

    def prune(self, log=print):
        for name in self.stale(sorted(p.name for p in (cache_root() / "boxes").glob("grid-testbed-*"))):
            remove_box(name, log)


def box_for(spec, mirror=None):
    """The box a BoxSpec boots: the stock box, or the stock box with its patches."""
    if spec.patches:
        return PatchedBox(spec.patches, mirror=mirror)
    return Box("debian13", release=spec.release)   # el9 boots Vagrant Cloud's box; the plan names this one's kernel only
