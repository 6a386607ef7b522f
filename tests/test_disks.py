"""The RAID members as disks of their own: topology fields, the plan's cache
mode, libvirt iotune set and read back through a fake virsh, the manifest's `disks`, fio."""
import json
from pathlib import Path
import types

import pytest

from testbed.experiments.e2 import e2_site
from testbed.machines import disks, domains, plan
from testbed.machines.patched_box import box_for
from testbed.model import profiles, topology
from testbed.model.constants import DISK_IOPS, DISK_MB_PER_S
from testbed.model.errors import ConfigError, TestbedError
from testbed.model.state import TestbedState
from testbed.results import runs


def domain_xml(count=6, cache=None, serial_offset=0, tune=None):
    """The DTN's live XML; `tune`: {target: (bytes/s, iops)} in force (libvirt's `<iotune>`)."""
    driver = f"<driver name='qemu' type='qcow2' cache='{cache}'/>" if cache else "<driver name='qemu' type='qcow2'/>"
    disks_xml = ["<disk type='file' device='disk'><driver name='qemu' type='qcow2'/>"
                 "<target dev='vda' bus='virtio'/></disk>"]
    for i in range(count):
        # device names need not follow the members' order: vdg is member 0, vdf member 1, ...
        target = f"vd{'gfedcb'[i]}"
        b, n = (tune or {}).get(target, (0, 0))
        iotune = (f"<iotune><total_bytes_sec>{b}</total_bytes_sec><total_iops_sec>{n}</total_iops_sec></iotune>"
                  if b or n else "")
        disks_xml.append(f"<disk type='file' device='disk'>{driver}<target dev='{target}' bus='virtio'/>{iotune}"
                         f"<serial>tb-data-{i + serial_offset}</serial></disk>")
    return f"<domain><name>tb-small-dtn</name><devices>{''.join(disks_xml)}</devices></domain>"


class FakeLibvirt:
    """virsh as libvirt answers it for the DTN: dumpxml (with the limits in force), domstate,
    blkdeviotune (set)."""

    def __init__(self, xml=None, state="running", refuse=None):
        self.state, self.refuse, self.calls, self.lost = state, refuse, [], False
        self.xml = xml or (lambda tune: domain_xml(cache="none", tune=tune))
        self.tune = {}  # target -> (bytes, iops)

    def __call__(self, *args, timeout=None):
        self.calls.append(args)
        out, rc, err = "", 0, ""
        if args[0] == "dumpxml":   # the live XML carries each disk's limits in force
            out = self.xml(self.tune)
        elif args[0] == "domstate":
            out = self.state + "\n"
        elif args[0] == "blkdeviotune":
            if self.refuse:
                rc, err = 1, self.refuse
            elif not self.lost:   # lost: libvirt says yes and keeps nothing
                a = list(args)
                self.tune[args[2]] = (int(a[a.index("--total-bytes-sec") + 1]), int(a[a.index("--total-iops-sec") + 1]))
        elif args[0] == "pool-dumpxml":
            out = "<pool type='dir'><target><path>/srv/pool</path></target></pool>"
        return types.SimpleNamespace(stdout=out, stderr=err, returncode=rc)

    def sets(self):
        return [c for c in self.calls if c[0] == "blkdeviotune" and len(c) > 3]


@pytest.fixture
def small():
    return topology.load("small")


@pytest.fixture
def libvirt(monkeypatch):
    fake = FakeLibvirt()
    monkeypatch.setattr(domains, "_virsh", fake)
    return fake


# --- topology ----------------------------------------------------------------------------
def _topo(disks_spec):
    data = {"name": "t", "hosts": {
        "cm": {"roles": ["cm", "submit"]}, "worker": {"roles": ["worker"]},
        "dtn": {"roles": ["dtn"], "disks": disks_spec}, "origin": {"roles": ["origin"]}}}
    return topology.parse(data, "topologies/t.yaml")


def test_member_limits_come_from_the_topology_else_the_7200rpm_defaults(small):
    assert small.role_host("dtn").disks.mb_per_s == 40 and small.role_host("dtn").disks.iops == 150
    d = _topo({"count": 6}).role_host("dtn").disks
    assert (d.mb_per_s, d.iops) == (DISK_MB_PER_S, DISK_IOPS)
    d = _topo({"count": 6, "mb_per_s": 12.5, "iops": 0}).role_host("dtn").disks
    assert (d.mb_per_s, d.iops) == (12.5, 0)


