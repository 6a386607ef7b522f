import re
import shlex

import pytest

from testbed.model import profiles, topology
from testbed.services import tuning
from testbed.model.errors import TestbedError
from testbed.remote.ssh import Result


@pytest.fixture(scope="module")
def small():
    return topology.load("small")


def test_expected_values_follow_roles(small):
    tuned = profiles.load("wan-tuned")
    want = tuning.expected_values(small, tuned, small.hosts["dtn"])
    assert want[("sysctl", "net.ipv4.tcp_rmem")] == "10240 87380 12582912"
    assert want[("md", "stripe_cache_size")] == "256"
    assert want[("xrootd_cache", "diskusage")] == "0.90 0.95"
    submit = tuning.expected_values(small, tuned, small.hosts["submit"])
    assert submit[("condor", "MAX_CONCURRENT_DOWNLOADS")] == "100"
    assert ("md", "stripe_cache_size") not in submit


def _files_in(script):
    quoted = r"'(?:[^']|'\"'\"')*'"    # shlex.quote's: a single-quoted text, '"'"' for a quote
    calls = re.findall(rf"^put_profile_file (\S+) ({quoted}) (\S+)$", script, re.M)
    assert calls and all(path == "/" + name for path, _text, name in calls)
    return {name: shlex.split(text)[0] for _path, text, name in calls}


def _put(tmp_path, path, text, name="f", tools="/nonexistent"):
    """put_profile_file run by bash with `tools` as PATH: ($changed, the file's text)."""
    import subprocess
    script = (f"set -e\nchanged=\n{tuning.PUT_FILE_FUNCTIONS}\n"
              f"put_profile_file {shlex.quote(str(path))} {shlex.quote(text)} {name}\necho \"changed:$changed\"")
    res = subprocess.run(["bash", "-c", script], env={"PATH": tools}, capture_output=True, text=True,
                         executable="/bin/bash")
    assert res.returncode == 0, res.stderr
    return res.stdout.split("changed:", 1)[1].split(), path.read_text()


def test_a_profile_file_is_written_by_builtins_and_a_new_header_alone_is_no_change(tmp_path):
    path = tmp_path / "etc" / "x.conf"     # its folder made (mkdir); after that no tool is needed
    assert _put(tmp_path, path, "# profile a\nA = 1\n", tools="/usr/bin:/bin") == (["f"], "# profile a\nA = 1\n")
    assert _put(tmp_path, path, "# profile b\nA = 1\n") == ([], "# profile b\nA = 1\n")
    assert _put(tmp_path, path, "# profile b\nA = 2\n") == (["f"], "# profile b\nA = 2\n")
    assert _put(tmp_path, path, "# profile b\nA = 2\n") == ([], "# profile b\nA = 2\n")
    text = "# q\nX = 'it''s' \"$HOME\" `id` \\n\ttab\n\n"        # quoting survives the round trip
    assert _put(tmp_path, path, text) == (["f"], text)


def test_apply_script_pushes_profile_files_and_sets_md(small):
    script = tuning.apply_script(small, profiles.load("raid-stripe-32768"), small.hosts["dtn"])
    files = _files_in(script)
    assert set(files) == {"etc/sysctl.d/90-testbed-profile.conf", "etc/condor/config.d/60-testbed-profile.conf",
                          "etc/xrootd/dtn.cfg"}
    assert "echo 32768 > /sys/block/md0/md/stripe_cache_size" in script
    assert "systemctl restart xrootd@xcache" in script  # only when dtn.cfg changed (case on $changed)
    assert "condor_restart" not in script


def test_collector_restarts_only_when_a_socket_knob_changes(small):
    default, coll = profiles.load("default"), profiles.load("collector-tuned")
    cm = small.hosts["cm1"]
    assert "condor_restart -subsystem collector" in tuning.apply_script(small, coll, cm, previous=default)
    assert "condor_restart -subsystem collector" not in tuning.apply_script(small, default, cm, previous=default)
    worker = small.hosts["worker1"]
    assert "condor_restart" not in tuning.apply_script(small, coll, worker, previous=default)


def test_readback_parsing_and_mismatch_messages(small):
    want = {("sysctl", "net.core.rmem_max"): "12582912", ("condor", "UPDATE_INTERVAL"): "600",
            ("sysctl", "net.ipv4.tcp_rmem"): "10240 87380 12582912"}
    text = ("sysctl\tnet.core.rmem_max\t212992 \nsysctl\tnet.ipv4.tcp_rmem\t10240\t87380\t12582912\n"
            "garbage line\n")
    got = tuning.parse_readback(text)
    assert got[("sysctl", "net.ipv4.tcp_rmem")] == "10240 87380 12582912"
    bad = tuning.mismatches("collector-tuned", "cm1", want, got)
    assert bad == ["cm1: condor UPDATE_INTERVAL was not read back",
                   "cm1: sysctl net.core.rmem_max is '212992', profile collector-tuned wants '12582912'"]


