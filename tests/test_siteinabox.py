import pytest

from testbed.experiments.e2 import reads as e2_reads
from testbed.experiments.e2 import e2_site as siteinabox


def test_reads_are_assigned_reproducibly():
    files = [f"file-{i:03d}" for i in range(1, 21)]
    a = e2_reads.assign_reads(files, 4, 2, seed=1)
    assert a == e2_reads.assign_reads(files, 4, 2, seed=1)
    assert len(a) == 4 and all(len(x) == 2 and set(x) <= set(files) for x in a)
    assert a != e2_reads.assign_reads(files, 4, 2, seed=2)


def test_client_script_reads_to_dev_null_and_reports_each_read():
    script = e2_reads.parallel_clients_script("dtn:1097", [("c1", ["file-001"]), ("c2", ["file-002", "file-003"])])
    assert script.count("xrdcp -f -s root://dtn:1097//data/") == 3
    assert script.count(") &") == 2 and script.endswith("wait")
    assert "/dev/null" in script and "echo read c2 file-003" in script
    # kXR_read unless asked for XRootD 5's pgread
    assert script.count("XRD_CPUSEPGWRTRD=0 xrdcp") == 3
    pg = e2_reads.parallel_clients_script("dtn:1097", [("c1", ["file-001"])], pgread=True)
    assert "XRD_CPUSEPGWRTRD" not in pg and "xrdcp -f -s root://dtn:1097//data/file-001" in pg


def test_parse_and_summarise_reads():
    text = ("read c1 file-001 100.0 102.0 0\nread c2 file-002 100.0 104.0 0\n"
            "read c2 file-003 104.0 106.0 0\nnoise\nread c1 file-004 102.0 103.0 1\n")
    sizes = {"file-001": 8e6, "file-002": 8e6, "file-003": 8e6, "file-004": 8e6}
    reads = e2_reads.parse_client_lines(text, sizes)
    assert len(reads) == 4
    s = e2_reads.summarise_reads(reads)
    assert s["failed"] == 1 and s["bytes"] == 24e6
    assert s["aggregate"] == pytest.approx(24 / 6)  # 24 MB over 100..106 s
    assert s["per_client"] == pytest.approx((8 / 2 + 16 / 6) / 2)
    assert e2_reads.summarise_reads([])["aggregate"] == 0


def test_parse_dd_summary_lines():
    text = ("25165824 bytes (25 MB, 24 MiB) copied, 3.52 s, 7.1 MB/s\n"
            "25165824 bytes (25 MB, 24 MiB) copied, 4.1 s, 6.1 MB/s\nwall 1 5\n")
    assert siteinabox.parse_dd(text) == [(25165824, 3.52), (25165824, 4.1)]


def test_scale_overrides():
    p = siteinabox.EXPERIMENT.parameters("quick", {"CLIENTS": "1,10", "write_mb": "8"})
    assert p["clients"] == [1, 10] and p["write_mb"] == 8
    assert siteinabox.EXPERIMENT.parameters("full")["clients"] == [1, 2, 4, 10]
    assert siteinabox.EXPERIMENT.parameters("ci")["clients"] == [2]


def test_rw_jobfile_phases_hold_the_right_jobs():
    both = siteinabox.rw_jobfile("/raid/rwtest", 4, 10, 8, 12, "both")
    assert "[reader]" in both and "[writer]" in both
    assert "numjobs=4" in both and "numjobs=10" in both and "runtime=12" in both
    # readers bypass the page cache, writers go through it and sync every 8 MiB
    reader = both.split("[reader]")[1].split("[writer]")[0]
    writer = both.split("[writer]")[1]
    assert "direct=1" in reader and "direct=0" in writer and "fdatasync=8" in writer
    read = siteinabox.rw_jobfile("/raid/rwtest", 4, 10, 8, 12, "read")
    assert "[reader]" in read and "[writer]" not in read
    write = siteinabox.rw_jobfile("/raid/rwtest", 4, 10, 8, 12, "write")
    assert "[writer]" in write and "[reader]" not in write
    with pytest.raises(KeyError):
        siteinabox.rw_jobfile("/raid/rwtest", 4, 10, 8, 12, "neither")


