"""E3 (FAX): the RTT matrix, the worker's routing and netem commands, reports and figures."""
import ipaddress
import json

import pytest

from testbed.experiments.e3 import fax
from testbed.experiments.e3 import e3_capacity, e3_points, e3_site
from testbed.harness import registry
from testbed.model import constants as c
from testbed.model.errors import ConfigError

NET = ipaddress.ip_network("10.160.0.0/24")
SITES = ["a", "b", "c"]


def test_matrix_is_symmetric_with_zero_diagonal():
    m = e3_site.rtt_matrix(SITES, [5, 20, 80])
    assert [m[s][s] for s in SITES] == [0, 0, 0]
    assert m["a"]["b"] == m["b"]["a"] == 5 and m["a"]["c"] == 20 and m["b"]["c"] == 80
    assert e3_site.concurrency_cell(m, 5) == ("a", "b")
    with pytest.raises(ValueError):
        e3_site.concurrency_cell(m, 40)
    with pytest.raises(ValueError):
        e3_site.rtt_matrix(SITES, [0])


def test_worker_commands_give_each_cell_its_own_netem_class():
    m = e3_site.rtt_matrix(SITES, [5, 20, 80])
    cmds = e3_site.worker_setup_commands(SITES, m, NET, "10.160.0.20", "eth1")
    text = [" ".join(x) for x in cmds]
    assert "ip addr replace 10.160.0.201/24 dev eth1" in text
    assert "ip route replace 10.160.0.0/24 dev eth1 src 10.160.0.202 table 302" in text
    # only traffic to the DTN takes the site's address (the job's file transfers keep the worker's)
    assert "ip rule add priority 303 uidrange 62003-62003 to 10.160.0.20/32 lookup 303" in text
    netems = [t for t in text if " netem " in t]
    assert len(netems) == 6 and sum("delay 80ms" in t for t in netems) == 2
    filters = [t for t in text if "filter add" in t]
    assert any("src 10.160.0.201/32" in t and "dport 1113 0xffff" in t for t in filters)
    assert text.index("tc qdisc del dev eth1 root") < text.index(next(t for t in text if "prio bands 9" in t))
    # deletions are tolerated, so applying twice is safe
    s = e3_site.script(cmds, "10.160.0.30")
    assert "ip rule del priority 301 2>/dev/null || true" in s


def test_the_redirect_is_delayed_by_the_rtt_to_the_redirectors_site():
    m = e3_site.rtt_matrix(SITES, [5, 20, 80])  # a-b 5 ms, a-c 20 ms, b-c 80 ms
    assert e3_site.redirector_site(SITES) == "a"
    assert [e3_site.redirect_rtt(m, SITES, x) for x in SITES] == [0, 5, 20]
    cmds = e3_site.worker_setup_commands(SITES, m, NET, "10.160.0.20", "eth1")
    delay_of = {x[x.index("parent") + 1]: x[x.index("delay") + 1] for x in cmds if "netem" in x}
    redirect = {}
    for x in cmds:
        if "filter" in x and x[x.index("dport") + 1] == str(c.E3_REDIRECTOR_PORT):
            assert x[x.index("dst") + 1] == "10.160.0.20/32"
            redirect[x[x.index("src") + 1]] = delay_of[x[x.index("flowid") + 1]]
    # site b's address (.202) pays b-a's 5 ms, c's (.203) c-a's 20 ms; site a's own readers none
    assert redirect == {"10.160.0.202/32": "5ms", "10.160.0.203/32": "20ms"}
    # the redirect shares its cell's class: no band of its own (four sites still fit in 16)
    assert sum("filter" in x for x in cmds) == 6 + 2 and sum("netem" in x for x in cmds) == 6


def test_teardown_undoes_every_setup_step():
    down = [" ".join(x) for x in e3_site.worker_teardown_commands(SITES, NET, "eth1")]
    for s in SITES:
        uid, table = e3_site.site_uid(SITES, s), e3_site.site_table(SITES, s)
        assert f"ip rule del priority {table}" in down
        assert f"ip route flush table {table}" in down
    assert down[0] == "tc qdisc del dev eth1 root"


