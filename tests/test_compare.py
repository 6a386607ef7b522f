import pytest

from testbed.harness import registry
from testbed.results import compare, runs as results
from testbed.model.errors import ConfigError


def run_with(tmp_path, suite, profiles, records):
    run = results.Run.create(suite, profiles, topology={}, profile_contents={}, accel="tcg", root=tmp_path)
    for name, value, unit, params in records:
        run.record(name, value, unit, **params)
    return run


def test_columns_split_by_profile_and_ratio_is_last_over_first(tmp_path):
    run = run_with(tmp_path, "e1", ["default", "wan-tuned"], [
        ("e1.efficiency_lost", 0.2, "ratio", {"rtt_ms": 80, "profile": "default"}),
        ("e1.efficiency_lost", 0.1, "ratio", {"rtt_ms": 80, "profile": "wan-tuned"}),
        ("e1.efficiency_lost", 0.05, "ratio", {"rtt_ms": 0, "profile": "default"}),
    ])
    headers, rows, _ = compare.table([run])
    assert headers[3:5] == ["default", "wan-tuned"]
    by_params = {r[1]: r for r in rows}
    assert by_params["rtt_ms=80"][3:6] == ["0.2", "0.1", "0.50x"]
    assert by_params["rtt_ms=0"][4:6] == ["-", "-"]  # one side only: no ratio


def test_repeated_points_are_averaged_and_time_series_kept_out_of_the_table(tmp_path):
    run = run_with(tmp_path, "e1", ["default"], [
        ("e1.rate", 10, "MB/s", {}), ("e1.rate", 20, "MB/s", {}),
        ("e1.submit_rx_rate", 5, "MB/s", {"t": 1.0}), ("e1.submit_rx_rate", 7, "MB/s", {"t": 2.0}),
    ])
    _, rows, _ = compare.table([run])
    assert [r[0] for r in rows] == ["e1.rate"]
    assert rows[0][3] == "15.0"
    _, _, series = compare.collect([run])
    assert list(series) == [("e1.submit_rx_rate", "t", "MB/s")]


def test_two_runs_get_letters_and_a_legend(tmp_path):
    a = run_with(tmp_path, "e2", ["default"], [("e2.raid_write_rate", 10, "MB/s", {})])
    b = run_with(tmp_path, "e2", ["default"], [("e2.raid_write_rate", 30, "MB/s", {})])
    headers, rows, legend = compare.table([a, b])
    assert headers[3:5] == ["A:default", "B:default"]
    assert rows[0][5] == "3.00x"
    assert legend[0].startswith("A = ") and a.label in legend[0]


def test_paper_figures_are_matched_by_metric_and_params(tmp_path):
    run = run_with(tmp_path, "e2", ["default"], [
        ("e2.raid_write_rate", 12, "MB/s", {"stripe_cache_size": 256, "spindles": "emulated", "writers": 10,
                                            "profile": "default"}),
        # the members calibrated for another claim: not the figure's spindles
        ("e2.raid_write_rate", 0.5, "MB/s", {"stripe_cache_size": 256, "spindles": "array-bound", "writers": 10,
                                             "profile": "default"}),
    ])
    figures = compare.load_paper()
    headers, rows, _ = compare.table([run], figures)
    assert headers[-2:] == ["paper", "source"]
    row = next(r for r in rows if r[0] == "e2.raid_write_rate" and r[3] == "12.0")
    assert row[-2] == "60.0" and "seed 001" in row[-1]
    assert next(r for r in rows if r[0] == "e2.raid_write_rate" and r[3] == "0.5")[-2] == "-"
    # figures of the same experiment the run did not measure are listed too
    assert any(r[0] == "e2.raid_write_speedup" and r[3] == "-" for r in rows)
    assert not any(r[0].startswith("e1.") for r in rows)


def test_shipped_paper_file_names_a_source_for_every_figure():
    figures = compare.load_paper()
    assert len(figures) >= 10
    assert all(f["source"].startswith("seed ") for f in figures)


