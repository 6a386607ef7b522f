"""Scaled profiles (testbed/model/scaled_profiles.py): Table 4's columns (seed 000) with their
socket buffer limits times k, on the paper's numbers (555 MB/s, Table 4's values)."""
import json

import pytest
import yaml

from testbed.model import profiles, scaled_profiles as sp
from testbed.model.constants import SCALED_BUFFER_FLOOR, SCALED_CAP_FLOOR
from testbed.model.errors import ConfigError
from testbed.model.state import TestbedState
from testbed.remote import profile_record

PAPER_MBS = 555          # seed 000, Table 3: expected throughput
K = 5.55 / PAPER_MBS     # a site whose HTCondor moves 5.55 MB/s: k = 0.01


def sysctl(prof):
    return prof.section("all", "sysctl")


def test_table4_default_column_at_k_001():
    base = profiles.load("table4-default")
    assert sysctl(base)["net.ipv4.tcp_wmem"] == "4096 16384 4194304"   # seed 000, Table 4, Default Value
    made = sp.scaled(base, K)
    assert made.derived == {"base": "table4-default", "k": 0.01}
    assert sysctl(made) == {
        "net.core.rmem_max": SCALED_CAP_FLOOR,         # 10485760 x 0.01 = 104858, below the floor
        "net.core.wmem_max": SCALED_CAP_FLOOR,         # 212992 x 0.01 = 2130, below the floor
        "net.ipv4.tcp_rmem": "4096 62915 62915",       # max 6291456 x 0.01; 87380 lowered to the max
        "net.ipv4.tcp_wmem": "4096 16384 41943",       # max 4194304 x 0.01; min and default kept
        "net.core.netdev_max_backlog": 1000,           # a packet count: kept
        "net.ipv4.tcp_mtu_probing": 0}                 # a flag: kept


def test_table4_updated_column_at_k_001():
    made = sp.scaled(profiles.load("table4-updated"), K)
    assert sysctl(made) == {
        "net.core.wmem_max": SCALED_CAP_FLOOR, "net.core.rmem_max": SCALED_CAP_FLOOR,  # 125829 < floor
        "net.ipv4.tcp_rmem": "10240 87380 125829", "net.ipv4.tcp_wmem": "10240 87380 125829",
        "net.core.netdev_max_backlog": 250000, "net.ipv4.tcp_mtu_probing": 1}


def test_only_the_buffer_limits_change():
    base = profiles.load("table4-default")
    made = sp.scaled(base, K)
    changed = {(role, section, key) for role, section, key, *_ in profiles.diff(base, made)}
    # wmem_max is the kernel's default already: the cap floor keeps it
    assert changed == {("all", "sysctl", k) for k in ("net.core.rmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")}
    # the paper's transfer concurrency and unencrypted transfers stay as the column has them
    assert made.section("submit", "condor") == base.section("submit", "condor")
    assert made.section("submit", "condor")["MAX_CONCURRENT_DOWNLOADS"] == 10
    assert made.section("dtn", "md") == base.section("dtn", "md")


def test_k_of_one_is_the_column_itself():
    for name in ("table4-default", "table4-updated"):
        base = profiles.load(name)
        assert sysctl(sp.scaled(base, 1.0)) == sysctl(base)


def test_floors_and_the_min_field_bound_a_tiny_k():
    made = sp.scaled(profiles.load("table4-updated"), 1e-6)
    assert sysctl(made)["net.ipv4.tcp_rmem"] == "10240 10240 10240"   # never below the min field
    assert sysctl(made)["net.core.rmem_max"] == SCALED_CAP_FLOOR
    made = sp.scaled(profiles.load("table4-default"), 1e-6)
    assert sysctl(made)["net.ipv4.tcp_wmem"] == f"4096 {SCALED_BUFFER_FLOOR} {SCALED_BUFFER_FLOOR}"


def test_a_cap_stays_at_the_kernels_default_or_above_so_netlink_keeps_working():
    # k = 0.001475 made rmem_max 15466 and `ip -o -4 addr show` failed with ENOBUFS
    made = sp.scaled(profiles.load("table4-default"), 0.001475)
    assert sysctl(made)["net.core.rmem_max"] == SCALED_CAP_FLOOR
    # a cap a profile sets below the kernel's default is kept, never raised
    assert sp.scale_sysctl("net.core.wmem_max", 65536, 0.01)[0] == 65536
    assert sp.scale_sysctl("net.core.wmem_max", 65536, 1.0)[0] == 65536
    # a large k still scales a cap up
    assert sp.scale_sysctl("net.core.rmem_max", 10485760, 0.5)[0] == 5242880