def test_too_many_cells_for_prio_are_refused():
    with pytest.raises(ValueError):
        e3_site.site_names(5)


def test_federation_config_is_rendered_from_the_template():
    class H:
        name = "dtn"
    cfg = e3_site.render_federation(H(), SITES)
    assert f"xrd.port    {c.E3_REDIRECTOR_PORT}" in cfg
    assert "if named e3redir" in cfg and "else if named e3-c" in cfg
    assert "all.export  /e3/b r/o" in cfg and "all.manager dtn:3131" in cfg
    assert e3_site.federation_units(["a"]) == ["cmsd@e3redir", "xrootd@e3redir", "cmsd@e3-a", "xrootd@e3-a"]
    assert "install -d -o root -g root -m 0755" in e3_site.federation_script(SITES, cfg)


def test_users_and_condor_conf():
    s = e3_site.users_script(SITES)
    assert "--uid 62001" in s and "tb-e3c" in s
    assert "userdel tb-e3a" in e3_site.users_script(SITES, add=False)
    assert "tb-e3b@$(UID_DOMAIN)" in e3_site.condor_users_conf(SITES)


def test_job_description_reads_through_the_redirector():
    p = registry.get("e3").parameters("ci")
    d = fax.job_description(["root://dtn:1110//e3/b/data000.root"], p, 10, "worker1.small.testbed")
    assert "transfer_executable = False" in d and c.E3_PYTHON in d and c.E3_TOOL in d
    assert "--reader uproot --branches 40 --fraction 1 --every 1 --cache-mb 10 --label job" in d
    assert "--learn-entries" not in d and d.count("queue") == 1
    r = fax.job_description(["u1", "u2"], p, "30", "w", label="conn", reader="root", every=10, learn_entries=0)
    # one queue statement over one argument line per URL, in order (HTCondor 25 takes one queue only)
    assert r.count("queue") == 1 and 'arguments = "$(reader_args)"' in r and r.rstrip().endswith(")")
    items = r.split("queue reader_args from (\n")[1].splitlines()[:-1]
    assert [line.split()[2] for line in items] == ["u1", "u2"]
    assert "--reader root" in r and "--every 10 --cache-mb 30" in r
    assert "--learn-entries 0" in r


@pytest.mark.parametrize("value", ["ten", "", "-10", "0", "nan"])
def test_a_cache_size_that_does_not_parse_names_the_row(value):
    with pytest.raises(ConfigError) as exc:
        fax.cache_mb_of(value, "robot/suites/e3_fax_wan_reads.robot, row a<-b")
    msg = str(exc.value)
    assert msg.startswith("robot/suites/e3_fax_wan_reads.robot, row a<-b: cache_mb: ") and "\n" not in msg
    assert fax.cache_mb_of("30", "x") == 30.0 and fax.cache_mb_of("10MB", "x") == 10.0


def test_an_unknown_reader_is_refused_with_the_row():
    with pytest.raises(ConfigError, match="row a: reader: 'roo' is not a reader \\(root, uproot\\)"):
        fax.reader_of("roo", "row a")


def test_readers_after_the_first_read_only_their_rows():
    ci = registry.get("e3").parameters("ci")
    assert fax.main_reader(ci) == "uproot"
    sites = ["a", "b"]
    assert fax.reader_reads_row(ci, "uproot", "b", sites)
    assert fax.reader_reads_row(ci, "root", "a", sites) and not fax.reader_reads_row(ci, "root", "b", sites)
    quick = registry.get("e3").parameters("quick")
    assert fax.main_reader(quick) == "root" and fax.reader_reads_row(quick, "uproot", "c", ["a", "b", "c"])


def test_expected_events_of_every_nth_and_a_fraction():
    p = {"events": 2000}
    assert fax.expected_events(p) == 2000 and fax.expected_events(p, every=10) == 200
    assert fax.expected_events(p, every=3) == 667 and fax.expected_events(p, fraction=0.1, every=10) == 20


