"""E5's headline table (compare's text table and benchmarks/e5_scale.py): which figures it
picks from a run's records, how it shows figures a run did not measure, and two columns."""
import subprocess
import sys

from testbed import PROJECT_ROOT
from testbed.experiments.e5 import e5_figures
from testbed.results import runs
from tests.support import script_env


def rec(name, value, unit="", **params):
    return {"name": name, "value": value, "unit": unit, "params": params}


RUN = [
    rec("e5.max_running", 382, "jobs", limit="memory", profile="default"),
    # the submit guest's MemAvailable at three steps of the ramp: 1.5 MB a running job
    *[rec("e5.guest_mem_available", free, "MB", host="submit", step=step, profile="default")
      for step, free in ((16, 800), (32, 776), (64, 728))],
    *[rec("e5.guest_mem_available", 500, "MB", host="dtn", step=step, profile="default") for step in (16, 32, 64)],
    *[rec("e5.ramp_running", step, "jobs", step=step, profile="default") for step in (16, 32, 64)],
    rec("e5.tcp_streams", 15, "streams", config="before", startds=2),
    rec("e5.tcp_streams", 7, "streams", config="after", startds=2),
    rec("e5.cm_failover_negotiator", 41.0, "s", killed="cm1"),
    rec("e5.jobs_restarted", 0, "jobs", event="cm-kill", running=15),
    rec("e5.jobs_restarted", 1, "jobs", event="ccb-outage", running=15),
    # five cycles per RTT: the point is the fastest; rtt_ms as Robot records it (text)
    rec("e5.negotiation_cycle", 0.71, "s", rtt_ms="0", requests="50"),
    rec("e5.negotiation_cycle", 0.28, "s", rtt_ms="0", requests="50"),
    rec("e5.negotiation_cycle", 0.45, "s", rtt_ms="100", requests="50"),
    rec("e5.negotiation_prefetch", 0.088, "s", rtt_ms="0", requests="50"),
    rec("e5.negotiation_prefetch", 0.249, "s", rtt_ms="100", requests="50"),
    rec("e5.negotiation_prefetch_round_trips", 1.6, "round trips", requests="50"),
]


def figure(rows, name):
    found = [(value, paper) for _, f, value, _, paper in rows if f == name]
    assert len(found) == 1, name
    return found[0]


def test_summary_picks_the_ramp_limit_streams_and_restarts():
    rows = e5_figures.summary(RUN)
    assert figure(rows, "running sleep jobs reached") == (382, "~95k (one schedd, Fig. 6)")
    assert figure(rows, "limit that stopped the ramp")[0] == "memory"
    per_job, paper = figure(rows, "submit host's memory per running job")
    assert round(per_job, 9) == 1.5 and paper == "1.38 (742 jobs/GB)"
    assert figure(rows, "TCP streams per worker, before") == (15, "11")
    assert figure(rows, "TCP streams per worker, after") == (7, "5")
    assert figure(rows, "jobs restarted by ccb-outage")[0] == 1
    assert figure(rows, "jobs restarted by cm-kill")[0] == 0
    assert figure(rows, "CM killed: a new job matched after")[0] is None   # not in this run


def test_negotiation_points_are_the_fastest_cycle_per_rtt():
    """RUN's records carry no protocol (as runs before the protocol axis): the batched rows."""
    rows = e5_figures.summary(RUN)
    assert figure(rows, "fastest cycle at 0 ms, 50 requests, batched")[0] == 0.28
    assert figure(rows, "fastest cycle at 100 ms, 50 requests, batched") == (0.45, "346 s (1000 requests, 70% less)")
    assert figure(rows, "request-list prefetch at 100 ms, batched")[0] == 0.249
    assert figure(rows, "round trips the WAN added to the request-list fetch, batched")[0] == 1.6


def test_negotiation_figures_per_protocol_beside_the_papers():
    per_request = [rec("e5.negotiation_cycle", 3.1, "s", protocol="per-request", rtt_ms="0", requests="200"),
                   rec("e5.negotiation_cycle", 24.0, "s", protocol="per-request", rtt_ms="100", requests="200"),
                   rec("e5.negotiation_wan_over_lan", 7.7, "ratio", protocol="per-request", requests="200"),
                   rec("e5.negotiation_round_trips_per_request", 1.05, "round trips", protocol="per-request",
                       requests="200")]
    rows = e5_figures.summary(RUN + per_request)
    assert figure(rows, "fastest cycle at 0 ms, 200 requests, per-request") == (3.1, "30 s (1000 requests)")
    assert figure(rows, "fastest cycle at 100 ms, 200 requests, per-request") == (24.0, "1153 s (1000 requests)")
    assert figure(rows, "WAN cycle over LAN cycle, per-request") == (7.7, "38.4")
    assert figure(rows, "round trips the WAN added per request, per-request") == (1.05, "11.2")
    assert figure(rows, "WAN cycle over LAN cycle, batched") == (None, "11.5")   # RUN has no summary
    assert figure(rows, "fastest cycle at 100 ms, 50 requests, batched")[0] == 0.45  # not the per-request 24


def test_text_has_a_column_per_run_and_leaves_out_what_no_run_measured():
    other = [rec("e5.max_running", 16, "jobs", limit="slots", profile="default"),
             rec("e5.negotiation_cycle", 1.2, "s", rtt_ms="20", requests="200")]
    text = e5_figures.text({"A-default": RUN, "B-default": other})
    header = text.splitlines()[1]
    assert "A-default" in header and "B-default" in header and "paper" in header
    ramp = next(line for line in text.splitlines() if "limit that stopped" in line)
    assert "memory" in ramp and "slots" in ramp
    assert "fastest cycle at 20 ms, 200 requests, batched" in text      # only B measured it
    assert "collector killed" not in text                       # neither run measured it
    assert e5_figures.text({"x": [rec("e1.raw_tcp", 1.0)]}) == "E5 figures: no E5 metrics in these runs"



def test_the_benchmark_prints_a_runs_figures(tmp_path, monkeypatch):
    run = runs.Run.create("e5", ["default"], "small", {"default": {}}, "tcg", scale="ci", root=tmp_path)
    for r in RUN:
        run.record(r["name"], r["value"], r["unit"], **r["params"])
    run.finish("complete")
    out = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "e5_scale.py"), str(run.path)],
                         capture_output=True, text=True, env=script_env())
    assert out.returncode == 0, out.stderr
    assert "E5 figures from" in out.stdout and "running sleep jobs reached" in out.stdout
    assert "382" in out.stdout and "memory" in out.stdout
    missing = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "e5_scale.py"),
                              str(tmp_path / "nothing")], capture_output=True, text=True,
                             env=script_env())
    assert missing.returncode == 2 and "e5 benchmark:" in missing.stderr
