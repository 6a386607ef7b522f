"""testbed.results.robot_output: the rows of real robot output files, and the failure lines
`testbed test` prints at the end of its log."""
import io

import robot

from testbed.results import robot_output


def write_output(folder, rows, name="output.xml"):
    """A real robot run of `rows` [(test name, python condition, failure message)]."""
    folder.mkdir(parents=True, exist_ok=True)
    suite = folder.parent / f"{folder.name}-{name}.robot"
    suite.write_text("*** Test Cases ***\n" + "".join(
        f"{n}\n    Should Be True    {cond}    {msg}\n" for n, cond, msg in rows))
    robot.run(str(suite), outputdir=str(folder), output=name, log="NONE", report="NONE",
              stdout=io.StringIO(), stderr=io.StringIO())


def test_failure_lines_name_each_failed_row_with_its_message(tmp_path):
    run = tmp_path / "run"
    write_output(run, [("rtt-per-cell", "True", "-"), ("diagonal-vs-rtt", "1.4 <= 1.25", "diagonal slower")])
    rows, unreadable = robot_output.read_rows(run)
    assert [(r.name, r.status) for r in rows] == [("rtt-per-cell", "PASS"), ("diagonal-vs-rtt", "FAIL")]
    assert unreadable == []
    assert robot_output.failure_lines(run) == ["diagonal-vs-rtt: diagonal slower"]


def test_failure_lines_of_a_repeated_run_name_the_trial_file_and_cut_long_messages(tmp_path):
    run = tmp_path / "run"
    write_output(run, [("a", "False", "x" * 500)], name="output-trial1.xml")
    write_output(run, [("a", "True", "-")], name="output-trial2.xml")
    (lines,) = robot_output.failure_lines(run, width=40)
    assert lines.startswith("a (output-trial1.xml): xxx") and lines.endswith("...")
    assert len(lines.split(": ", 1)[1]) == 40


def test_failure_lines_report_a_torn_output_and_count_what_they_leave_out(tmp_path):
    run = tmp_path / "run"
    write_output(run, [(f"row{i}", "False", f"m{i}") for i in range(5)])
    (run / "output-trial9.xml").write_text("<robot><suite name=")  # robot killed writing it
    lines = robot_output.failure_lines(run, limit=2)
    assert lines[:2] == ["row0: m0", "row1: m1"]
    assert lines[2:] == ["... and 3 more failed rows", "output-trial9.xml: robot output unreadable"]
