"""KVM or TCG: probe whether hardware virtualisation really runs a Linux guest here.

/dev/kvm may exist and even run firmware while a real guest kernel cannot run on it:
on a host with paravirtual KVM (kvm-pvm) SeaBIOS starts fine under `-accel kvm`, but a
stock Debian kernel stops in its decompressor with "KVM internal error. Suberror: 1
... emulation failure" (seen on a 6.18 host), or qemu fails with "failed to set MSR
0x10a" (seen on an older one). So the probe boots a real kernel, the box's own when it
is built, with no root filesystem and `panic=-1`: under working KVM it runs through its
start-up, panics at the root mount and qemu exits (-no-reboot) within seconds. Anything
else (an error line, a hang, no panic message) means TCG. Without a kernel to try, the answer
is TCG: a fast wrong "kvm" loses the whole bring-up, a slow right "tcg" does not.
"""
import glob
import json
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path

from testbed.model.errors import RemoteError
from testbed.model.schema import env_int
from testbed.remote.poll import wait_for

ACCELS = ("kvm", "tcg")
# The verdict of a probe that booted a kernel, kept until the host reboots (/run is a
# tmpfs): every `./tb` call asks, and a probe costs seconds.
VERDICT_CACHE = Path("/run/grid-testbed-accel.json")
BANNER = "Kernel panic"  # reached the root mount: the kernel ran
FAILURES = ("KVM internal error", "emulation failure", "failed to set MSR", "kvm run failed",
            "Could not access KVM kernel module", "failed to initialize kvm")
# Under TCG the guests get the CPU features QEMU emulates that OpenSSL's AES-GCM
# uses (HTCondor encrypts file transfers); qemu64 alone has none of them.
TCG_CPU_MODEL = "qemu64"
TCG_CPU_FEATURES = ("aes", "pclmuldq", "ssse3", "sse4.1", "sse4.2")  # libvirt's names
# QEMU's TCG translation cache defaults to 1 GiB per guest (qemu RSS ~1.5 GB for a
# 512 MB guest); a smaller cache keeps RSS near guest RAM.
TCG_TB_CACHE_MB = 128


def guest_cpu(accelerator):
    """The libvirt CPU model, features and TCG cache for the guests."""
    if accelerator == "kvm":
        return {"mode": "host-passthrough", "model": None, "features": [], "tb_cache_mb": None}
    tb = env_int("TESTBED_TB_CACHE_MB", TCG_TB_CACHE_MB, minimum=0)
    features = [] if os.environ.get("TESTBED_CPU_FEATURES", "1") == "0" else list(TCG_CPU_FEATURES)
    return {"mode": "custom", "model": TCG_CPU_MODEL, "features": features, "tb_cache_mb": tb or None}



def probe_command(qemu, kernel):
    """qemu under KVM booting `kernel` to its root-mount panic, console on stdout."""
    return [qemu, "-accel", "kvm", "-cpu", "host", "-m", "128", "-nodefaults", "-display", "none",
            "-no-reboot", "-serial", "stdio", "-kernel", str(kernel),
            "-append", "console=ttyS0 panic=-1 root=/dev/nonexistent loglevel=4"]


def shows_failure(output):
    """True when qemu's output has one of the KVM failure texts (any case)."""
    text = output.lower()
    return any(f.lower() in text for f in FAILURES)


def verdict(output, exited):
    """True when the probe's output shows a kernel that ran under KVM up to its root-mount
    panic, no KVM failure, and qemu exited by itself. False otherwise."""
    return not shows_failure(output) and exited and BANNER in output


def run_probe(cmd, timeout):
    """(output, exited): what qemu printed (stdout and stderr) until it exited, printed a
    failure, or `timeout` seconds passed; `exited` is False when it had to be killed."""
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as exc:
        return str(exc), False
    got = {"out": b"", "exited": False}
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)

    def ended():  # one read: True when qemu exited or printed a failure
        if not sel.select(timeout=max(0.0, min(1.0, deadline - time.monotonic()))):
            return False
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            proc.wait(timeout=5)
            got["exited"] = True
            return True
        got["out"] += chunk
        return shows_failure(got["out"].decode(errors="replace"))
    try:
        try:
            wait_for("the KVM probe's qemu to exit or print a failure", ended, timeout, interval=0)
        except RemoteError:
            pass  # still running after `timeout`: killed below, reported as not exited
        return got["out"].decode(errors="replace"), got["exited"]
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def probe_kernels():
    """Kernels to boot for the probe: the testbed box's (when built), then the host's."""
    from testbed.machines.box import Box  # the box's own kernel: the one the guests boot
    found = []
    try:
        found.append(Box("debian13").kernel)
    except Exception:  # noqa: BLE001 - a missing recipe only means no box kernel to try
        pass
    found += [Path(p) for p in sorted(glob.glob("/boot/vmlinuz-*"), reverse=True)]
    return [k for k in found if k.is_file() and os.access(k, os.R_OK)]


def probe_kvm(timeout=20, kernels=None, runner=run_probe, cache=None):
    """True when qemu boots a Linux kernel under KVM on this host. A verdict from a
    kernel is kept in `cache` (default VERDICT_CACHE) for the same kernel and host."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        return False
    kernels = probe_kernels() if kernels is None else kernels
    if not kernels:
        return False
    cache = VERDICT_CACHE if cache is None else Path(cache)
    key = _cache_key(kernels[0])
    try:
        kept = json.loads(cache.read_text())
        if kept.get("key") == key:
            return bool(kept["kvm"])
    except (OSError, ValueError, KeyError):
        pass
    output, exited = runner(probe_command(qemu, kernels[0]), timeout)
    ok = bool(verdict(output, exited))
    try:
        cache.write_text(json.dumps({"key": key, "kvm": ok}))
    except OSError:
        pass  # not root, or no /run: probe again next time
    return ok


def _cache_key(kernel):
    """What a verdict depends on: the kernel booted (path, size, mtime) and the host's kernel."""
    try:
        st = os.stat(kernel)
        return [str(kernel), st.st_size, int(st.st_mtime), os.uname().release]
    except OSError:
        return [str(kernel), None, None, os.uname().release]


def detect(env=None):
    """TESTBED_ACCEL=kvm|tcg overrides the probe (a few seconds either way)."""
    env = os.environ if env is None else env
    forced = env.get("TESTBED_ACCEL", "").strip().lower()
    if forced in ACCELS:
        return forced
    return "kvm" if probe_kvm() else "tcg"


def converge_libvirtd(accelerator, script=None, run=subprocess.run):
    """Bring libvirtd in line with `accelerator` (provision/host/libvirtd.sh: /dev/kvm masked
    from it under TCG, not under KVM). Set-up runs it too, but before the box is built the
    probe has no kernel to boot and says TCG, so `up` runs it again with the plan's answer."""
    if os.geteuid() != 0:
        return
    from testbed import PROJECT_ROOT
    script = script or PROJECT_ROOT / "provision" / "host" / "libvirtd.sh"
    result = run(["bash", str(script), accelerator], capture_output=True, text=True)
    for line in (result.stdout or "").splitlines():
        print(line, flush=True)
    if result.returncode != 0:
        from testbed.model.errors import TestbedError
        raise TestbedError(f"{script} {accelerator} failed: {(result.stderr or result.stdout).strip()[-300:]}")
