"""Generated suite rows: the registry's declarations rendered as Robot test cases, the marker
blocks of the suites, the check that names the first differing row, `testbed suites`."""
import io

import pytest
import robot
from robot.api import ExecutionResult, TestSuiteBuilder as SuiteBuilder

from testbed import cli
from testbed.harness import registry, rows
from testbed.experiments.e3.e3_site import site_names
from testbed.harness.registry import SCALES, Experiment, Param
from testbed.harness.rows import Axis, Block, Case, Rows
from testbed.model.errors import ConfigError
from testbed.model.schema import Reader
from testbed.results import verdict

POINT = Rows(Case("rtt{rtt}-{rate}-{profile}", args=("{profile}", "{rtt}", "{factor}"),
                  tags=("RTT{rtt}", "{rate}", "profile:{profile}"),
                  doc={"rtt0-W-a": "The first point\nof two lines."}),
             axes=(Axis("profile", profiles=True), Axis("rtt", param="rtts"),
                   Axis("factor", param="factors", derived={"rate": lambda f: "W" if f == 1 else f"{f}W"})))


def experiment(blocks=(POINT,), suite="robot/suites/x.robot", name="points"):
    params = {"rtts": Param("numbers", rows=True, minimum=0, maximum=1000),
              "factors": Param("ints", rows=True, minimum=1, maximum=10), "jobs": Param("int", minimum=1, maximum=100)}
    scales = {s: {"rtts": [0, 80.0], "factors": [1, 2], "jobs": 4} for s in SCALES}
    return Experiment(name="x", title="x", seed=None, suite=suite, params=params, scales=scales, uses=("submit",),
                      row_profiles=("a", "b"), rows=(Block(name, *blocks),) if blocks else ())


def suite_text(rendered, before="", after=""):
    blocks = "".join(f"{rows.BEGIN.format(name=n)}\n{text}{rows.END.format(name=n)}\n\n" for n, text in rendered.items())
    return ("*** Test Cases ***\nhand-written\n    [Template]    NONE\n    Log    first\n\n" + before + blocks + after
            + "*** Keywords ***\nPoint\n    [Arguments]    ${profile}    ${rtt}    ${factor}\n    Log    ${profile}\n"
            + "Paper Claim Should Hold\n    [Arguments]    ${id}\n    Log    ${id}\n")


def robot_tests(tmp_path, text):
    """The suite's tests as Robot parses them, and (dry run) as its results report them."""
    path = tmp_path / "x.robot"
    path.write_text(text.replace("*** Test Cases ***", "*** Settings ***\nTest Template    Point\n\n*** Test Cases ***"))
    robot.run(str(path), dryrun=True, output=str(tmp_path / "out.xml"), report=None, log=None,
              stdout=io.StringIO(), stderr=io.StringIO())
    return SuiteBuilder().build(str(path)).tests, ExecutionResult(str(tmp_path / "out.xml")).suite.tests


def test_rows_are_the_product_of_the_axes_first_axis_outermost_as_robot_reads_them(tmp_path):
    text = rows.render_block(experiment().rows[0], experiment())
    assert text.startswith("rtt0-W-a\n    [Documentation]    The first point\n    ...    of two lines.\n"
                           "    [Tags]    RTT0    W    profile:a\n    a    0    1\n\nrtt0-2W-a\n")
    tests, results = robot_tests(tmp_path, suite_text({"points": text}))
    assert [r.status for r in results] == ["PASS"] * 9
    got = [(t.name, list(t.tags), t.template, [str(a) for a in t.body[0].args]) for t in tests[1:]]
    assert got[:3] == [("rtt0-W-a", ["profile:a", "RTT0", "W"], "Point", ["a", "0", "1"]),
                       ("rtt0-2W-a", ["2W", "profile:a", "RTT0"], "Point", ["a", "0", "2"]),
                       ("rtt80-W-a", ["profile:a", "RTT80", "W"], "Point", ["a", "80", "1"])]
    assert [t.name for t in tests[1:]][4:] == ["rtt0-W-b", "rtt0-2W-b", "rtt80-W-b", "rtt80-2W-b"]
    assert tests[1].doc == "The first point\nof two lines." and tests[2].doc == ""


