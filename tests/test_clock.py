"""The testbed's two UTC stamps: a folder name's and a record's, and a record's read back."""
from testbed.model.clock import utc_iso, utc_seconds, utc_stamp
from testbed.results import runs


def test_the_two_stamps_and_the_way_back():
    t = 1795866235   # 2026-11-28 11:43:55 UTC
    assert utc_stamp(t) == "20261128T114355Z" and utc_iso(t) == "2026-11-28T11:43:55Z"
    assert utc_seconds(utc_iso(t)) == t and utc_seconds(utc_iso(t + 0.9)) == t
    assert runs.folder_name("e1", ["default", "wan"], t) == "20261128T114355Z-e1-default+wan"
    assert len(utc_iso()) == len("2026-11-28T11:43:55Z") and utc_stamp().endswith("Z")