@pytest.mark.parametrize("spec,field,problem", [
    ({"mb_per_s": "fast"}, "hosts.dtn.disks.mb_per_s", "must be a number"),
    ({"mb_per_s": -1}, "hosts.dtn.disks.mb_per_s", "must be >= 0"),
    ({"mb_per_s": 0.5}, "hosts.dtn.disks.mb_per_s", "0 (no limit) or at least 1"),
    ({"iops": 2.5}, "hosts.dtn.disks.iops", "must be an integer"),
    ({"iops": 5}, "hosts.dtn.disks.iops", "0 (no limit) or at least 10"),
    ({"rpm": 7200}, "hosts.dtn.disks.rpm", "unknown key"),
])
def test_bad_member_limits_are_one_line_errors_naming_file_and_field(spec, field, problem):
    with pytest.raises(ConfigError) as exc:
        _topo(dict({"count": 6}, **spec))
    text = str(exc.value)
    assert "\n" not in text and "topologies/t.yaml" in text and field in text and problem in text


# --- the plan: cache mode ----------------------------------------------------------------
def test_cache_mode_is_none_where_the_pool_takes_o_direct_else_writethrough():
    assert disks.choose_cache_mode({}, probe=lambda: (True, "ok"))["mode"] == "none"
    chosen = disks.choose_cache_mode({}, probe=lambda: (False, "/x: the filesystem refuses O_DIRECT"))
    assert chosen == {"mode": "writethrough", "why": "/x: the filesystem refuses O_DIRECT"}
    assert disks.choose_cache_mode({"TESTBED_DISK_CACHE": "directsync"}, probe=None)["mode"] == "directsync"
    with pytest.raises(ConfigError, match="TESTBED_DISK_CACHE.*'fast' is not a libvirt cache mode"):
        disks.choose_cache_mode({"TESTBED_DISK_CACHE": "fast"})


def test_o_direct_probe_leaves_no_file(tmp_path):
    ok, why = disks.supports_o_direct(str(tmp_path))
    assert isinstance(ok, bool) and str(tmp_path) in why
    assert list(tmp_path.iterdir()) == []
    assert disks.supports_o_direct(str(tmp_path / "missing"))[0] is False


def test_pool_path_from_libvirt(libvirt):
    assert disks.pool_path() == "/srv/pool"


def test_plan_gives_every_data_disk_the_cache_mode_and_records_the_limits(tmp_path, small):
    cache = {"mode": "none", "why": "probe"}
    data = plan.build(small, profiles.load("default"), TestbedState("small", root=tmp_path), accelerator="tcg",
                      cache=cache, box=box_for(small.box_spec))
    dtn = next(h for h in data["hosts"] if h["name"] == "dtn")
    assert dtn["disks"] == [{"size_gb": 1, "cache": "none"}] * 6
    assert all(h["disks"] == [] for h in data["hosts"] if h["name"] != "dtn")
    assert data["data_disks"] == {"cache": "none", "cache_why": "probe", "mb_per_s": 40.0, "iops": 150}


# --- libvirt iotune ----------------------------------------------------------------------
def test_blkdeviotune_command_sets_bytes_and_iops_live_and_persistent():
    argv = disks.blkdeviotune_argv("tb-small-dtn", "vdb", disks.Limits(40, 150))
    assert argv == ["blkdeviotune", "tb-small-dtn", "vdb", "--total-bytes-sec", "40000000",
                    "--total-iops-sec", "150", "--live", "--config"]
    off = disks.blkdeviotune_argv("d", "vdc", disks.Limits(0, 0), live=False)
    assert off[3:] == ["--total-bytes-sec", "0", "--total-iops-sec", "0", "--config"]


def test_data_disks_are_found_by_serial_not_by_device_name():
    found = disks.parse_data_disks(domain_xml(cache="none"))
    assert list(found) == [0, 1, 2, 3, 4, 5]
    assert found[0]["target"] == "vdg" and found[5]["target"] == "vdb"
    assert all(d["cache"] == "none" for d in found.values())
    assert disks.parse_data_disks(domain_xml(count=2))[1]["cache"] == "default"