def test_two_cases_alternate_per_point_and_robot_variables_are_left_alone():
    block = Block("b", Rows(Case("write-{p}", "Write", args=("{p}", "${FALSE}"), tags=("raid",), doc="at {p}",
                                 teardown=("Restore", "{p}")),
                            Case("write-{p}-unlimited", "Write", args=("{p}", "${TRUE}"), setup=("Lift", "${p}")),
                            axes=(Axis("p", values=("default", "big")),)))
    text = rows.render_block(block, experiment())
    names = [line for line in text.splitlines() if line and not line[0].isspace()]
    assert names == ["write-default", "write-default-unlimited", "write-big", "write-big-unlimited"]
    assert ("write-big\n    [Documentation]    at big\n    [Tags]    raid\n    [Template]    Write\n"
            "    big    ${FALSE}\n    [Teardown]    Restore    big\n\n"
            "write-big-unlimited\n    [Setup]    Lift    ${p}\n    [Template]    Write\n    big    ${TRUE}\n") in text
    with pytest.raises(ValueError, match="two axes of one Rows give the same field"):
        Rows(Case("x{p}"), axes=(Axis("p", values=(1,)), Axis("q", values=(2,), derived={"p": str})))


@pytest.mark.parametrize("block,problem", [
    (Rows(Case("p-{nope}", "T")), "names {nope}, not a field"),
    (Rows(Case("p", "T", doc={"q": "x"})), "documentation for ['q'], which 'p' does not generate"),
    (Rows(Case("same", "T"), axes=(Axis("rtt", param="rtts"),)), "generates the test 'same' twice"),
])
def test_a_bad_pattern_is_refused_naming_it(block, problem):
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        rows.render_block(Block("b", block), experiment())


def test_an_axis_must_be_a_row_parameter_and_take_one_source():
    with pytest.raises(ValueError, match="'jobs' is not a parameter declared with rows=True"):
        experiment((Rows(Case("j{j}", "T"), axes=(Axis("j", param="jobs"),)),))
    with pytest.raises(ValueError, match="exactly one of"):
        Axis("a", param="rtts", profiles=True)
    with pytest.raises(ValueError, match="not 'claims'"):
        Block("claims", POINT)


def test_claim_rows_escape_the_paper_files_text_and_robot_reads_it_back(tmp_path):
    item = {"id": "x-claim", "kind": "claim", "words": "a ${var} \\ and  two   spaces", "where": "#3, Table 2",
            "value": {"metric": "x.m", "params": {"rtt_ms": 80}}, "expect": "< 1"}
    claims = verdict.load_claims(Reader({"claims": [item]}, "results/paper/x.yaml"), "x")
    text = rows.render_claims(claims)
    assert text.splitlines()[3:] == ["    [Tags]    claim", "    [Template]    Paper Claim Should Hold", "    x-claim"]
    tests, results = robot_tests(tmp_path, suite_text({"claims": text}))
    test = results[1]
    assert test.doc == ('#3, Table 2: "a ${var} \\ and two spaces"\n'
                        "A claim, judged over every trial of the run (x.m{rtt_ms=80}, paper < 1).")
    assert (test.name, list(test.tags), test.status) == ("x-claim", ["claim"], "PASS")
    assert tests[1].template == "Paper Claim Should Hold" and [str(a) for a in tests[1].body[0].args] == ["x-claim"]


def test_rewrite_replaces_only_the_blocks_and_check_names_suite_block_and_first_row():
    exp = experiment()
    rendered = rows.render_all(exp, [])
    good = suite_text(rendered, after="latency-shape\n    Log    summary\n\n")
    assert rows.differences(good, rendered, "x.robot") == {}
    bad = good.replace("    [Tags]    RTT80    2W    profile:a\n", "    [Tags]    RTT80    2W\n")
    found = rows.differences(bad, rendered, "x.robot")
    assert list(found) == ["points"]
    assert found["points"].startswith("x.robot: block points differs from the registry at row 'rtt80-2W-a': "
                                      "the suite has '    [Tags]    RTT80    2W'")
    assert rows.rewrite(bad, rendered, "x.robot") == good
    for gone in ("rtt0-2W-b\n    [Tags]    RTT0    2W    profile:b\n    b    0    2\n\n",
                 "\nrtt80-2W-b\n    [Tags]    RTT80    2W    profile:b\n    b    80    2\n"):
        missing = good.replace(gone, "")
        assert f"at row '{gone.split()[0]}'" in rows.differences(missing, rendered, "x.robot")["points"]
        assert rows.rewrite(missing, rendered, "x.robot") == good


