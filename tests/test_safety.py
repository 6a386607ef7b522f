"""Safety: profiles cannot open the pool, secrets stay private, every profile renders or
fails in one line, the DTN never re-creates its array over data, an unanswered
condor_q is an error."""
import os
import re
import stat
import subprocess

import pytest
import yaml

from testbed import PROJECT_ROOT
from testbed.machines import render
from testbed.model.state import TestbedState
from testbed.model import profiles, topology
from testbed.model.errors import ConfigError, RemoteError
from testbed.remote.ssh import Result
from testbed.services import condor, tuning

ROLES = PROJECT_ROOT / "provision" / "roles"


def write_profile(tmp_path, data, name="p"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def one_line_error(path, field):
    with pytest.raises(ConfigError) as err:
        profiles.load(path)
    text = str(err.value)
    assert "\n" not in text and "\r" not in text, text
    assert text.startswith(f"{path}: {field}: "), text
    return text


# --- 1. profiles cannot open the pool or write lines of their own ------------------------
@pytest.mark.parametrize("key, value", [
    ("SCHEDD.ALLOW_WRITE", "*"), ("ALLOW_READ", "*"), ("allow_negotiator", "*"),
    ("DENY_WRITE", "nobody"), ("STARTD1.DENY_READ", "x"), ("HOSTALLOW_WRITE", "*"),
    ("HOSTDENY_READ", "x"), ("SEC_DEFAULT_AUTHENTICATION", "NEVER"),
    ("SEC_WRITE_AUTHENTICATION", "OPTIONAL"), ("SEC_CLIENT_AUTHENTICATION_METHODS", "CLAIMTOBE"),
    ("SEC_DEFAULT_AUTHENTICATION_METHODS", "FS, ANONYMOUS"), ("SCHEDD.SEC_WRITE_ENCRYPTION", "REQUIRED"),
    ("SEC_DEFAULT_ENCRYPTION", "NEVER"), ("SEC_DEFAULT_INTEGRITY", "never"),
    ("SEC_DAEMON_ENCRYPTION", "OPTIONAL"), ("SEC_DEFAULT_ENCRYPTION", "$(X)"),
    ("SEC_DEFAULT_NEGOTIATION", "NEVER"), ("SEC_TOKEN_DIRECTORY", "/tmp"),
    ("LOCAL_CONFIG_FILE", "/bin/sh -c id |"), ("ENABLE_RUNTIME_CONFIG", "TRUE"),
    ("SCHEDD.SETTABLE_ATTRS_WRITE", "*"), ("QUEUE_SUPER_USERS", "nobody"),
])
def test_profiles_may_not_weaken_pool_security(tmp_path, key, value):
    path = write_profile(tmp_path, {"name": "p", "roles": {"submit": {"condor": {key: value}}}})
    text = one_line_error(path, f"roles.submit.condor.{key}")
    assert "may not set" in text or "weakens the pool's security" in text


@pytest.mark.parametrize("section, key, value, field", [
    ("condor", "UPDATE_INTERVAL", "1\nALLOW_WRITE = *", "roles.all.condor.UPDATE_INTERVAL"),
    ("condor", "UPDATE_INTERVAL", "1\rALLOW_WRITE = *", "roles.all.condor.UPDATE_INTERVAL"),
    ("condor", "UPDATE_INTERVAL", "1 \\", "roles.all.condor.UPDATE_INTERVAL"),
    ("condor", "UPDATE_INTERVAL\n", 1, "roles.all.condor.UPDATE_INTERVAL\\n"),
    ("condor", "X\nALLOW_WRITE", "*", "roles.all.condor.X\\nALLOW_WRITE"),
    ("sysctl", "net.core.rmem_max\n", 1, "roles.all.sysctl.net.core.rmem_max\\n"),
    ("xrootd_cache", "ram", "1g\n", "roles.all.xrootd_cache.ram"),
])
def test_line_breaks_are_rejected_in_one_line(tmp_path, section, key, value, field):
    path = write_profile(tmp_path, {"name": "p", "roles": {"all": {section: {key: value}}}})
    one_line_error(path, field)


def test_profile_name_cannot_inject_a_line(tmp_path):
    path = write_profile(tmp_path, {"name": "x\nALLOW_WRITE = *", "roles": {}})
    one_line_error(path, "name")


def test_shipped_profiles_and_harmless_knobs_still_load(tmp_path):
    for path in sorted(profiles.PROFILE_DIR.glob("*.yaml")):
        profiles.load(path)
    plain = profiles.load("transfer-plain").section("submit", "condor")
    assert plain["SEC_DEFAULT_ENCRYPTION"] == "OPTIONAL"  # its documented exception
    knobs = {"UPDATE_INTERVAL": 30, "STARTD.UPDATE_INTERVAL": 60, "SEC_DEFAULT_ENCRYPTION": "REQUIRED",
             "SEC_DEFAULT_CRYPTO_METHODS": "AES", "SEC_DEFAULT_SESSION_DURATION": 3600}
    path = write_profile(tmp_path, {"name": "ok", "roles": {"worker": {"condor": knobs}}})
    assert profiles.load(path).section("worker", "condor") == knobs


# --- 2. secrets are private on the host and off command lines ----------------------------
def test_state_folders_are_0700_and_bundles_0600_from_creation(tmp_path, monkeypatch):
    old = os.umask(0o022)
    try:
        stale = tmp_path / "small" / "hosts"
        stale.mkdir(parents=True, mode=0o755)
        os.chmod(tmp_path / "small", 0o755)
        (stale / "dtn.tgz").write_text("old")
        os.chmod(stale / "dtn.tgz", 0o644)
        chmods = []
        real_chmod = os.chmod
        monkeypatch.setattr(os, "chmod", lambda p, *a, **k: (chmods.append(str(p)), real_chmod(p, *a, **k)))
        state = TestbedState("small", root=tmp_path).ensure_secrets()
        bundles = render.write_all(state, topology.load("small"), profiles.load("default"))
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    for folder in (state.dir, state.ssh_key.parent, state.pool_password.parent, state.hosts_dir,
                   state.host_dir("dtn"), state.host_dir("dtn") / "secrets"):
        assert mode(folder) == 0o700, folder
    for name, bundle in bundles.items():
        assert mode(bundle) == 0o600, bundle
        assert mode(state.host_dir(name) / "secrets" / "pool-password") == 0o600
        assert mode(state.host_dir(name) / "secrets" / "authorized_keys") == 0o600
    # created restrictive, not loosened first and tightened afterwards
    assert not [p for p in chmods if ".tgz" in p or "/secrets/" in p]


def test_pool_password_is_not_on_a_command_line():
    script = (ROLES / "condor.sh").read_text()
    assert "condor_store_cred add -c -i secrets/pool-password -f" in script
    assert not re.search(r"condor_store_cred[^\n]* -p ", script)
    for path in ROLES.glob("*.sh"):
        assert "$(cat secrets" not in path.read_text(), path


# --- 3. a profile that does not extend default renders or names what it lacks ------------
def test_profile_without_default_renders_or_names_the_missing_knob(tmp_path):
    topo = topology.load("small")
    bare = profiles.load(write_profile(tmp_path, {"name": "bare", "roles": {}}, "bare"))
    for name, host in topo.hosts.items():
        if not host.has("dtn"):
            render.render_host_files(topo, bare, host)
            continue
        for call in (lambda: render.render_host_files(topo, bare, host),
                     lambda: tuning.apply_script(topo, bare, host)):
            with pytest.raises(ConfigError) as err:
                call()
            text = str(err.value)
            assert "\n" not in text and text.startswith(f"{bare.source}: roles.dtn.xrootd_cache.ram: ")
            assert "xrootd/dtn.cfg.j2" in text
    cache = {"ram": "1g", "blocksize": "128k", "prefetch": 10, "diskusage": "0.90 0.95"}
    full = profiles.load(write_profile(tmp_path, {"name": "full", "roles": {"dtn": {"xrootd_cache": cache}}}))
    for host in topo.hosts.values():
        render.render_host_files(topo, full, host)


# --- 4. the DTN never creates its array over data ----------------------------------------
def test_dtn_script_is_sound_and_picks_disks_by_serial():
    text = (ROLES / "dtn.sh").read_text()
    subprocess.run(["bash", "-n", str(ROLES / "dtn.sh")], check=True)
    assert "/dev/disk/by-id/virtio-tb-data-" in text and "lsblk" not in text
    assert "--assume-clean" in text.split("mdadm --examine")[1]  # create comes after the check


FAKES = {"mdadm": 'echo "mdadm $*" >> "$LOG"\ncase "$1" in\n  --examine) [[ " $SB " == *" $2 "* ]] ;;\n'
                  '  --assemble) exit "$ASSEMBLE_RC" ;;\nesac\n',
         "blkid": '[[ " $FS " == *" $2 "* ]] && exit 0; exit 2\n',
         "mountpoint": "exit 1\n"}


@pytest.mark.parametrize("sb, fs, assemble_rc, expect", [
    ("", "", 0, "create"),                    # new disks
    ("d0 d1 d2 d3", "", 0, "assemble"),        # the array, after a reboot
    ("d2", "", 1, "stop"),                     # one member's superblock: never --create
    ("", "d1", 1, "stop"),                     # a file system on a member: never --create
])
def test_dtn_creates_only_on_blank_disks(tmp_path, sb, fs, assemble_rc, expect):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    text = (ROLES / "dtn.sh").read_text()
    functions = "".join(re.findall(r"^(?:has_data|ensure_md0)\(\) \{\n.*?^\}\n", text, re.S | re.M))
    script = ("set -euo pipefail\nTB_RAID_MOUNT=/nonexistent TB_RAID_LEVEL=6 TB_RAID_DEVICES=4 "
              "TB_RAID_CHUNK_KB=512\n" + functions + "ensure_md0 d0 d1 d2 d3\necho DONE\n")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", LOG=str(tmp_path / "log"),
               SB=sb, FS=fs, ASSEMBLE_RC=str(assemble_rc))
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    log = (tmp_path / "log").read_text().splitlines()
    creates = [line for line in log if line.startswith("mdadm --create")]
    assert [line.startswith("mdadm --assemble") for line in log].count(True) == (expect != "create")
    if expect == "stop":
        assert proc.returncode != 0 and "DONE" not in proc.stdout and not creates
        assert "not creating a new array" in proc.stderr
    else:
        assert proc.returncode == 0 and "DONE" in proc.stdout, proc.stderr
        assert len(creates) == (expect == "create")
        assert not creates or creates[0].endswith("--assume-clean d0 d1 d2 d3")


# --- 5. an unanswered condor_q is an error, not an empty queue ---------------------------
class QueueSSH:
    def __init__(self, result):
        self.result, self.commands = result, []

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.commands.append(command)
        return Result(host, *self.result)


@pytest.mark.parametrize("rc, out, err", [
    (1, "", "-- Failed to fetch ads from: <10.160.0.10:9618> : submit\n"),
    (0, "", ""),          # no sentinel: condor_q's success was not seen
    (255, "", "ssh: connect to host 10.160.0.10 port 22: Connection refused"),
])
def test_queued_raises_when_condor_q_fails(rc, out, err):
    pool = condor.Pool(topology.load("small"), QueueSSH((rc, out, err)))
    with pytest.raises(RemoteError, match="condor_q failed"):
        pool.queued()


def test_queued_counts_jobs_only_after_success():
    ok = condor.Pool.QUEUED_OK
    assert condor.Pool(topology.load("small"), QueueSSH((0, f"12\n12\n13\n{ok}\n", ""))).queued() == 3
    assert condor.Pool(topology.load("small"), QueueSSH((0, f"{ok}\n", ""))).queued() == 0