def test_quick_files_need_the_larger_cache():
    """The docstring's arithmetic: the selection of a quick file is above 30 MB at the
    measured ~2.2 B per value (a change of scale that breaks it fails here)."""
    q = registry.get("e3").parameters("quick")
    selected_mb = q["read_branches"] * q["events"] * 2.2 / 1e6
    assert selected_mb > max(q["cache_mbs"]) and q["read_branches"] <= q["branches"]
    assert set(q["readers"]) == set(c.E3_READERS) and 0 in q["learn_entries"]


def test_a_guest_without_root_names_the_box_and_how_to_build_it():
    r = {"error": "ModuleNotFoundError: No module named 'ROOT'", "kind": "no-root", "host": "worker1"}
    msg = fax.job_failure(r, "w", "grid-testbed-debian13-abc")
    assert msg.startswith("worker1 has no ROOT in /opt/tb-e3/bin/python") and "\n" not in msg
    assert "`testbed box build`" in msg and "grid-testbed-debian13-abc" in msg
    url = "root://dtn:1110//e3/z/data000.root"
    bad = fax.job_failure({"error": f"TFile::Open({url}) failed", "kind": "read", "label": "cell",
                           "reader": "root"}, "w", "box")
    assert url in bad and bad.startswith("E3 job cell (root) failed")
    assert fax.job_failure({"events": 1}, "w", "box") is None and fax.job_failure(None, "w", "box") is None


def _report(**kw):
    r = {"url": "root://dtn:1110//e3/a/data000.root", "events": 2000, "digest": "x", "events_per_s": 100.0}
    r.update(kw)
    return r


def test_parse_and_check_reports():
    text = "warning\n" + json.dumps(_report()) + "\n"
    assert fax.parse_report(text)["events"] == 2000
    assert fax.parse_report("nothing") is None
    assert fax.check_reports({0: _report()}, 2000, {"data000.root": "x"}) == []
    bad = fax.check_reports({0: _report(events=10), 1: None, 2: _report(digest="y"),
                             3: {"error": "TFile::Open(root://x) failed"}}, 2000, {"data000.root": "x"})
    assert len(bad) == 4 and bad[3] == "3: TFile::Open(root://x) failed"


def test_both_readers_must_agree_on_what_a_url_holds():
    seen = {}
    assert fax.digest_disagreements([_report(reader="root")], seen) == []
    assert fax.digest_disagreements([_report(reader="uproot")], seen) == []
    assert fax.digest_disagreements([_report(reader="uproot", every=10, digest="other")], seen) == []
    bad = fax.digest_disagreements([_report(reader="uproot", digest="z")], seen)
    assert bad == ["root://dtn:1110//e3/a/data000.root (uproot: z != x)"]


def _rec(name, value, **params):
    return {"name": name, "value": value, "params": params}


def test_figures_ratios_spread_and_tables():
    recs = [_rec("e3.events_per_s", 100, storage=x, compute=x, rtt_ms=0, cache_mb=10) for x in SITES]
    recs += [_rec("e3.events_per_s", 50, storage="a", compute="b", rtt_ms=5, cache_mb=10),
             _rec("e3.events_per_s", 20, storage="a", compute="c", rtt_ms=80, cache_mb=10)]
    assert fax.off_over_diag(recs, 10) == {5.0: 0.5, 80.0: 0.2}
    assert fax.off_over_diag(recs, 30) == {}
    assert fax.spread([301, 378]) == pytest.approx(378 / 301)
    assert fax.spread([]) is None
    table = fax.cell_table(recs, "e3.events_per_s", SITES, 10)
    assert table.splitlines()[1].split() == ["a", "100", "50", "20"]
    assert "off-diagonal / diagonal: 5 ms 0.50, 80 ms 0.20" in fax.render_summary(recs)