@pytest.mark.parametrize("edit,field,problem", [
    (lambda t: t.replace("# END GENERATED ROWS points\n", ""), "line 6", "block 'points' has no '# END"),
    (lambda t: t.replace("# BEGIN GENERATED ROWS points (testbed suites --write)\n", ""), "line ",
     "END of 'points' without its BEGIN"),
    (lambda t: t.replace("# BEGIN GENERATED ROWS points (testbed suites --write)\n",
                         "# BEGIN GENERATED ROWS points\n"), "line 6", "is not a marker line"),
    (lambda t: t.replace("hand-written\n", "# BEGIN GENERATED ROWS old (testbed suites --write)\n"
                                           "# END GENERATED ROWS old\nhand-written\n"), "block old",
     "the registry declares no such block"),
    (lambda t: t.replace("# BEGIN GENERATED ROWS points (testbed suites --write)\n", "")
     .replace("# END GENERATED ROWS points\n", ""), "block points", "no marker lines"),
    (lambda t: t.replace("hand-written\n", "# BEGIN GENERATED ROWS points (testbed suites --write)\n"
                                           "# END GENERATED ROWS points\nhand-written\n"), "line 8", "appears twice"),
])
def test_bad_markers_are_one_line_errors_naming_the_file_and_line(edit, field, problem):
    rendered = rows.render_all(experiment(), [])
    with pytest.raises(ConfigError) as err:
        rows.rewrite(edit(suite_text(rendered)), rendered, "robot/suites/x.robot")
    assert str(err.value).startswith(f"robot/suites/x.robot: {field}") and problem in str(err.value)
    assert "\n" not in str(err.value)


def test_every_suite_agrees_with_the_registry():
    stale = [line for exp in registry.experiments().values() for line in rows.check_suite(exp).values()]
    assert not stale, "\n".join(stale)


def test_the_converted_suites_generate_their_point_rows_and_every_paper_suite_its_claims():
    exps = registry.experiments()
    for name in ("e1", "e2", "e3", "e4", "e5"):
        assert set(exps[name].generated_rows()) - {"claims"}, name
    for exp in exps.values():
        assert ("claims" in exp.generated_rows()) == bool(exp.claims()), exp.name
    e1 = exps["e1"].generated_rows()["points"]
    assert e1.count("\n\n") + 1 == 7 * 5 * 2   # profiles (2 of them scaled) x full-scale RTTs x rates


def test_e3s_matrix_has_a_cell_per_reader_cache_and_site_pair_of_the_full_scale():
    e3 = registry.get("e3")
    full = e3.scales["full"]
    sites = site_names(full["sites"])
    cells = [line for line in e3.generated_rows()["points"].splitlines() if line.startswith("cell-")]
    assert len(cells) == len(full["readers"]) * len(full["cache_mbs"]) * len(sites) ** 2
    assert cells[0] == f"cell-a-reads-a-{full['cache_mbs'][0]}mb-{full['readers'][0]}"
    assert cells[-1] == f"cell-{sites[-1]}-reads-{sites[-1]}-{full['cache_mbs'][-1]}mb-{full['readers'][-1]}"


def test_e5s_row_parameters_point_at_the_registry():
    with pytest.raises(ConfigError, match="full scale's collector_ramp_rtts in the e5 registry entry"):
        registry.get("e5").parameters("ci", {"collector_ramp_rtts": "50"})


def test_a_row_value_outside_the_full_scale_says_where_to_add_it():
    with pytest.raises(ConfigError, match="add the value to the full scale's rtts in the x registry entry"):
        experiment().parameters("ci", {"rtts": "0,15"})
    with pytest.raises(ConfigError, match="add c to row_profiles in the x registry entry"):
        experiment().check_profiles(["c"])
    with pytest.raises(ConfigError, match="add rows to the suite"):
        experiment(blocks=()).parameters("ci", {"rtts": "15"})


def test_suites_verb_checks_then_writes_a_stale_suite(tmp_path, monkeypatch, capsys):
    path = tmp_path / "x.robot"
    exp = experiment(suite=str(path))
    rendered = rows.render_all(exp, [])
    good = suite_text(rendered)
    path.write_text(good.replace("    a    80    1\n", "    a    80    4\n"))
    monkeypatch.setattr(registry, "experiments", lambda: {"x": exp})
    assert cli.main(["suites", "--check"]) == 1
    assert f"{path}: block points differs from the registry at row 'rtt80-W-a'" in capsys.readouterr().out
    assert cli.main(["suites", "x", "--write"]) == 0
    assert path.read_text() == good and "rewrote points" in capsys.readouterr().out
    assert cli.main(["suites"]) == 0
    assert cli.main(["suites", "nope"]) == 2
    assert "testbed suites: SUITE: unknown suite 'nope'" in capsys.readouterr().err
