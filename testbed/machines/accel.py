"""KVM or TCG: probe whether hardware virtualisation really works here."""
import os
import shutil
import subprocess

ACCELS = ("kvm", "tcg")


def probe_kvm(timeout=5):
    """True when qemu can start a guest CPU under KVM on this host.

    /dev/kvm may exist but be unusable (paravirtual KVM without VMX/SVM aborts
    with 'failed to set MSR'), so start qemu for a moment and see if it dies.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        return False
    cmd = [qemu, "-accel", "kvm", "-cpu", "host", "-m", "64", "-nodefaults", "-display", "none",
           "-no-reboot", "-S", "-qmp", "stdio"]
    try:
        proc = subprocess.run(cmd, input=b'{"execute":"qmp_capabilities"}\n{"execute":"cont"}\n'
                              b'{"execute":"quit"}\n', capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return True  # it kept running: KVM works
    except OSError:
        return False
    return proc.returncode == 0 and b"failed" not in proc.stderr.lower()


def detect(env=None):
    """TESTBED_ACCEL=kvm|tcg overrides the probe."""
    env = os.environ if env is None else env
    forced = env.get("TESTBED_ACCEL", "").strip().lower()
    if forced in ACCELS:
        return forced
    return "kvm" if probe_kvm() else "tcg"