def test_round_trip_share_bounds_what_the_rtt_can_cost_a_counted_reader():
    at = dict(cache_mb=10, reader="root", learn_entries=100)
    recs = [_rec("e3.events_per_s", 1000, storage="a", compute="a", rtt_ms=0, **at),
            # 2 calls of 110.5 KB: 4 doublings of the 14480-byte initial window, so 5 RTTs a call
            _rec("e3.read_calls", 2, storage="b", compute="a", rtt_ms=20, **at),
            _rec("e3.bytes_read_mb", 0.221, storage="b", compute="a", rtt_ms=20, **at),
            _rec("e3.read_calls", 9, storage="a", compute="a", rtt_ms=0, **at)]
    # the diagonal's loop: 2000 events at 1000 ev/s = 2 s; the far cell's: 2 x 5 x 20 ms = 0.2 s
    assert e3_points.round_trip_share(recs, 10, "root", 2000) == {20: pytest.approx(0.1)}
    # a reader that counts no calls (uproot) and a cache size without cells have no bound
    assert e3_points.round_trip_share(recs, 10, "uproot", 2000) == {}
    assert e3_points.round_trip_share(recs, 30, "root", 2000) == {}


def test_ratios_are_per_reader_and_leave_the_learning_rows_out():
    root = dict(reader="root", learn_entries=100, cache_mb=30)
    recs = [_rec("e3.events_per_s", 200, storage="a", compute="a", rtt_ms=0, **root),
            _rec("e3.events_per_s", 150, storage="b", compute="a", rtt_ms=80, **root),
            _rec("e3.events_per_s", 10, storage="b", compute="a", rtt_ms=80, **dict(root, learn_entries=0)),
            _rec("e3.events_per_s", 100, storage="a", compute="a", rtt_ms=0, cache_mb=30)]
    assert fax.off_over_diag(recs, 30, "root") == {80.0: 0.75}
    assert fax.off_over_diag(recs, 30, "uproot") == {}
    text = fax.render_summary(recs + [_rec("e3.read_calls", 1, storage="b", compute="a", reader="root",
                                           cache_mb=30, learn_entries=0)])
    assert "events/s, root, cache 30 MB" in text and "learning 0): 1" in text


def test_learning_rows_read_the_cell_with_the_largest_rtt_and_its_own_site():
    m = e3_site.rtt_matrix(SITES, [5, 40, 80])
    assert e3_site.far_cell(m) == (("b", "c"), ("b", "b"))


def test_data_lines():
    out = '{"site": "a", "file": "data000.root", "bytes": 5, "sha256": "ab", "events": 1, "branches": 2}\n'
    assert fax.parse_data_lines(out)[("a", "data000.root")]["sha256"] == "ab"
    script = e3_site.data_script(["a", "b"], registry.get("e3").parameters("ci"))
    # one interpreter start writes every site's files, with ROOT
    assert script.count(" write ") == 1 and "--writer root" in script and "--cluster-events 0" in script
    assert f"{c.E3_LOCALROOT}/e3/a {c.E3_LOCALROOT}/e3/b --writer" in script


def test_the_suite_pushes_every_file_of_the_guest_tool():
    guest = fax.PROJECT_ROOT / "provision" / "guest"
    assert all((guest / name).is_file() for name in c.E3_TOOL_FILES)
    assert c.E3_TOOL == f"{c.E3_TOOL_DIR}/{c.E3_TOOL_FILES[0]}"


def test_reader_tool_reads_what_it_wrote(tmp_path):
    """The guest tool itself with uproot, when uproot is importable here (skipped otherwise)."""
    pytest.importorskip("uproot")
    import subprocess
    import sys
    tool = fax.PROJECT_ROOT / "provision" / "guest" / "e3_job.py"
    w = subprocess.run([sys.executable, str(tool), "write", str(tmp_path), "--writer", "uproot", "--files", "1",
                        "--events", "300", "--branches", "50", "--basket-events", "100"],
                       capture_output=True, text=True, check=True)
    assert len(json.loads(w.stdout)["sha256"]) == 64
    r = subprocess.run([sys.executable, str(tool), "read", str(tmp_path / "data000.root"), "--reader", "uproot",
                        "--branches", "10", "--every", "10"], capture_output=True, text=True, check=True)
    rep = fax.parse_report(r.stdout)
    assert rep["events"] == 30 and rep["branches"] == 10 and 0 < rep["cpu_eff"] <= 1.5