def test_readback_script_asks_the_running_master(small):
    script = tuning.readback_script({("condor", "UPDATE_INTERVAL"): "600", ("md", "stripe_cache_size"): "256"})
    assert "condor_config_val -master UPDATE_INTERVAL" in script
    assert "read -r v < /sys/block/md0/md/stripe_cache_size" in script


def test_kernel_values_are_read_without_a_process_each(tmp_path):
    """sysctl and md values come from their files by bash builtins: a PATH without any tool
    still reads them, and a file that is missing reads as an empty value (a mismatch)."""
    import subprocess
    md = tmp_path / "md"
    md.mkdir()
    (md / "stripe_cache_size").write_text("4096\n")
    want = {("sysctl", "net.ipv4.tcp_rmem"): "", ("sysctl", "kernel.no_such_key"): "",
            ("md", "stripe_cache_size"): "4096"}
    script = tuning.readback_script(want).replace(tuning.MD_SYS, str(md))
    res = subprocess.run(["bash", "-c", script], env={"PATH": "/nonexistent"}, capture_output=True, text=True,
                         executable="/bin/bash")
    got = tuning.parse_readback(res.stdout)
    assert res.returncode == 0 and res.stderr == ""
    assert got[("md", "stripe_cache_size")] == "4096"
    assert got[("sysctl", "net.ipv4.tcp_rmem")] == " ".join(open("/proc/sys/net/ipv4/tcp_rmem").read().split())
    assert got[("sysctl", "kernel.no_such_key")] == ""


def test_a_sysctl_key_maps_to_its_proc_file_as_sysctl_does():
    assert tuning.sysctl_path("net.core.rmem_max") == "/proc/sys/net/core/rmem_max"
    assert tuning.sysctl_path("net.ipv4.conf.eth0/1.rp_filter") == "/proc/sys/net/ipv4/conf/eth0.1/rp_filter"


class ReadbackSSH:
    """Applies succeed; read-back reports what `values` says the hosts have."""

    def __init__(self, topo, values):
        self.topo, self.values = topo, values

    def run_many(self, commands, check=False, timeout=None):
        out = {}
        self.calls = getattr(self, "calls", 0) + 1
        for host, cmd in commands.items():
            own, mark, readback = cmd.partition(tuning.READBACK_MARK)
            if not mark and not own.startswith("set -e"):
                own, readback = "", own   # a read-back on its own
            lines = ["changed: etc/sysctl.d/90-testbed-profile.conf"] if own.startswith("set -e") else []
            lines += [tuning.READBACK_MARK] if mark else []
            for section, key in re.findall(r"printf '%s\\t%s\\t%s\\n' (\w+) (\S+) ", readback):
                lines.append(f"{section}\t{key}\t{self.values(host, section, key)}")
            out[host] = Result(host, 0, "\n".join(lines) + "\n", "")
        return out


def test_apply_reads_back_every_value(small):
    prof = profiles.load("wan-tuned")
    ssh = ReadbackSSH(small, lambda h, s, k: tuning.expected_values(small, prof, small.hosts[h])[(s, k)])
    outcome = tuning.apply(small, ssh, prof, echo=lambda *_: None)
    assert outcome["readback"]["worker1"]["sysctl:net.core.rmem_max"] == "12582912"
    assert outcome["changed"]["cm1"] == ["etc/sysctl.d/90-testbed-profile.conf"]
    assert ssh.calls == 1 and not outcome["read_again"]   # read back in the apply's own round trip


def test_a_value_late_to_take_is_read_again(small):
    prof = profiles.load("wan-tuned")
    asked = []

    def values(h, s, k):   # worker1's buffer shows up on the second read only
        asked.append(h)
        if h == "worker1" and k == "net.core.rmem_max" and asked.count("worker1") <= len(
                tuning.expected_values(small, prof, small.hosts["worker1"])):
            return "212992"
        return tuning.expected_values(small, prof, small.hosts[h])[(s, k)]
    ssh = ReadbackSSH(small, values)
    outcome = tuning.apply(small, ssh, prof, echo=lambda *_: None)
    assert ssh.calls == 2 and outcome["read_again"]
    assert outcome["readback"]["worker1"]["sysctl:net.core.rmem_max"] == "12582912"


def test_the_apply_script_reads_back_after_it_applied(small):
    """The read-back runs in the apply's script, after its reconfig, without `set -e`: a value
    it cannot read is a mismatch named by host and knob, not a failed apply."""
    import subprocess
    prof = profiles.load("wan-tuned")
    want = tuning.expected_values(small, prof, small.hosts["worker1"])
    script = ("set -e\n" + f"set +e\necho {tuning.READBACK_MARK!r}\n" + tuning.readback_script(want))
    res = subprocess.run(["bash", "-c", script], env={"PATH": "/nonexistent"}, capture_output=True,
                         text=True, executable="/bin/bash")
    own, mark, back = res.stdout.partition(tuning.READBACK_MARK)
    assert res.returncode == 0 and mark and set(tuning.parse_readback(back)) == set(want)


