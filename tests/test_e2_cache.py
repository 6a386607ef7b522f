import json

from testbed.experiments.e2 import cache as e2_cache
from testbed.remote.ssh import Result
from testbed.services import storage

CLOSED = {"accesses": [{"B_bypass": 0, "B_hit": 100, "B_miss": 900, "record": 1, "detach": "261127:210101"},
                       {"B_bypass": 0, "B_hit": 1000, "B_miss": 0, "record": 2, "detach": "261127:210202"}],
          "file_size": 1000, "state_complete": "complete", "state_percentage": 100.0}
# the repeated reads attached to the first round's still-open record: one record, misses and hits
MERGED = {"accesses": [{"B_bypass": 0, "B_hit": 1100, "B_miss": 900, "record": 1, "detach": e2_cache.OPEN_DETACH}],
          "file_size": 1000, "state_complete": "complete", "state_percentage": 100.0}


def test_cache_bytes_and_verdict_from_xrdpfc_print_json():
    assert e2_cache.cache_bytes(CLOSED) == (1100, 900, 0)
    assert e2_cache.cache_bytes({}) == (0, 0, 0)
    v = e2_cache.cache_verdict(CLOSED)
    assert v["complete"] and v["accesses"] == 2 and v["pure_hit"] and not v["open"]
    first = dict(CLOSED, accesses=CLOSED["accesses"][:1], state_complete="incomplete")
    v = e2_cache.cache_verdict(first)
    assert not v["complete"] and not v["pure_hit"] and v["last_miss"] == 900


def test_a_record_without_a_detach_time_is_open():
    assert e2_cache.is_open(MERGED)
    assert e2_cache.cache_verdict(MERGED)["open"] and not e2_cache.cache_verdict(MERGED)["pure_hit"]
    assert not e2_cache.is_open(CLOSED)
    assert not e2_cache.is_open({"accesses": []})


def test_records_come_back_by_name_from_one_command():
    script = storage.cache_records_script(["file-001", "file-019"], cache_dir="/cache")
    assert script.count("xrdpfc_print -j /cache/data/file-0") == 2
    text = (f"{storage.RECORD_MARK}file-001\n{json.dumps(CLOSED, indent=1)}\n"
            f"{storage.RECORD_MARK}file-019\n"          # no .cinfo: xrdpfc_print printed nothing
            f"{storage.RECORD_MARK}file-020\nnot json\n")
    records = storage.parse_cache_records(text)
    assert list(records) == ["file-001"] and records["file-001"]["state_complete"] == "complete"


class ClosingSSH:
    """The proxy closes file-019 on the third look."""

    def __init__(self):
        self.looks = 0

    def run(self, host, command, check=True, timeout=None):
        self.looks += 1
        second = CLOSED if self.looks >= 3 else MERGED
        out = "".join(f"{storage.RECORD_MARK}{n}\n{json.dumps(r)}\n"
                      for n, r in (("file-001", CLOSED), ("file-019", second)))
        return Result(host, 0, out, "")


def test_waits_until_every_file_is_closed():
    ssh = ClosingSSH()
    records, pending = e2_cache.wait_closed(ssh, "dtn", ["file-019", "file-001", "file-019"], timeout=60,
                                            interval=0)
    assert pending == [] and ssh.looks == 3
    assert e2_cache.cache_verdict(records["file-019"])["pure_hit"]


def test_names_what_is_still_open_when_the_time_is_up():
    ssh = ClosingSSH()
    ssh.looks = -10**6   # never closes
    records, pending = e2_cache.wait_closed(ssh, "dtn", ["file-001", "file-019"], timeout=0, interval=0)
    assert pending == ["file-019"] and e2_cache.is_open(records["file-019"])


def test_total_bytes_sums_every_files_records():
    assert e2_cache.total_bytes({"a": CLOSED, "b": CLOSED, "c": {}}) == (2200, 1800, 0)
