"""The experiments' own figures and tables: E3's storage x compute matrix (heatmaps and
text tables), E4's idle tail, and how `compare` calls them."""
import pytest

from testbed.experiments.e1 import transfer
from testbed.experiments.e3 import e3_figures
from testbed.experiments.e4 import e4_figures
from testbed.experiments.e5 import e5_figures
from testbed.harness import registry
from testbed.results import compare, runs as results


def rec(name, value, unit="", **params):
    return {"name": name, "value": value, "unit": unit, "params": params}


def cell(metric, value, storage, compute, rtt, cache=10):
    return rec(metric, value, "", storage=storage, compute=compute, rtt_ms=rtt, cache_mb=cache)


E3_RECORDS = [
    cell("e3.events_per_s", 540, "a", "a", 0), cell("e3.events_per_s", 220, "b", "a", 20),
    cell("e3.events_per_s", 260, "a", "b", 20), cell("e3.events_per_s", 580, "b", "b", 0),
    cell("e3.events_per_s", 600, "b", "b", 0),                      # a repeat: averaged
    cell("e3.cpu_eff", 0.87, "a", "a", 0), cell("e3.cpu_eff", 0.45, "a", "b", 20),
    cell("e3.events_per_s", 500, "a", "a", 0, cache=30),
    rec("e3.rtt_measured", 22.6, "ms", storage="a", compute="b", rtt_ms=20),
    rec("e3.connectivity_mb_per_s", 3.0, "MB/s", storage="b", compute="a"),  # not a matrix cell
    rec("e3.off_over_diag", 0.4, "ratio", rtt_ms=20, cache_mb=10),
]


def test_e3_matrix_is_storage_by_compute_per_cache_size():
    m = e3_figures.matrices(E3_RECORDS)
    assert list(m) == [10, 30]
    ten = m[10]
    assert ten["sites"] == ["a", "b"]
    assert ten["values"]["e3.events_per_s"] == {("a", "a"): 540, ("b", "a"): 220, ("a", "b"): 260,
                                                ("b", "b"): 590}
    assert ten["values"]["e3.cpu_eff"] == {("a", "a"): 0.87, ("a", "b"): 0.45}
    assert "e3.mb_per_s" not in ten["values"]
    assert ten["rtt"][("b", "a")] == 20 and ten["rtt"][("a", "a")] == 0
    assert ten["measured"] == {("a", "b"): 22.6}
    assert m[30]["values"] == {"e3.events_per_s": {("a", "a"): 500}} and m[30]["sites"] == ["a"]


def test_e3_grid_rows_are_storage_and_cells_carry_the_rtt():
    m = e3_figures.matrices(E3_RECORDS)[10]
    data, texts = e3_figures.grid(m, "e3.cpu_eff")
    assert data == [[0.87, 0.45], [None, None]]            # row a: storage a; b <- a not measured
    assert texts[0][0] == ("0.87", "local")
    assert texts[0][1] == ("0.45", "20 ms\n(meas. 23 ms)")
    assert texts[1][0] == ("-", "20 ms")


def test_e3_text_table_has_storage_rows_compute_columns_and_marks_local():
    text = e3_figures.text({"default": E3_RECORDS})
    assert "E3 matrix default, reader uproot, read-ahead cache 10 MB" in text and "cache 30 MB" in text
    lines = text.splitlines()
    start = lines.index("events/s per job (events/s), e3.events_per_s:")
    header, _, row_a, row_b = lines[start + 1:start + 5]
    assert header.split() == ["storage", "\\", "compute", "a", "b"]
    assert row_a.split() == ["a", "*540", "260"]      # storage a: read at a (local), at b
    assert row_b.split() == ["b", "220", "*590"]
    rtt = lines.index("RTT (ms), measured in brackets:", start)
    assert [line.split() for line in lines[rtt + 3:rtt + 5]] == [["a", "*0", "20", "(23)"], ["b", "20", "*0"]]