def _fio_job(read_bw, write_bw, error=0):
    return {"jobname": "x", "error": error, "read": {"bw_bytes": read_bw, "iops": 1},
            "write": {"bw_bytes": write_bw, "iops": 1}}


def test_parse_fio_mix_sums_every_job_and_skips_warnings_before_the_json():
    import json
    text = "fio: some warning\n" + json.dumps({"jobs": [_fio_job(3e6, 0), _fio_job(2e6, 0),
                                                          _fio_job(0, 1.5e6, error=5)]})
    got = siteinabox.parse_fio_mix(text)
    assert got == {"read": 5.0, "write": 1.5, "errors": 5}
    with pytest.raises(ValueError):
        siteinabox.parse_fio_mix("fio: failed to open")


def test_competition_ratios_together_over_alone():
    c = siteinabox.competition({"read": {"read": 40.0, "write": 0.0, "errors": 0},
                                "write": {"read": 0.0, "write": 20.0, "errors": 0},
                                "both": {"read": 10.0, "write": 15.0, "errors": 1}})
    assert c["read_ratio"] == pytest.approx(0.25) and c["write_ratio"] == pytest.approx(0.75)
    assert c["errors"] == 1
    none = siteinabox.competition({"read": {"read": 0.0, "write": 0.0, "errors": 0},
                                   "write": {"read": 0.0, "write": 0.0, "errors": 0},
                                   "both": {"read": 1.0, "write": 1.0, "errors": 0}})
    assert none["read_ratio"] is None and none["write_ratio"] is None


def test_disk_model_summary_shows_the_competition():
    recs = [{"name": "e2.raid_rw_read_rate", "value": 40.0, "params": {"phase": "alone", "stripe_cache_size": 256}},
            {"name": "e2.raid_rw_read_rate", "value": 10.0,
             "params": {"phase": "with_writes", "stripe_cache_size": 256}},
            {"name": "e2.raid_rw_write_rate", "value": 20.0, "params": {"phase": "alone", "stripe_cache_size": 256}},
            {"name": "e2.raid_rw_write_rate", "value": 15.0,
             "params": {"phase": "with_reads", "stripe_cache_size": 256}}]
    text = siteinabox.disk_model_summary(recs)
    assert "reads, stripe cache 256" in text and "0.25x" in text and "0.75x" in text


def test_round_trips_per_mb_are_the_extra_seconds_over_the_rtt_and_the_mb():
    # 8 MB: 3.5 s at 0 ms, 13.5 s at 20 ms -> 10 s / 0.02 s = 500 round trips / 8 MB
    assert e2_reads.round_trips_per_mb(3.5, 13.5, 20, 8e6) == pytest.approx(62.5)
    assert e2_reads.round_trips_per_mb(1.0, 1.0, 20, 8e6) == 0
    with pytest.raises(ValueError, match="RTT and a size above 0"):
        e2_reads.round_trips_per_mb(1.0, 2.0, 0, 8e6)


class _Result:
    def __init__(self, stdout):
        self.stdout, self.ok = stdout, True


class _SSH:
    """One client's read line: what timed_read asks for."""
    def __init__(self, read_line):
        self.read_line, self.commands = read_line, []

    def run(self, host, command, **_kw):
        self.commands.append((host, command))
        return _Result(self.read_line)


FILES = {"file-001": 8000000, "file-002": 8000000}   # the origin's listing


def _box(ssh):
    from types import SimpleNamespace
    box = siteinabox.SiteInABox.__new__(siteinabox.SiteInABox)
    box.ssh, box.dtn = ssh, SimpleNamespace(name="dtn")
    box.origin, box.workers = SimpleNamespace(name="submit"), [SimpleNamespace(name="worker1")]
    box.pgread = False
    return box


