"""E2's scale model (testbed/experiments/e2/e2_scale.py): RAID member limits from a run's own
parity throughput and network rate, against the paper's 12 members (seed 001)."""
import pytest

from testbed.experiments.e2 import e2_scale


def rec(name, value, **params):
    return {"name": name, "value": value, "unit": "MB/s", "params": params}


def test_the_papers_member_is_its_reads_over_its_data_members():
    assert e2_scale.paper_member_mb_s() == 130      # 1300 MB/s at 10 clients over 12 - 2 data members


def test_member_limits_keep_the_arrays_aggregate_against_the_rate():
    assert e2_scale.member_limits(1.0, 12) == (130, 150)           # the paper's own array at k = 1
    mb_s, iops = e2_scale.member_limits(25.8 / 700, 6)
    assert mb_s == pytest.approx(25.8 / 700 * 130 * 10 / 4, abs=0.01) and iops == 11
    assert e2_scale.member_limits(0.0001, 6)[1] == 1                # never 0: that would lift the limit
    with pytest.raises(ValueError):
        e2_scale.member_limits(0, 6)
    with pytest.raises(ValueError):
        e2_scale.member_limits(0.1, 2)


def test_each_claims_rate_gives_its_own_k_from_the_run():
    records = [rec("e2.raid_write_rate", 24.0, stripe_cache_size=32768, spindles="off"),
               rec("e2.raid_write_rate", 27.6, stripe_cache_size=32768, spindles="off"),
               rec("e2.raid_write_rate", 18.6, stripe_cache_size=32768, spindles="emulated"),
               rec("e2.uncached_rate", 0.8, clients=2), rec("e2.uncached_rate", 1.2, clients=4)]
    (parity, k1, limits1, how1), (network, k2, limits2, how2) = e2_scale.scales(records, 6)
    assert k1 == pytest.approx(25.8 / 700) and limits1 == e2_scale.member_limits(25.8 / 700, 6)
    assert "25.8 / 700 MB/s" in how1
    assert k2 == pytest.approx(1.2 / 1000) and limits2[1] == 1 and "4 clients" in how2   # the paper's 4-client figure
    lines = e2_scale.text(records, 6)
    assert f"--set member_mb_per_s={limits1[0]:g} --set member_iops={limits1[1]}" in lines[1]


def test_a_run_without_the_rates_says_so():
    (_, k1, limits1, how1), (_, k2, _, how2) = e2_scale.scales([rec("e2.uncached_rate", 1.0, clients=1)], 6)
    assert k1 is None and limits1 is None and "unlimited" in how1
    assert k2 is None and "client count the paper gives" in how2
    assert "not measured" in e2_scale.text([], 6)[1]