def test_e3_colour_scale_is_shared_by_every_heatmap_of_a_metric():
    other = [cell("e3.events_per_s", 100, "a", "b", 20), cell("e3.cpu_eff", 1.2, "a", "a", 0)]
    ms = list(e3_figures.matrices(E3_RECORDS).values()) + list(e3_figures.matrices(other).values())
    scales = e3_figures.colour_scales(ms)
    assert scales["e3.events_per_s"] == {"vmin": 100, "vmax": 590}
    assert scales["e3.cpu_eff"] == {"vmin": 0.0, "vmax": 1.2}
    assert "e3.mb_per_s" not in scales


def test_e3_without_matrix_cells_has_no_table_or_figure(tmp_path):
    only = [r for r in E3_RECORDS if r["name"] in ("e3.connectivity_mb_per_s", "e3.off_over_diag")]
    assert e3_figures.matrices(only) == {}
    assert e3_figures.text({"default": only}) == ""
    assert e3_figures.figures({"default": only}, tmp_path) == []


E4_RECORDS = [
    rec("e4.task_finish_fraction", f, "fraction", rank=rank, node=node, layout=layout, backfill=bf)
    for layout, bf, node, ends in [
        ("dedicated", 0, 1, [0.9, 1.0]), ("colocated", 0, 0, [0.8, 0.9, 1.0]),
        ("colocated", 0, 1, [0.85, 1.0]), ("colocated", 1, 0, [0.7, 0.75, 0.8])]
    for rank, f in enumerate(ends, 1)
] + [
    rec("e4.idle_tail_slots", 0.1, "fraction", layout="colocated", backfill=0),
    rec("e4.idle_tail_cores", 0.12, "fraction", layout="colocated", backfill=0),
    rec("e4.idle_tail_slots", 0.02, "fraction", layout="colocated", backfill=1),
    rec("e4.node_seconds", 50, "s", node=0, layout="colocated", backfill=0),
]


def test_e4_finish_series_per_layout_backfill_and_node_in_rank_order():
    series = e4_figures.finish_series(list(reversed(E4_RECORDS)))
    assert list(series) == [("colocated", 0), ("colocated", 1), ("dedicated", 0)]
    assert series[("colocated", 0)] == {0: [(1, 0.8), (2, 0.9), (3, 1.0)], 1: [(1, 0.85), (2, 1.0)]}
    assert list(series[("colocated", 0)]) == [0, 1]
    assert series[("colocated", 1)] == {0: [(1, 0.7), (2, 0.75), (3, 0.8)]}
    assert series[("dedicated", 0)] == {1: [(1, 0.9), (2, 1.0)]}


def test_e4_idle_tail_fractions_and_their_annotation():
    tails = e4_figures.idle_tails(E4_RECORDS)
    assert tails == {("colocated", 0): {"slots": 0.1, "cores": 0.12}, ("colocated", 1): {"slots": 0.02}}
    note = e4_figures.tail_note(tails, "colocated")
    assert "no back-fill: slots 10.0 %, cores 12.0 %" in note and "back-fill: slots 2.0 %" in note
    assert e4_figures.tail_note(tails, "dedicated") == ""


def test_backfill_given_as_text_or_bool_is_one_series():
    recs = [rec("e4.task_finish_fraction", 0.5, "fraction", rank=1, node=0, layout="x", backfill="1"),
            rec("e4.task_finish_fraction", 0.7, "fraction", rank=1, node=0, layout="x", backfill=True)]
    assert e4_figures.finish_series(recs) == {("x", 1): {0: [(1, pytest.approx(0.6))]}}


def test_registry_names_the_figure_and_table_makers():
    assert registry.figure_makers()["e3"] is e3_figures.figures
    assert registry.figure_makers()["e4"] is e4_figures.figures
    assert registry.table_makers() == {"e1": transfer.scale_table, "e3": e3_figures.text, "e5": e5_figures.text}
    assert "rank" not in registry.get("e4").x_params  # drawn by the idle-tail plot, not as lines


def make_run(tmp_path, suite, profiles, records):
    run = results.Run.create(suite, profiles, topology={}, profile_contents={}, accel="tcg", root=tmp_path)
    for r in records:
        run.record(r["name"], r["value"], r["unit"], **r["params"])
    return run


