"""Per-testbed state outside git: SSH key, pool password, rendered host files."""
import json
import os
import secrets
import subprocess
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.errors import TestbedError


PRIVATE_DIR = 0o700


def state_root():
    return Path(os.environ.get("TESTBED_STATE_DIR", PROJECT_ROOT / ".testbed"))


def private_dir(path):
    """Make `path` a folder only its owner can enter: created 0700, an older looser one tightened."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(PRIVATE_DIR)
    return path


def write_json(path, data):
    """`data` as JSON at `path`, replaced in one rename: a reader (or a command stopped
    halfway) sees the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def write_private(path, data, replace=True):
    """Write bytes or text to a new file that is 0600 from its creation; an old file is
    removed first when `replace`, else it is an error (FileExistsError)."""
    path = Path(path)
    if replace:
        path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    return path


class TestbedState:
    __test__ = False  # not a pytest class

    """Files that belong to one testbed (one topology in one checkout)."""

    def __init__(self, topology_name, root=None):
        self.dir = Path(root or state_root()) / topology_name
        self.ssh_key = self.dir / "ssh" / "id_ed25519"
        self.pool_password = self.dir / "secrets" / "pool-password"
        self.hosts_dir = self.dir / "hosts"
        self.profile_record = self.dir / "profile-in-force.json"
        self.wan_record = self.dir / "wan-in-force.json"
        self.quiet_record = self.dir / "quiet-in-force.json"   # guests a run paused or pinned

    def ensure_dirs(self):
        """The testbed's folder and its ssh/, secrets/ and hosts/ folders, all 0700: they
        hold the pool password, the SSH key and bundles carrying both."""
        self.dir.parent.mkdir(parents=True, exist_ok=True)  # shared by every topology
        for path in (self.dir, self.ssh_key.parent, self.pool_password.parent, self.hosts_dir):
            private_dir(path)
        return self

    def ensure_secrets(self):
        """Generate the SSH key and the pool password once per testbed."""
        self.ensure_dirs()
        if not self.ssh_key.exists():
            try:
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                f"testbed-{self.dir.name}", "-f", str(self.ssh_key)],
                               check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                raise TestbedError(f"{self.ssh_key}: cannot generate the testbed SSH key: {exc}") from None
        if not self.pool_password.exists():
            write_private(self.pool_password, secrets.token_urlsafe(32), replace=False)
        return self

    def host_dir(self, host):
        return self.hosts_dir / host