@pytest.mark.parametrize("body,problem", [
    ("figures:\n  - {metric: a.b, source: s}\n", "either a number"),
    ("figures:\n  - {metric: a.b, value: fast, source: s}\n", "must be a number"),
    ("figures:\n  - {metric: a.b, value: 1, source: s, colour: red}\n", "unknown key"),
])
def test_bad_paper_file_is_one_line_error(tmp_path, body, problem):
    path = tmp_path / "paper.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=problem) as exc:
        compare.load_paper(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_html_report_has_table_and_one_plot_per_metric_and_axis(tmp_path):
    run = run_with(tmp_path, "e1", ["default", "wan-tuned"], [
        ("e1.efficiency_lost", 0.1 * r, "ratio", {"rtt_ms": r, "rate": "W", "profile": p})
        for r in (0, 40, 80) for p in ("default", "wan-tuned")
    ] + [("e1.submit_rx_rate", float(t), "MB/s", {"t": float(t), "profile": "default"}) for t in range(5)])
    path, pngs = compare.render_html([run], tmp_path / "summary.html", compare.load_paper(),
                                     axes=registry.plot_axes())
    text = path.read_text()
    assert "<table>" in text and "e1.efficiency_lost" in text and "seed 000" in text
    assert sorted(p.name for p in pngs) == ["e1_efficiency_lost-vs-rtt_ms.png", "e1_submit_rx_rate-vs-t.png"]
    assert all(p.stat().st_size > 1000 for p in pngs)


def test_x_axes_come_from_the_caller(tmp_path):
    run = run_with(tmp_path, "e1", ["default"], [
        ("e1.efficiency_lost", 0.1 * r, "ratio", {"rtt_ms": r, "clients": 2}) for r in (0, 40, 80)])
    assert list(compare.collect([run])[2]) == []  # no axes given: time series only
    assert list(compare.collect([run], {"e1": ("rtt_ms",)})[2]) == [("e1.efficiency_lost", "rtt_ms", "ratio")]
    assert list(compare.collect([run], {"e2": ("rtt_ms",)})[2]) == []  # another suite's axes
    assert list(compare.collect([run], ("clients",))[2]) == [("e1.efficiency_lost", "clients", "ratio")]


def test_paper_figures_come_from_every_file_of_the_paper_folder():
    figures = compare.load_paper()
    files = {p.name for p in compare.PAPER_DIR.glob("*.yaml")}
    assert {"e1.yaml", "e2.yaml"} <= files
    assert {f["metric"].split(".")[0] for f in figures} == {name[:-len(".yaml")] for name in files}
    assert len(compare.load_paper(compare.PAPER_DIR / "e2.yaml")) < len(figures)


def test_a_repeated_run_shows_the_mean_and_interval_and_plots_error_bars(tmp_path):
    from testbed.results import runs as results
    run = results.Run.create("e1", ["default"], topology={"name": "t"}, profile_contents={}, accel="tcg",
                             root=tmp_path)
    for trial, (a, b) in enumerate([(0.25, 0.5), (0.37, 0.53), (0.27, 0.77)], 1):
        trial_run = results.Run(run.path, trial=trial)
        trial_run.record("e1.efficiency_lost", a, "ratio", rtt_ms=0, rate="2W")
        trial_run.record("e1.efficiency_lost", b, "ratio", rtt_ms=80, rate="2W")
        assert [r["value"] for r in trial_run.metrics()] == [a, b]  # a trial sees its own records
    assert len(run.metrics()) == 6
    headers, rows, _ = compare.table([run])
    row = next(r for r in rows if "rtt_ms=80" in r[1])
    assert row[3].startswith("0.6 [") and row[3].endswith("n=3")     # the mean of 0.5, 0.53, 0.77
    pngs = compare.plots([run], tmp_path / "plots", {"e1": ("rtt_ms",)})
    assert [p.name for p in pngs] == ["e1_efficiency_lost-vs-rtt_ms.png"]


def test_runs_on_two_releases_say_whether_their_intervals_are_apart(tmp_path):
    def release_run(condor, xrootd, values_by_trial):
        run = results.Run.create("e2", ["default"], topology={"name": "small", "box": f"box-{condor}"},
                                 profile_contents={}, accel="tcg", root=tmp_path)
        run.update(versions={"condor": condor, "xrootd": xrootd})
        for trial, (a, b) in enumerate(values_by_trial, 1):
            results.Run(run.path, trial=trial).record("e2.rate", a, "MB/s", clients=1)
            results.Run(run.path, trial=trial).record("e2.rate", b, "MB/s", clients=2)
        return run
    old = release_run("23.9.6", "v5.8.1", [(10, 20), (11, 21), (10.5, 30)])
    new = release_run("25.14.1", "v6.2.0", [(20, 22), (21, 25), (20.5, 19)])
    headers, rows, legend = compare.table([old, new])
    assert headers[-2:] == ["last/first", "apart"]
    assert any("HTCondor 25.14.1, XRootD 6.2.0, box box-25.14.1" in line for line in legend)
    apart = {r[1]: r[-1] for r in rows}
    assert apart == {"clients=1": "yes", "clients=2": "no"}   # 10.5 +- 0.5 vs 20.5 +- 0.5; 20-30 vs 19-25
    one_trial = release_run("25.14.1", "v6.2.0", [(20, 22)])
    assert {r[-1] for r in compare.table([old, one_trial])[1]} == {"-"}
    # one release: no such column
    assert compare.table([old])[0][-1] == "last/first"


def test_a_report_reads_each_runs_manifest_and_metrics_once(tmp_path, monkeypatch):
    a = run_with(tmp_path, "e1", ["default"], [
        ("e1.efficiency_lost", 0.1 * r, "ratio", {"rtt_ms": r}) for r in (0, 40, 80)])
    b = run_with(tmp_path, "e1", ["default"], [
        ("e1.efficiency_lost", 0.2 * r, "ratio", {"rtt_ms": r}) for r in (0, 40, 80)])
    reads = []
    for method in ("manifest", "metrics"):
        original = getattr(results.Run, method)
        monkeypatch.setattr(results.Run, method,
                            lambda self, _read=original, _name=method: reads.append((self.label, _name)) or _read(self))
    makers = {"tables": {"e1": lambda columns: "own table"}, "figures": {"e1": lambda columns, outdir: []}}

    text = compare.render_text([a, b], compare.load_paper(), table_makers=makers["tables"])
    assert "own table" in text and "reproduce the paper" in text    # every part drawn: the reads counted cover them
    assert sorted(reads) == sorted((r.label, m) for r in (a, b) for m in ("manifest", "metrics"))

    reads.clear()
    compare.render_html([a, b], tmp_path / "report.html", compare.load_paper(), axes={"e1": ("rtt_ms",)},
                        figure_makers=makers["figures"], table_makers=makers["tables"])
    assert sorted(reads) == sorted((r.label, m) for r in (a, b) for m in ("manifest", "metrics"))