def test_apply_sets_every_member_once_and_is_idempotent(small, libvirt):
    echoed = []
    record = disks.set_limits(small, echo=echoed.append)
    assert len(libvirt.sets()) == 6 and set(libvirt.tune.values()) == {(40_000_000, 150)}
    assert record["limits"] == {"mb_per_s": 40.0, "iops": 150} and record["in_force"] == {"mb_per_s": 40.0, "iops": 150}
    assert record["cache"] == "none" and record["targets"]["tb-data-0"] == "vdg"
    assert "6 RAID members 40 MB/s, 150 IOPS each" in echoed[0]
    disks.set_limits(small, echo=echoed.append)
    assert len(libvirt.sets()) == 6 and "already in force" in echoed[1]


def test_a_run_can_lift_the_limits_and_put_them_back(small, libvirt):
    disks.set_limits(small, echo=lambda *_: None)
    record = disks.set_limits(small, disks.Limits(0, 0), echo=lambda *_: None)
    assert set(libvirt.tune.values()) == {(0, 0)} and record["spindles"] == "off"
    disks.set_limits(small, disks.Limits.of(small.role_host("dtn").disks, 25, None), echo=lambda *_: None)
    assert set(libvirt.tune.values()) == {(25_000_000, 150)}


def test_a_stopped_domain_gets_the_persistent_limits_only(small, libvirt):
    libvirt.state = "shut off"
    record = disks.set_limits(small, echo=lambda *_: None)
    assert all("--live" not in c and "--config" in c for c in libvirt.sets()) and record["in_force"] is None


def test_missing_member_or_refused_limit_is_an_error_naming_the_disk(small, libvirt):
    libvirt.xml = lambda tune: domain_xml(count=5, tune=tune)
    with pytest.raises(TestbedError, match="no disk with serial tb-data-5 .*5 of 6 data disks"):
        disks.set_limits(small, echo=lambda *_: None)
    libvirt.xml, libvirt.refuse = lambda tune: domain_xml(tune=tune), "error: Operation not supported"
    with pytest.raises(TestbedError, match=r"could not limit vdg \(tb-data-0\): error: Operation not supported"):
        disks.set_limits(small, echo=lambda *_: None)


def test_a_limit_libvirt_does_not_keep_is_an_error_naming_what_it_reads_back(small, libvirt):
    libvirt.lost = True
    with pytest.raises(TestbedError, match=r"dtn: vdg reads back 0 MB/s, 0 IOPS after setting 40 MB/s, 150 IOPS"):
        disks.set_limits(small, echo=lambda *_: None)


def test_limits_of_a_run_override_the_topology(small):
    d = small.role_host("dtn").disks
    assert disks.Limits.of(d) == disks.Limits(40.0, 150)
    assert disks.Limits.of(d, 0.0, 0) == disks.Limits(0.0, 0) and disks.Limits(0.0, 0).label == "off"
    assert disks.Limits.of(d, None, 80) == disks.Limits(40.0, 80) and disks.Limits(40, 80).label == "emulated"


# --- manifest ----------------------------------------------------------------------------
def test_manifest_has_a_disks_section(small, libvirt, tmp_path):
    disks.set_limits(small, echo=lambda *_: None)
    run = runs.Run.create("e2", ["default"], topology={}, profile_contents={}, accel="tcg", root=tmp_path,
                          disks=disks.describe(small))
    d = run.manifest()["disks"]
    assert (d["count"], d["raid_level"], d["chunk_kb"], d["data_disks"]) == (6, 6, 512, 4)
    assert d["limits"] == {"mb_per_s": 40.0, "iops": 150} and d["cache"] == "none" and d["spindles"] == "emulated"
    assert d["in_force"] == {"mb_per_s": 40.0, "iops": 150}
    plain = runs.Run.create("e1", ["default"], topology={}, profile_contents={}, accel="tcg", root=tmp_path)
    assert "disks" not in plain.manifest()


def test_describe_without_a_domain_keeps_the_plan(small, monkeypatch):
    monkeypatch.setattr(domains, "_virsh", lambda *a, **k: types.SimpleNamespace(stdout="", stderr="no domain",
                                                                                 returncode=1))
    d = disks.describe(small)
    assert d["limits"] == {"mb_per_s": 40.0, "iops": 150} and d["cache"] is None and d["in_force"] is None


# --- E2: fio and the speed-up --------------------------------------------------------------
FIO_JSON = {"fio version": "fio-3.38", "jobs": [{"jobname": "member-rand", "read": {
    "io_bytes": 1843200, "bw_bytes": 614400, "iops": 150.2}}]}


