"""The KVM probe: a kernel that really ran under KVM (its root-mount panic, qemu exited by
itself) is the only 'kvm'; firmware-only success, KVM errors, hangs and a missing kernel
are 'tcg'. The failure texts are the ones seen on this project's paravirtual-KVM hosts."""
import sys

import pytest

from testbed.machines import accel

PANIC = ("[    1.73] VFS: Unable to mount root fs on unknown-block(0,0)\n"
         "[    1.73] Kernel panic - not syncing: VFS: Unable to mount root fs\n")
PVM_618 = ("KVM internal error. Suberror: 1\nextra data[0]: 0x0000000000000001\nemulation failure\n"
           "RAX=0000000000000001 RBX=0000000000000000\n")
PVM_OLD = "qemu-system-x86_64: error: failed to set MSR 0x10a to 0xd01ed\n"


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path):
    """No test reads or writes the host's verdict in /run."""
    monkeypatch.setattr(accel, "VERDICT_CACHE", tmp_path / "verdict.json")


@pytest.mark.parametrize("output,exited,ok", [
    (PANIC, True, True),
    (PANIC, False, False),              # killed at the time-out: not a clean run
    (PVM_618, False, False),
    (PVM_OLD, True, False),
    (PANIC + PVM_618, True, False),     # an error line wins
    ("", True, False),                  # exited without running a kernel (firmware only)
])
def test_verdict(output, exited, ok):
    assert bool(accel.verdict(output, exited)) is ok


def test_probe_boots_the_first_kernel_under_kvm(monkeypatch, tmp_path):
    monkeypatch.setattr(accel.os, "access", lambda path, mode: True)
    monkeypatch.setattr(accel.shutil, "which", lambda name: "/usr/bin/qemu-system-x86_64")
    seen = []

    def runner(cmd, timeout):
        seen.append(cmd)
        return PANIC, True
    kernel = tmp_path / "vmlinuz"
    assert accel.probe_kvm(kernels=[kernel], runner=runner) is True
    cmd = seen[0]
    assert cmd[cmd.index("-accel") + 1] == "kvm" and cmd[cmd.index("-kernel") + 1] == str(kernel)
    assert "-no-reboot" in cmd and "panic=-1" in cmd[cmd.index("-append") + 1]
    assert accel.probe_kvm(kernels=[tmp_path / "other"], runner=lambda c, t: (PVM_618, False)) is False


def test_no_kernel_to_try_or_no_dev_kvm_means_tcg(monkeypatch):
    def never(cmd, timeout):
        raise AssertionError("qemu must not start")
    monkeypatch.setattr(accel.shutil, "which", lambda name: "/usr/bin/qemu-system-x86_64")
    monkeypatch.setattr(accel.os, "access", lambda path, mode: True)
    assert accel.probe_kvm(kernels=[], runner=never) is False
    monkeypatch.setattr(accel.os, "access", lambda path, mode: False)
    assert accel.probe_kvm(kernels=["/k"], runner=never) is False


def test_run_probe_stops_at_the_first_failure_line_and_reports_exit():
    # a stand-in for qemu: prints a KVM error, then would hang for a minute
    hang = [sys.executable, "-c", "import sys,time; print('KVM internal error. Suberror: 1', flush=True); "
                                  "time.sleep(60)"]
    out, exited = accel.run_probe(hang, timeout=20)
    assert "KVM internal error" in out and exited is False
    quits = [sys.executable, "-c", "print('Kernel panic - not syncing: VFS')"]
    out, exited = accel.run_probe(quits, timeout=20)
    assert exited is True and accel.verdict(out, exited)
    assert accel.run_probe(["/nonexistent/qemu"], timeout=1)[1] is False


def test_the_environment_overrides_the_probe(monkeypatch):
    monkeypatch.setattr(accel, "probe_kvm", lambda: pytest.fail("no probe when forced"))
    assert accel.detect({"TESTBED_ACCEL": "KVM"}) == "kvm"
    assert accel.detect({"TESTBED_ACCEL": "tcg"}) == "tcg"


def test_a_kernels_verdict_is_kept_for_that_kernel_and_host(monkeypatch, tmp_path):
    monkeypatch.setattr(accel.os, "access", lambda path, mode: True)
    monkeypatch.setattr(accel.shutil, "which", lambda name: "/usr/bin/qemu-system-x86_64")
    kernel, cache = tmp_path / "vmlinuz", tmp_path / "accel.json"
    kernel.write_bytes(b"k" * 10)
    runs = []

    def runner(cmd, timeout):
        runs.append(cmd)
        return PVM_618, False
    assert accel.probe_kvm(kernels=[kernel], runner=runner, cache=cache) is False
    assert accel.probe_kvm(kernels=[kernel], runner=runner, cache=cache) is False
    assert len(runs) == 1                                    # the second answer came from the cache
    kernel.write_bytes(b"another kernel")                    # a new box kernel: probe again
    assert accel.probe_kvm(kernels=[kernel], runner=lambda c, t: (PANIC, True), cache=cache) is True
    cache.write_text("not json")                             # a torn cache is not an answer
    assert accel.probe_kvm(kernels=[kernel], runner=runner, cache=cache) is False and len(runs) == 2


def test_up_converges_libvirtd_to_the_plans_accelerator(monkeypatch, tmp_path):
    monkeypatch.setattr(accel.os, "geteuid", lambda: 0)
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return type("R", (), {"returncode": 0, "stdout": "[setup] restarting libvirtd with /dev/kvm\n",
                              "stderr": ""})()
    accel.converge_libvirtd("kvm", script=tmp_path / "libvirtd.sh", run=run)
    assert calls == [["bash", str(tmp_path / "libvirtd.sh"), "kvm"]]

    def fails(argv, **kw):
        return type("R", (), {"returncode": 1, "stdout": "", "stderr": "setup: libvirtd does not answer"})()
    with pytest.raises(Exception, match="libvirtd does not answer"):
        accel.converge_libvirtd("tcg", script=tmp_path / "libvirtd.sh", run=fails)
    monkeypatch.setattr(accel.os, "geteuid", lambda: 1000)
    accel.converge_libvirtd("tcg", run=lambda *a, **k: pytest.fail("not as a user"))