def test_a_knob_that_did_not_take_is_an_error(small):
    prof = profiles.load("wan-tuned")

    def values(h, s, k):
        if h == "worker1" and k == "net.core.rmem_max":
            return "212992"
        return tuning.expected_values(small, prof, small.hosts[h])[(s, k)]
    with pytest.raises(TestbedError, match=r"worker1: sysctl net.core.rmem_max is '212992', profile wan-tuned"):
        tuning.apply(small, ReadbackSSH(small, values), prof, echo=lambda *_: None, settle=0)


def _run_with_fake_condor_restart(tmp_path, refusals):
    """The collector restart snippet against a condor_restart that refuses `refusals` times."""
    import subprocess
    fake = tmp_path / "condor_restart"
    count = tmp_path / "calls"
    fake.write_text(f"#!/bin/bash\nn=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}\n"
                    f"if [ $n -le {refusals} ]; then echo \"Can't send Kill-Daemon command to local collector\" >&2; "
                    f"exit 1; fi\necho 'Sent \"Restart\" command to local collector'\n")
    fake.chmod(0o755)
    script = "set -e\n" + tuning.collector_restart_script(tries=3, pause=0) + "\necho applied\n"
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    res = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    return res, int(count.read_text())


def test_a_collector_restart_refused_while_the_collector_comes_back_is_retried(tmp_path):
    res, calls = _run_with_fake_condor_restart(tmp_path, refusals=2)
    assert res.returncode == 0 and "applied" in res.stdout and calls == 3


def test_a_collector_that_never_takes_the_restart_fails_the_apply_with_its_message(tmp_path):
    res, calls = _run_with_fake_condor_restart(tmp_path, refusals=99)
    assert res.returncode == 1 and calls == 3 and "applied" not in res.stdout
    assert "collector restart refused 3 times: Can't send Kill-Daemon command" in res.stderr


def _readback_with_fake_condor(tmp_path, knobs):
    """readback_script run by bash against a condor_config_val that knows `knobs` ({name: value};
    -master prints 'Not defined: NAME' in place of a knob it lacks), logging each call."""
    import subprocess
    calls = tmp_path / "calls"
    fake = tmp_path / "condor_config_val"
    table = "\n".join(f"  {k}) echo '{v}';;" for k, v in knobs.items())
    fake.write_text(f"#!/bin/bash\necho \"$*\" >> {calls}\nfor n in \"$@\"; do [ \"$n\" = -master ] && continue\n"
                    f"case $n in\n{table}\n  *) echo \"Not defined: $n\";;\nesac; done\n")
    fake.chmod(0o755)
    want = {("condor", "A_KNOB"): "1", ("condor", "B_KNOB"): "x y", ("sysctl", "kernel.ostype"): "Linux"}
    script = tuning.readback_script(want)
    res = subprocess.run(["bash", "-c", script], env={"PATH": f"{tmp_path}:/usr/sbin:/sbin:/usr/bin:/bin"},
                         capture_output=True, text=True)
    return tuning.parse_readback(res.stdout), calls.read_text().splitlines()


def test_the_masters_knobs_are_read_back_in_one_call(tmp_path):
    got, calls = _readback_with_fake_condor(tmp_path, {"A_KNOB": "1", "B_KNOB": "x\ty"})
    assert calls == ["-master A_KNOB B_KNOB"]
    assert got[("condor", "A_KNOB")] == "1" and got[("condor", "B_KNOB")] == "x y"
    assert got[("sysctl", "kernel.ostype")] == "Linux"


def test_a_knob_the_master_lacks_is_asked_on_its_own(tmp_path):
    got, calls = _readback_with_fake_condor(tmp_path, {"A_KNOB": "1"})
    assert calls[0] == "-master A_KNOB B_KNOB" and "-master A_KNOB" in calls[1:]
    assert got[("condor", "A_KNOB")] == "1"
    assert got[("condor", "B_KNOB")].startswith("Not defined")   # a mismatch, as one by one


def test_the_caching_proxy_is_asked_once_for_all_its_values(tmp_path):
    """The DTN's xrootd_cache values count only while the proxy runs: systemctl is asked once,
    and a proxy that is down reads back as empty values (mismatches), not as its file's."""
    import subprocess
    calls = tmp_path / "calls"
    fake = tmp_path / "systemctl"
    fake.write_text(f"#!/bin/bash\necho \"$*\" >> {calls}\nexit 3\n")   # inactive
    fake.chmod(0o755)
    want = {("xrootd_cache", k): "1" for k in ("ram", "blocksize", "prefetch", "diskusage")}
    res = subprocess.run(["bash", "-c", tuning.readback_script(want)],
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, capture_output=True, text=True)
    assert calls.read_text().splitlines() == ["is-active -q xrootd@xcache"]
    assert tuning.parse_readback(res.stdout) == {key: "" for key in want}
