import pytest

from testbed.network import netem, sampler, wan
from testbed.experiments.e1 import jobs as e1_jobs, transfer
from testbed.harness import registry, runner
from testbed.model import topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.remote.ssh import Result
from testbed.services import condor

PING = """PING 10.160.0.13 (10.160.0.13) 56(84) bytes of data.
64 bytes from 10.160.0.13: icmp_seq=1 ttl=64 time=40.9 ms
64 bytes from 10.160.0.13: icmp_seq=2 ttl=64 time=41.3 ms
64 bytes from 10.160.0.13: icmp_seq=3 ttl=64 time=40.6 ms
"""


@pytest.fixture(scope="module")
def small():
    return topology.load("small")


def test_host_script_resolves_the_site_interface_on_the_guest(small):
    link = netem.Link("submit", "worker", 40)
    plans = netem.host_plans(small, [link], device=wan.DEV)
    script = wan.host_script(small.hosts["submit"], plans["submit"])
    assert "$4 ~ /^10\\.160\\.0\\.10\\//" in script
    assert 'tc qdisc del dev "$dev" root 2>/dev/null || true' in script
    assert 'netem delay 20ms limit' in script and "dst 10.160.0.13/32" in script
    assert wan.DEV not in script


def test_parse_ping_and_fidelity_target():
    assert wan.parse_ping(PING) == [40.9, 41.3, 40.6]
    assert wan.within_target(40, 40.9)
    assert wan.within_target(80, 84.5)  # 1 ms + 5% = 5 ms
    assert not wan.within_target(10, 12.1)
    assert wan.within_target(40, 41.5, base=0.8)


class PingSSH:
    def __init__(self, text):
        self.text, self.commands = text, []

    def run(self, host, command, check=True, timeout=None):
        self.commands.append((host, command))
        return Result(host, 0, self.text, "")


def test_measure_pings_across_the_link(small):
    ssh = PingSSH(PING)
    rows = wan.measure(small, ssh, [netem.Link("submit", "worker", 40)], count=3)
    assert rows[0]["measured_ms"] == 40.9 and rows[0]["from"] == "submit" and rows[0]["to"] == "worker1"
    assert ssh.commands[0][1].startswith("ping -n -c 3") and "10.160.0.13" in ssh.commands[0][1]
    with pytest.raises(TestbedError, match="no ping replies"):
        wan.measure(small, PingSSH("100% packet loss"), [netem.Link("submit", "worker", 40)])


def test_sampler_turns_counters_into_rates(small):
    text = "100.0 0 0\n101.0 5000000 1000\n102.0 15000000 1000\nbad line\n103.0 15000000 2000\n"
    series = sampler.rates(sampler.parse(text))
    assert series == [(1.0, 5.0, 0.001), (2.0, 10.0, 0.0), (3.0, 0.0, 0.001)]
    assert sampler.active_mean(series, 1) == 7.5  # the idle second is not averaged in
    cmd = sampler.start_command(small.hosts["submit"], "net", "x")
    assert "rx_bytes" in cmd and "nohup bash -c" in cmd
    assert "/sys/block/md0/stat" in sampler.start_command(small.hosts["dtn"], "md", "y")


def test_equation_one_and_sizes():
    assert e1_jobs.expected_rate(20000, 90, 9 * 3600) == pytest.approx(55.6, abs=0.1)
    assert e1_jobs.expected_rate(4000, 250, 1800) == pytest.approx(555.6, abs=0.1)
    assert e1_jobs.size_for_rate(60, 16, 20) == 75
    assert e1_jobs.size_for_rate(60, 16, 20, cap_mb=48) == 48
    assert e1_jobs.size_for_rate(0.01, 16, 20) == 0.1
    # a slow site: W and 2W still get different sizes
    assert (e1_jobs.size_for_rate(0.17, 8, 20), e1_jobs.size_for_rate(0.35, 8, 20)) == (0.4, 0.9)