def test_changes_say_what_each_value_became_and_why():
    rows = {r["key"]: r for r in sp.changes(profiles.load("table4-default"), 0.01)}
    assert rows["net.core.wmem_max"]["rule"] == f"x k, floor {SCALED_CAP_FLOOR}"
    assert rows["net.ipv4.tcp_rmem"]["rule"] == "max x k, default lowered to the max"
    assert rows["net.ipv4.tcp_wmem"] == {"role": "all", "key": "net.ipv4.tcp_wmem", "value": "4096 16384 4194304",
                                         "scaled": "4096 16384 41943", "rule": "max x k"}
    assert rows["net.core.netdev_max_backlog"]["rule"] == "kept"


def test_the_rtts_are_kept_and_a_links_rate_limit_scaled(tmp_path):
    path = tmp_path / "far.yaml"
    path.write_text(yaml.safe_dump({"name": "far", "extends": "table4-default", "wan": [
        {"between": ["submit", "worker"], "rtt_ms": 80, "jitter_ms": 1, "loss_pct": 0.1, "rate_mbit": 1000},
        {"between": ["submit", "dtn"], "rtt_ms": 20}]}))
    made = sp.scaled(profiles.load(path), K)
    assert made.wan == [
        {"between": ["submit", "worker"], "rtt_ms": 80, "jitter_ms": 1, "loss_pct": 0.1, "rate_mbit": 10.0},
        {"between": ["submit", "dtn"], "rtt_ms": 20}]
    assert sp.changes(profiles.load(path), 0.01)[-1] == {"role": "wan", "key": "submit<->worker rate_mbit",
                                                         "value": 1000, "scaled": 10.0, "rule": "x k"}


def test_name_spec_and_a_round_trip_through_load():
    made = sp.scaled(profiles.load("table4-default"), 4.79 / PAPER_MBS)
    assert made.name == "table4-default-scaled" and made.derived["k"] == 0.008631   # 4 significant digits
    assert made.spec == "table4-default@k=0.008631" == sp.spec("table4-default", 4.79 / PAPER_MBS)
    assert made.chain == ["table4-default-scaled", "table4-default", "transfer-plain", "default"]
    again = sp.load(made.spec)
    assert again.roles == made.roles and again.name == made.name and again.derived == made.derived
    assert made.as_dict()["derived"] == {"base": "table4-default", "k": 0.008631, "spec": made.spec}
    assert "derived" not in profiles.load("table4-default").as_dict()
    assert sp.base_name("table4-updated-scaled") == "table4-updated" and sp.base_name("default") is None
    assert sp.base_name("-scaled") is None


def test_the_site_record_of_a_scaled_profile_rebuilds_it(tmp_path):
    state = TestbedState("unit", root=tmp_path)
    made = sp.scaled(profiles.load("table4-updated"), 0.02)
    profile_record.record_profile(state, made)
    assert json.loads(state.profile_record.read_text())["profile"]["derived"]["spec"] == "table4-updated@k=0.02"
    back = profile_record.recorded_profile(state)
    assert back.name == "table4-updated-scaled" and back.roles == made.roles


@pytest.mark.parametrize("k", [0, -0.5, float("nan"), float("inf"), "0.1", True])
def test_a_k_that_is_not_a_positive_number_is_refused(k):
    with pytest.raises(ConfigError, match="k: must be a positive number"):
        sp.scaled(profiles.load("table4-default"), k)


def test_bad_specs_and_names_are_one_line_errors():
    with pytest.raises(ConfigError, match="must be a positive number"):
        sp.load("table4-default@k=fast")
    with pytest.raises(ConfigError, match="no such profile"):
        sp.load("nothing@k=0.1")
    with pytest.raises(ConfigError, match=r"k comes from a run's saturation test.*table4-default@k=0.01"):
        sp.load("table4-default-scaled")
    with pytest.raises(ConfigError, match="already scaled"):
        sp.scaled(sp.scaled(profiles.load("table4-default"), 0.1), 0.1)
    with pytest.raises(ConfigError, match="three numbers"):
        sp.scale_sysctl("net.ipv4.tcp_rmem", "4096 87380", 0.1)


def test_a_run_names_a_scaled_profile_before_its_k_is_known():
    pending = sp.for_run("table4-default-scaled")
    entry = pending.as_dict()
    assert entry["name"] == "table4-default-scaled" and entry["k"] is None
    assert entry["scaled_from"] == "table4-default" and entry["base"]["name"] == "table4-default"
    assert sp.for_run("wan-tuned").name == "wan-tuned"
    with pytest.raises(ConfigError, match="no such profile"):
        sp.for_run("nothing-scaled")