def test_fio_reads_one_member_read_only_and_direct():
    cmd = e2_site.fio_command("/dev/disk/by-id/virtio-tb-data-0", "seq", 3)
    assert cmd.startswith("fio --readonly ") and "--rw=read " in cmd and "--bs=1M" in cmd
    assert "--direct=1" in cmd and "--runtime=3" in cmd and "--output-format=json" in cmd
    rand = e2_site.fio_command("/dev/disk/by-id/virtio-tb-data-0", "rand", 3)
    assert "--rw=randread" in rand and "--bs=4k" in rand and "write" not in rand.replace("--readonly", "")
    got = e2_site.parse_fio("note: some warning\n" + json.dumps(FIO_JSON))
    assert got == {"mb_per_s": pytest.approx(0.6144), "iops": 150.2}
    with pytest.raises(ValueError):
        e2_site.parse_fio("fio: failed to open /dev/x")


def test_limit_check_and_speedup():
    assert e2_site.within_limit(47.9, 40) and not e2_site.within_limit(48.1, 40)
    assert e2_site.within_limit(900, 0)  # no limit
    assert e2_site.speedup([30.0, 44.0], [20.0, 11.0]) == 4.0
    assert e2_site.speedup([], [20.0]) is None and e2_site.speedup([10.0], [0.0]) is None


def test_e2_takes_member_limits_from_set_else_the_topology():
    p = e2_site.EXPERIMENT.parameters("ci")
    assert p["member_mb_per_s"] is None and p["member_iops"] is None and p["unlimited_rows"] == 1
    assert p["fio_seconds"] <= 5  # CI's budget: seconds per check
    p = e2_site.EXPERIMENT.parameters("ci", {"MEMBER_MB_PER_S": "0", "member_iops": "0"})
    assert p["member_mb_per_s"] == 0.0 and p["member_iops"] == 0
    with pytest.raises(ConfigError, match="member_iops must be a whole number"):
        e2_site.EXPERIMENT.parameters("ci", {"member_iops": "fast"})


def _rec(name, value, **params):
    return {"name": name, "value": value, "unit": "", "params": params}


def test_disk_model_summary_puts_fio_beside_limits_and_both_speedups_beside_the_paper(tmp_path):
    records = [_rec("e2.member_seq_mb_per_s", 39.2, configured_mb_per_s=40.0, spindles="emulated"),
               _rec("e2.member_rand_iops", 151.0, configured_iops=150, spindles="emulated"),
               _rec("e2.raid_write_rate", 5.0, stripe_cache_size=256, spindles="emulated"),
               _rec("e2.raid_write_rate", 30.0, stripe_cache_size=32768, spindles="emulated"),
               _rec("e2.raid_write_rate", 25.0, stripe_cache_size=256, spindles="off"),
               _rec("e2.raid_write_rate", 35.0, stripe_cache_size=32768, spindles="off"),
               _rec("e2.raid_write_rate", 99.0, stripe_cache_size=256)]  # a run from before: no limits
    text = e2_site.disk_model_summary(records, [{"label": "r1", "disks": {"count": 6, "raid_level": 6,
                                                 "chunk_kb": 512, "limits": {"mb_per_s": 40, "iops": 150},
                                                 "cache": "none"}}], 11.7)
    assert "6 members RAID6, chunk 512 KiB, limits 40 MB/s 150 IOPS each" in text and "host cache none" in text
    seq = next(l for l in text.splitlines() if l.startswith("sequential"))
    assert seq.split()[-3:] == ["40.0", "39.2", "0.98"]
    emulated = next(l for l in text.splitlines() if l.startswith("spindles emulated"))
    off = next(l for l in text.splitlines() if l.startswith("spindles off"))
    assert "6.00x" in emulated and "11.7x" in emulated
    assert off.split()[2] == "62.0" and "0.56x" in off  # the older run's point counts as spindles off


def test_disk_model_benchmark_prints_a_run(tmp_path, monkeypatch, capsys):
    import runpy
    run = runs.Run.create("e2", ["default"], topology={}, profile_contents={}, accel="tcg", root=tmp_path,
                          disks={"count": 6, "raid_level": 6, "chunk_kb": 512, "cache": "none",
                                 "limits": {"mb_per_s": 40.0, "iops": 150}})
    run.record("e2.raid_write_rate", 5.0, "MB/s", stripe_cache_size=256, spindles="emulated")
    run.record("e2.raid_write_rate", 20.0, "MB/s", stripe_cache_size=32768, spindles="emulated")
    monkeypatch.setattr("sys.argv", ["disk_model.py", str(run.path)])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "disk_model.py"), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "spindles emulated" in out and "4.00x" in out and "11.7x" in out
