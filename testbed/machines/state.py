"""Per-testbed state outside git: SSH key, pool password, rendered host files."""
import os
import secrets
import subprocess
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.errors import TestbedError


def state_root():
    return Path(os.environ.get("TESTBED_STATE_DIR", PROJECT_ROOT / ".testbed"))


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

    def ensure_secrets(self):
        """Generate the SSH key and the pool password once per testbed."""
        if not self.ssh_key.exists():
            self.ssh_key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                f"testbed-{self.dir.name}", "-f", str(self.ssh_key)],
                               check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                raise TestbedError(f"{self.ssh_key}: cannot generate the testbed SSH key: {exc}") from None
        if not self.pool_password.exists():
            self.pool_password.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.pool_password, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(32))
        return self

    def host_dir(self, host):
        return self.hosts_dir / host
