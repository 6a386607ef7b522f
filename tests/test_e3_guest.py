"""E3's guest tool without ROOT or uproot: its argument parsing, the report it assembles
from a reader's raw measurement, its one-line failures, the ROOT reader's cache set-up
(against a stand-in tree) and the uproot reader's every-n-th slicing."""
import importlib.util
import io
import json

import pytest

from testbed import PROJECT_ROOT

GUEST = PROJECT_ROOT / "provision" / "guest"


def load(name):
    spec = importlib.util.spec_from_file_location(name, GUEST / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


job, ttree, up = load("e3_job"), load("e3_ttree"), load("e3_uproot")


def raw(**kw):
    r = {"events": 200, "entries": 2000, "stop": 2000, "every": 10, "branches": 2, "branches_total": 5,
         "useful_bytes": 200 * 4 * 2, "sums": [3, 4], "wall_s": 2.0, "cpu_s": 1.5, "read_calls": 4,
         "bytes_read": 5000, "open_read_calls": 3, "selected_zip_bytes": 400, "all_zip_bytes": 1000,
         "cache": {"fills": 2, "uncached_reads": 2, "efficiency": 1.0, "efficiency_rel": 0.9}}
    r.update(kw)
    return r


def test_read_arguments_default_to_root_with_its_default_learning():
    a = job.parser().parse_args(["read", "root://dtn:1110//e3/a/data000.root", "--cache-mb", "30"])
    assert (a.reader, a.cache_mb, a.learn_entries, a.every, a.fraction) == ("root", 30.0, 100, 1, 1.0)
    a = job.parser().parse_args(["read", "u", "--reader", "uproot", "--every", "10", "--learn-entries", "0"])
    assert (a.reader, a.every, a.learn_entries) == ("uproot", 10, 0)
    w = job.parser().parse_args(["write", "/d/a", "/d/b", "--cluster-events", "500"])
    assert w.dirs == ["/d/a", "/d/b"] and w.writer == "root" and w.cluster_events == 500


@pytest.mark.parametrize("argv", [["read", "u", "--cache-mb", "ten"], ["read", "u", "--reader", "roo"],
                                  ["read", "u", "--every", "-1"], ["read", "u", "--cache-mb", "-3"]])
def test_bad_read_arguments_are_refused_naming_the_option(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        job.parser().parse_args(argv)
    assert exc.value.code == 2 and f"error: argument {argv[2]}: " in capsys.readouterr().err


def test_the_report_keeps_start_up_out_of_the_event_rate():
    a = job.parser().parse_args(["read", "root://x//f.root", "--cache-mb", "10", "--label", "cell"])
    rep = job.report(a, raw(), {"interp_s": 0.5, "import_s": 20.0, "open_s": 1.5})
    assert rep["events_per_s"] == 100.0 and rep["startup_s"] == 22.0 and rep["cpu_eff"] == 0.75
    assert rep["mb_per_s"] == pytest.approx(0.0008) and rep["read_calls"] == 4 and rep["cache_fills"] == 2
    assert rep["uncached_reads"] == 2 and rep["selected_byte_fraction"] == 0.4
    assert rep["reader"] == "root" and rep["learn_entries"] == 100 and rep["label"] == "cell"
    u = job.report(job.parser().parse_args(["read", "f", "--reader", "uproot"]), raw(cache=None, read_calls=None), {})
    assert u["learn_entries"] is None and u["read_calls"] is None and u["cache_fills"] is None


def test_the_report_gives_the_loops_wait_for_a_cpu_as_a_share_of_its_wall_time():
    a = job.parser().parse_args(["read", "root://x//f.root"])
    rep = job.report(a, raw(run_delay_s=0.5), {})
    assert rep["run_delay_s"] == 0.5 and rep["cpu_wait"] == 0.25
    none = job.report(a, raw(), {})   # a kernel without schedstat: no share, not a zero
    assert none["run_delay_s"] is None and none["cpu_wait"] is None


def test_run_delay_from_schedstat_text():
    assert job.run_delay_s("123000000 2500000000 77\n") == 2.5
    assert job.run_delay_s("garbage") is None


def test_the_loop_clock_counts_only_the_delay_within_the_loop():
    delays = iter([10.0, 10.75])
    with job.LoopClock(delay=lambda: next(delays)) as loop:
        pass
    assert loop.run_delay_s == 0.75 and loop.wall_s >= 0 and loop.cpu_s >= 0
    with job.LoopClock(delay=lambda: None) as unknown:
        pass
    assert unknown.run_delay_s is None


def test_both_readers_sum_the_same_way_so_their_digests_compare():
    assert job.digest([3, 4]) == job.digest([3, 4]) != job.digest([4, 3])
    assert len(job.digest([2 ** 64 - 1])) == 16


def test_private_memory_from_smaps_rollup():
    assert job.private_mb("Rss:  463516 kB\nAnonymous:  113528 kB\n") == 110.9
    assert job.private_mb("Rss: 1 kB\n") is None


def test_process_age_from_proc_text():
    stat = "1234 (python3 (e3) x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 500 20 21"
    assert job.process_age_s(stat, "10.00 3.0", 100) == pytest.approx(5.0)
    assert job.process_age_s("garbage", "10.0", 100) == 0.0


class Raising:
    def __init__(self, exc):
        self.exc = exc

    def read(self, args, clock, loop):
        raise self.exc


def test_a_guest_without_root_says_so_in_one_json_line(monkeypatch):
    monkeypatch.setattr(job, "reader_module", lambda name: Raising(ttree.NoRoot("ModuleNotFoundError: No module named 'ROOT'")))
    out = io.StringIO()
    assert job.read(job.parser().parse_args(["read", "root://dtn//f.root", "--label", "cell"]), out) == 3
    rep = json.loads(out.getvalue())
    assert rep["kind"] == "no-root" and "No module named 'ROOT'" in rep["error"] and rep["label"] == "cell"


def test_a_failed_open_names_the_url(monkeypatch):
    url = "root://nowhere.invalid:1110//e3/a/data000.root"
    for exc in (ttree.ReadFailed(f"TFile::Open({url}) failed"), OSError("Failed to open file")):
        monkeypatch.setattr(job, "reader_module", lambda name: Raising(exc))
        out = io.StringIO()
        assert job.read(job.parser().parse_args(["read", url]), out) == 3
        rep = json.loads(out.getvalue())
        assert rep["kind"] == "read" and url in rep["error"] and "\n" not in rep["error"]


class FakeTree:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *a: self.calls.append((name,) + a)


class FakeCache:
    learn = None

    @classmethod
    def SetLearnEntries(cls, n):
        cls.learn = n


class FakeRoot:
    TTreeCache = FakeCache


@pytest.mark.parametrize("learn,registered", [(100, False), (1, False), (0, True)])
def test_the_cache_is_sized_and_learns_or_is_told_its_branches(learn, registered):
    tree = FakeTree()
    ttree.configure_cache(FakeRoot, tree, ["b0000", "b0001"], 10, learn)
    assert tree.calls[0] == ("SetBranchStatus", "*", 0) and ("SetBranchStatus", "b0001", 1) in tree.calls
    assert ("SetCacheSize", 10 * 2 ** 20) in tree.calls and FakeCache.learn == max(1, learn)
    assert (("AddBranchToCache", "b0000", True) in tree.calls) == registered
    assert (tree.calls[-1] == ("StopCacheLearningPhase",)) == registered


def test_entry_plan_and_selection():
    assert ttree.entry_plan(2000, 1.0, 10) == (2000, 10, 200)
    assert ttree.entry_plan(2000, 0.1, 3) == (200, 3, 67)
    assert ttree.entry_plan(5, 0.0, 0) == (1, 1, 1)
    assert ttree.selection(["a", "b", "c"], 2) == ["a", "b"]


def test_uproot_keeps_the_same_entries_across_steps():
    kept = []
    start = 0
    for n in (7, 5, 9):   # steps of uneven size, as uproot's iterate gives them
        kept += list(range(start, start + n))[up.keep_every(start, n, 3)]
        start += n
    assert kept == list(range(0, 21, 3))