def test_job_script_writes_fractional_megabytes(tmp_path):
    import subprocess
    script = tmp_path / "job.sh"
    script.write_text(transfer.JOB_SCRIPT)
    for mb, size in (("0.4", 419430), ("16", 16777216)):
        subprocess.run(["sh", str(script), "0", mb], cwd=tmp_path, check=True)
        assert (tmp_path / "payload").stat().st_size == size
    with pytest.raises(ValueError):
        e1_jobs.expected_rate(1, 1, 0)


def test_job_stats_efficiency_lost():
    ad = {"ClusterId": 7, "ProcId": 1, "ActivationSetupDuration": 2, "ActivationExecutionDuration": 20,
          "ActivationTeardownDuration": 3, "TransferInStarted": 100, "TransferInFinished": 101,
          "TransferOutStarted": 122, "TransferOutFinished": 125, "BytesSent": 30e6, "BytesRecvd": 1e6}
    s = condor.job_stats(ad)
    assert s["job"] == "7.1" and s["efficiency_lost"] == 0.25
    assert s["transfer_in_s"] == 1 and s["transfer_out_s"] == 3 and s["bytes_out"] == 30e6
    assert condor.job_stats({"ActivationExecutionDuration": 0})["efficiency_lost"] is None


def test_scale_overrides_from_set():
    p = transfer.EXPERIMENT.parameters("quick", {"RTTS": "0,20,40", "sweep_jobs": "4"})
    assert p["rtts"] == [0, 20, 40] and p["sweep_jobs"] == 4
    assert transfer.EXPERIMENT.parameters("full")["rtts"] == [0, 10, 20, 40, 80]
    with pytest.raises(ConfigError, match="e1 has no parameter 'unknown'"):
        transfer.EXPERIMENT.parameters("quick", {"unknown": "1"})


def test_parse_sets_and_robot_argv(tmp_path):
    assert runner.parse_sets(["rtts=0,20", "sweep_jobs=4"]) == {"rtts": "0,20", "sweep_jobs": "4"}
    for bad in ("rtts", "=3", "rtts=", "scale=full"):
        with pytest.raises(ConfigError):
            runner.parse_sets([bad])
    argv = runner.robot_argv(registry.get("e1"), "quick", tmp_path)
    assert argv[-1].endswith("e1_transfer_limits.robot")
    # the rest of the run's context (topology file, profiles, --set values) is in the manifest
    assert [a for a in argv if ":" in a and a.split(":")[0].isupper()] == ["SCALE:quick", f"RESULTS_DIR:{tmp_path}"]
    with pytest.raises(ConfigError, match="unknown suite 'e9'"):
        registry.get("e9").suite_path


XFER_LOG = """11/21/26 09:04:56 (7.0) (3136): File Transfer Upload: JobId: 7.0 files: 2 bytes: 1048772 seconds: 0.50 dest: 10.160.0.13 rto: 208000
11/21/26 09:05:30 (7.0) (3136): File Transfer Download: JobId: 7.0 files: 1 bytes: 16777216 seconds: 1.50 dest: 10.160.0.13 rto: 208000
11/21/26 09:05:31 (7.1) (3137): File Transfer Download: JobId: 7.1 files: 1 bytes: 16777216 seconds: 3.00 dest: 10.160.0.13
11/21/26 09:05:31 (8.0) (3138): File Transfer Download: JobId: 8.0 files: 1 bytes: 16777216 seconds: 9.00 dest: 10.160.0.13
"""


def test_transfer_stats_log_gives_sub_second_efficiency_lost():
    xfers = transfer.parse_xfer_stats(XFER_LOG, 7)
    assert xfers == [("upload", "7.0", 1048772, 0.5), ("download", "7.0", 16777216, 1.5),
                     ("download", "7.1", 16777216, 3.0)]
    stats = [{"job": "7.0", "execution_s": 20.0}, {"job": "7.1", "execution_s": 20.0}]
    assert transfer.transfer_over_compute(stats, xfers) == pytest.approx((2.0 / 20 + 3.0 / 20) / 2)


def test_recorded_profile_round_trip_and_missing(tmp_path):
    from testbed.model import profiles
    from testbed.model.state import TestbedState
    from testbed.remote import profile_record
    state = TestbedState("small", root=tmp_path)
    assert profile_record.recorded_profile(state) is None
    profile_record.record_profile(state, profiles.load("wan-tuned"))
    assert profile_record.recorded_profile(state).name == "wan-tuned"
    state.profile_record.write_text("{not json")
    assert profile_record.recorded_profile(state) is None