def test_concurrency_misfit_names_jobs_memory_and_host():
    assert e3_capacity.concurrency_misfit(4, 80, 400, "worker1") is None
    msg = e3_capacity.concurrency_misfit(8, 80, 400, "worker1")
    assert "8 jobs x 80 MB" in msg and "640 MB > 400 MB available on worker1" in msg
    assert e3_capacity.concurrency_misfit(1, 100.0, 99, "w") is not None


def test_root_jobs_share_their_libraries_so_further_jobs_count_their_private_memory():
    assert e3_capacity.concurrency_misfit(2, 460, 700, "worker1", private_mb=150) is None
    msg = e3_capacity.concurrency_misfit(4, 460, 700, "worker1", private_mb=150)
    assert "460 MB (a job's peak RSS) + 3 x 150 MB (each further job's private memory) = 910 MB > 700 MB" in msg
    assert e3_capacity.jobs_that_fit(460, 700, 150) == 2 and e3_capacity.jobs_that_fit(460, 300, 150) == 1


def test_jobs_that_fit_at_least_one():
    assert e3_capacity.jobs_that_fit(80, 330) == 4
    assert e3_capacity.jobs_that_fit(80, 10) == 1
    assert e3_capacity.jobs_that_fit(0, 50) == 50


def test_four_sites_name_every_band_as_tc_reads_it_in_hex():
    sites = ["a", "b", "c", "d"]
    matrix = e3_site.rtt_matrix(sites, [5, 20, 40, 80])
    cmds = [" ".join(x) for x in e3_site.worker_setup_commands(sites, matrix, NET, "10.160.0.20", "eth1")]
    assert any("prio bands 15" in t for t in cmds)
    parents = [t.split(" parent ")[1].split()[0] for t in cmds if " netem " in t]
    flows = [t.split(" flowid ")[1] for t in cmds if " flowid " in t and " dport 1110 " not in t]
    assert parents == flows and len(parents) == 12
    redirects = [t.split(" flowid ")[1] for t in cmds if " dport 1110 " in t]
    assert len(redirects) == 3 and set(redirects) <= set(parents)  # b, c and d pay their RTT to a
    # every class is a band of the 15-band prio (tc parses the minor as hex), each used once
    assert sorted(int(p.split(":")[1], 16) for p in parents) == list(range(4, 16))
    assert "1:a" in parents and "1:10" not in parents
    handles = [t.split(" handle ")[1].split()[0] for t in cmds if " netem " in t]
    assert len(set(handles)) == 12


class _Host:
    def __init__(self, name, ip):
        self.name, self.site_ip = name, ip


class _Topo:
    site_net = NET
    trust_domain = "small.testbed"

    def role_host(self, role):
        return {"dtn": _Host("dtn", "10.160.0.20"), "submit": _Host("submit", "10.160.0.10")}[role]

    def with_role(self, role):
        return [_Host("worker1", "10.160.0.30")]


class _ProbeSSH:
    """Answers tcp_rtt_script: each probe's connect time is its source's last octet + its port's
    offset from 1100 (so every (address, port) pair is told apart)."""

    def run(self, host, script, timeout=None):
        import re
        from types import SimpleNamespace
        probes = json.loads(re.search(r"^probes = (.*)$", script, re.M).group(1))
        lines = [json.dumps({"src": s, "port": p, "ms": int(s.rsplit(".", 1)[1]) + p - 1100}) for s, _d, p in probes]
        return SimpleNamespace(stdout="\n".join(lines) + "\n")


def test_the_redirector_port_is_probed_from_every_site_and_points_say_what_the_redirect_paid():
    params = dict(registry.get("e3").parameters("quick"))  # 3 sites: a-b 5, a-c 40, b-c 80 ms
    exp = fax.FaxExperiment(_Topo(), _ProbeSSH(), params)
    cells_ms, redirect_ms = exp.measure_cell_rtts()
    assert cells_ms[("b", "c")] == 202 + 13 and len(cells_ms) == 9
    assert redirect_ms == {"a": 201 + 10, "b": 202 + 10, "c": 203 + 10}   # port 1110, each site's address
    assert [exp.redirect_rtt(x) for x in exp.sites] == [0, 5, 40]
