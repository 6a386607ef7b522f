"""Files into and out of a box's disk image without mounting it (qemu-img and debugfs).

The box image is one ext4 file system in a qcow2 file (provision/box/build-debian.sh makes
it with `mkfs.ext4 -d`). A patched box is a raw copy of the stock image with files replaced
by debugfs, checked by reading them back and by `e2fsck -fn`, then converted to qcow2 again.
debugfs exits 0 even when a command fails, so its error output is the test."""
import hashlib
import shlex
import subprocess
import tempfile
from pathlib import Path

from testbed.model.errors import TestbedError

BANNER = "debugfs "   # "debugfs 1.47.0 (5-Feb-2023)" on stderr: not an error


class ImageError(TestbedError):
    def __init__(self, log, why):
        self.log = Path(log)
        super().__init__(f"box build --patch: step image failed: {why}; see {log}")


class RawImage:
    """A raw ext4 image being edited; every command's output goes to `log`."""

    def __init__(self, path, log, run=subprocess.run):
        self.path, self.log, self.run = Path(path), Path(log), run

    def _call(self, argv, why):
        with open(self.log, "a") as out:
            out.write(f"$ {shlex.join(str(a) for a in argv)}\n")
            proc = self.run([str(a) for a in argv], capture_output=True, text=True)
            out.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise ImageError(self.log, f"{why} (`{Path(str(argv[0])).name}` exited {proc.returncode})")
        return proc

    @classmethod
    def from_qcow2(cls, qcow2, raw, log, run=subprocess.run):
        image = cls(raw, log, run)
        image._call(["qemu-img", "convert", "-O", "raw", qcow2, raw], f"cannot read {qcow2}")
        return image

    def to_qcow2(self, qcow2):
        self._call(["qemu-img", "convert", "-O", "qcow2", self.path, qcow2], f"cannot write {qcow2}")

    def debugfs(self, commands, write=False):
        """Run debugfs commands; any error line it prints is an ImageError."""
        with tempfile.NamedTemporaryFile("w", suffix=".debugfs", delete=False) as script:
            script.write("\n".join(commands) + "\n")
        try:
            proc = self._call(["debugfs", *(["-w"] if write else []), "-f", script.name, self.path],
                              "debugfs failed")
        finally:
            Path(script.name).unlink(missing_ok=True)
        errors = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(BANNER)]
        if errors:
            raise ImageError(self.log, f"debugfs: {errors[0]}")
        return proc.stdout

    def exists(self, path):
        proc = self.run(["debugfs", "-R", f"stat {path}", str(self.path)], capture_output=True, text=True)
        return proc.returncode == 0 and "Inode:" in proc.stdout

    def read(self, path, dest):
        """Copy a file out of the image; returns its sha256."""
        self.debugfs([f"dump -p {path} {dest}"])
        if not Path(dest).exists():
            raise ImageError(self.log, f"{path} is not in the image")
        return sha256(dest)

    def install(self, local, path, keep_as=None, mode="0100755"):
        """Put `local` at `path` (root-owned, `mode`) over the file there, which stays in the
        image as `keep_as` when given."""
        if not self.exists(path):
            raise ImageError(self.log, f"{path} is not in the image (is this the stock box?)")
        if keep_as and self.exists(keep_as):
            raise ImageError(self.log, f"{keep_as} is already in the image (is this the stock box?)")
        commands = [f"ln {path} {keep_as}", f"unlink {path}"] if keep_as else [f"rm {path}"]
        commands += [f"write {local} {path}", f"sif {path} mode {mode}", f"sif {path} uid 0", f"sif {path} gid 0"]
        self.debugfs(commands, write=True)

    def add(self, local, path, mode="0100644"):
        """Put `local` at `path`, root-owned; nothing may be there yet."""
        if self.exists(path):
            raise ImageError(self.log, f"{path} is already in the image (is this the stock box?)")
        self.debugfs([f"write {local} {path}", f"sif {path} mode {mode}", f"sif {path} uid 0",
                      f"sif {path} gid 0"], write=True)

    def mkdir(self, path):
        missing = []
        for parent in [*reversed(Path(path).parents), Path(path)]:
            if str(parent) != "/" and not self.exists(parent):
                missing.append(f"mkdir {parent}")
        if missing:
            self.debugfs(missing, write=True)

    def check(self):
        self._call(["e2fsck", "-fn", self.path], "the edited file system does not check clean")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