def test_timed_read_runs_one_client_on_the_first_worker_and_returns_its_seconds_and_bytes():
    ssh = _SSH("read c1 file-002 100.0 113.5 0\n")
    assert _box(ssh).timed_read(1097, "file-002", FILES) == (pytest.approx(13.5), 8000000)
    host, command = ssh.commands[-1]
    assert host == "worker1" and "root://dtn:1097//data/file-002 /dev/null" in command
    assert "XRD_CPUSEPGWRTRD=0" in command
    _box(ssh).timed_read(1097, "file-002", FILES, pgread=True)
    assert "XRD_CPUSEPGWRTRD" not in ssh.commands[-1][1]


def test_timed_read_fails_with_one_line_on_a_failed_read_or_an_unknown_file():
    from testbed.model.errors import RemoteError
    with pytest.raises(RemoteError, match="xrdcp of file-001 through dtn:1096 failed"):
        _box(_SSH("read c1 file-001 100.0 101.0 54\n")).timed_read(1096, "file-001", FILES)
    with pytest.raises(RemoteError, match="origin has no file file-009"):
        _box(_SSH("")).timed_read(1096, "file-009", FILES)


def test_inflight_names_the_busy_disks_only():
    text = ("/sys/block/vda/inflight:       0        0\n/sys/block/vdc/inflight:       4       24\n"
            "/sys/block/vdd/inflight:       0        1\n")
    assert siteinabox.inflight_text(text) == "requests in flight (reads/writes): vdc 4/24, vdd 0/1"
    assert siteinabox.inflight_text("/sys/block/vda/inflight: 0 0\n") == "no requests in flight"


def test_the_papers_array_over_network_per_stripe_cache():
    figures = [{"metric": "e2.raid_write_rate", "params": {"stripe_cache_size": 256}, "value": 60},
               {"metric": "e2.raid_write_rate", "params": {"stripe_cache_size": 32768}, "value": 700},
               {"metric": "e2.uncached_rate", "params": {"clients": 10}, "value": 1300}]
    assert siteinabox.paper_array_over_network(256, figures) == pytest.approx(60 / 1300)
    assert siteinabox.paper_array_over_network(32768, figures) == pytest.approx(700 / 1300)
    assert siteinabox.paper_array_over_network(1024, figures) is None
    # the kept paper file gives both
    assert siteinabox.paper_array_over_network(256) == pytest.approx(60 / 1300)


def test_member_limits_are_calibrated_to_the_target_array_rate():
    assert siteinabox.first_member_limit(0.4, 4) == pytest.approx(0.1)
    # the array wrote at 0.25 MB/s with members at 0.1: 0.4 needs 0.16
    assert siteinabox.calibrated_limit(0.1, 0.25, 0.4) == pytest.approx(0.16)
    with pytest.raises(ValueError):
        siteinabox.calibrated_limit(0.1, 0.0, 0.4)
    assert siteinabox.calibrating_write_mb(0.14, 10, 20) == 1       # never below 1 MB a writer
    assert siteinabox.calibrating_write_mb(5.0, 10, 20) == 10


def test_each_route_is_a_submitter_of_its_own_on_the_dtn():
    # the DTN's schedd keeps a flock level per submitter: a job that flocked must not
    # leave the next job the DTN can run to the pool's negotiator as well
    def remote(desc, attr):
        lines = [line for line in desc.splitlines() if line.startswith(f"+remote_{attr} = ")]
        assert len(lines) == 1, desc
        return lines[0].split(" = ", 1)[1]

    to_dtn = siteinabox.routed_job_description("dtn.site", "dtn", "dtn", dtn_can_run=True)
    flocked = siteinabox.routed_job_description("dtn.site", "dtn", "flock", dtn_can_run=False)
    assert remote(to_dtn, "requirements") == "True" and remote(flocked, "requirements") == "(IsDTN =!= True)"
    assert remote(to_dtn, "AccountingGroup") != remote(flocked, "AccountingGroup")
    assert all(remote(d, "AccountingGroup").startswith('"') and "." in remote(d, "AccountingGroup")
               for d in (to_dtn, flocked))
    assert "grid_resource = condor dtn.site dtn:9618" in to_dtn and to_dtn.endswith("queue 1\n")