def test_unfinished_jobs_are_described_with_their_reasons():
    from testbed.services.job_events import describe_jobs
    ads = [{"ClusterId": 7, "ProcId": 20, "JobStatus": 1, "NumShadowStarts": 2, "NumShadowExceptions": 2,
            "LastRejMatchReason": "no match found", "LastRemoteHost": "slot1_3@worker1"},
           {"ClusterId": 7, "ProcId": 3, "JobStatus": 2, "NumShadowStarts": 1}]
    text = describe_jobs(ads)
    assert text.startswith("1 idle, 1 running; 7.3 running (NumShadowStarts=1); 7.20 idle (")
    assert "NumShadowExceptions=2" in text and "LastRejMatchReason=no match found" in text
    assert describe_jobs([]) == "no unfinished jobs"


def test_clear_queue_removes_leftovers_and_waits_until_empty(monkeypatch):
    from testbed.services import condor
    from testbed.model import topology
    from testbed.remote.ssh import Result
    from testbed.remote import poll
    monkeypatch.setattr(poll.time, "sleep", lambda s: None)

    class FakeSSH:
        def __init__(self, counts):
            self.counts, self.commands = list(counts), []

        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            self.commands.append(command)
            # condor_q -af ClusterId: one line per job, then queued()'s success sentinel
            out = "7\n" * self.counts.pop(0) + condor.Pool.QUEUED_OK + "\n" if "condor_q" in command else ""
            return Result(host, 0, out, "")

    topo = topology.load("small")
    ssh = FakeSSH([4, 4, 1, 0])
    assert condor.Pool(topo, ssh).clear_queue() == 4
    assert [c for c in ssh.commands if "condor_q" not in c] == ["condor_rm -all"]
    empty = FakeSSH([0])
    assert condor.Pool(topo, empty).clear_queue() == 0 and len(empty.commands) == 1


def test_sweep_summaries_and_output_checks_from_recorded_points():
    recs = [{"name": "e1.efficiency_lost", "value": v, "params": {"rtt_ms": rtt, "rate": "2W", "profile": p}}
            for p, rtt, v in (("default", 0.0, 0.1), ("default", 80.0, 0.4), ("wan-tuned", 0.0, 0.1),
                              ("wan-tuned", 80.0, 0.2))] + [{"name": "e1.tcp_rate", "value": 9, "params": {}}]
    assert transfer.loss_ratios(recs, 0, 80) == [(pytest.approx(4.0), {"rate": "2W", "profile": "default"}),
                                                 (pytest.approx(2.0), {"rate": "2W", "profile": "wan-tuned"})]
    assert transfer.tuning_gains(recs, 80) == [(pytest.approx(2.0), {"rate": "2W", "rtt_ms": 80.0,
                                                                     "profile": "wan-tuned"})]
    assert transfer.loss_ratios(recs, 0, 40) == []
    sizes = transfer.parse_output_sizes("payload.0 419430\npayload.1 1\nnoise\n")
    assert sizes == {0: 419430, 1: 1}
    assert transfer.bad_outputs(3, 0.4, sizes) == [1, 2]
    assert e1_jobs.rate_label(1) == "W" and e1_jobs.rate_label("2") == "2W"


def test_a_tuned_profiles_gain_is_over_the_profile_it_extends():
    from testbed.experiments.e1 import transfer
    recs = [{"name": "e1.efficiency_lost", "value": v, "params": {"profile": p, "rate": "2W", "rtt_ms": 80.0}}
            for p, v in (("table4-default", 0.8), ("table4-updated", 0.4), ("default", 0.6), ("wan-tuned", 0.3),
                         ("transfer-plain", 0.5))]
    gains = {p["profile"]: g for g, p in transfer.tuning_gains(recs, 80)}
    assert gains == {"table4-updated": 2.0, "wan-tuned": 2.0, "transfer-plain": 1.2, "table4-default": 0.625}
    assert transfer.tuning_gains(recs[:1] + recs[3:4], 80) == []  # no pair measured