def test_suite_columns_split_each_suites_records_by_labelled_column(tmp_path):
    a = make_run(tmp_path, "e3", ["default"], E3_RECORDS[:2])
    b = make_run(tmp_path, "e4", ["default"], E4_RECORDS[:1])
    cols = compare.suite_columns([a, b])
    assert list(cols) == ["e3", "e4"]
    assert list(cols["e3"]) == ["A:default"] and list(cols["e4"]) == ["B:default"]
    assert [r["value"] for r in cols["e3"]["A:default"]] == [540, 220]


def test_single_run_text_has_the_e3_matrix_when_the_registry_makers_are_given(tmp_path):
    run = make_run(tmp_path, "e3", ["default"], E3_RECORDS)
    text = compare.render_text([run], table_makers=registry.table_makers())
    assert "E3 matrix default, reader uproot, read-ahead cache 10 MB" in text
    assert text.rstrip().splitlines()[-1].startswith("status:")
    assert "E3 matrix" not in compare.render_text([run])


def test_a_failing_maker_is_reported_and_the_report_still_written(tmp_path, capsys):
    run = make_run(tmp_path, "e3", ["default"], E3_RECORDS)

    def broken(columns, outdir):
        raise KeyError("storage")
    path, pngs = compare.render_html([run], tmp_path / "r.html", figure_makers={"e3": broken},
                                     table_makers={})
    assert path.exists() and pngs == []
    assert "e3 figures failed: KeyError" in capsys.readouterr().err


def test_figures_are_written_with_the_line_plots_and_shown_in_the_report(tmp_path):
    pytest.importorskip("matplotlib")
    e3 = make_run(tmp_path, "e3", ["default"], E3_RECORDS)
    e4 = make_run(tmp_path, "e4", ["default"], E4_RECORDS)
    e4_again = make_run(tmp_path, "e4", ["default"], E4_RECORDS[:3])
    makers = dict(axes=registry.plot_axes(), figure_makers=registry.figure_makers(),
                  table_makers=registry.table_makers())
    path, pngs = compare.render_html([e3], tmp_path / "e3.html", **makers)
    names = sorted(p.name for p in pngs)
    assert names == ["e3-matrix-cpu_eff-uproot-cache10MB.png", "e3-matrix-events_per_s-uproot-cache10MB.png",
                     "e3-matrix-events_per_s-uproot-cache30MB.png"]
    assert all(p.exists() and p.stat().st_size > 5000 and p.parent == tmp_path / "e3-plots" for p in pngs)
    html = path.read_text()
    assert "e3-plots/e3-matrix-cpu_eff-uproot-cache10MB.png" in html and "<h2>Tables</h2>" in html
    # two runs: one figure per run/profile, named after its column
    _, pngs = compare.render_html([e4, e4_again], tmp_path / "e4.html", **makers)
    assert sorted(p.name for p in pngs) == ["e4-idle-tail-A-default.png", "e4-idle-tail-B-default.png"]
    assert all(p.stat().st_size > 5000 for p in pngs)


def test_e3_has_one_matrix_per_reader_and_leaves_the_learning_rows_out():
    root = [cell("e3.events_per_s", 300, "a", "a", 0), cell("e3.events_per_s", 120, "a", "b", 20)]
    for r in root:
        r["params"].update(reader="root", learn_entries=100)
    learning = cell("e3.events_per_s", 999, "a", "b", 20)
    learning["params"].update(reader="root", learn_entries=0)
    recs = E3_RECORDS + root + [learning]
    assert e3_figures.readers(recs) == ["root", "uproot"]
    m = e3_figures.matrices(recs, "root")[10]
    assert m["values"]["e3.events_per_s"] == {("a", "a"): 300, ("a", "b"): 120}
    assert ("a", "b") not in e3_figures.matrices(recs, "uproot")[30]["values"]["e3.events_per_s"]
    text = e3_figures.text({"default": recs})
    assert "E3 matrix default, reader root, read-ahead cache 10 MB" in text and "999" not in text
