"""Unit tests of the experiment registry: declarations, --set/--scale checks, paper metrics recorded."""
import re
import sys
from pathlib import Path

import pytest

from testbed import PROJECT_ROOT, cli
from testbed.harness import points, registry, runner
from testbed.model import topology
from testbed.model.errors import ConfigError
from testbed.remote.site import Site
from testbed.results import compare
from testbed.experiments.e1.jobs import rate_label as e1_rate_label


def test_registry_lists_every_experiment_module_smoke_first():
    exps = registry.experiments()
    assert list(exps)[:3] == ["smoke", "e1", "e2"]
    for exp in exps.values():
        assert exp.suite_path.exists(), exp.suite
        assert set(exp.scales) == {"ci", "quick", "full"}
        if exp.paper:
            assert exp.paper_path.exists(), exp.paper
    assert registry.headline().name == "e1"
    assert exps["e1"].profiles == ("table4-default", "table4-updated", "table4-default-scaled",
                                   "table4-updated-scaled")
    assert exps["e2"].profiles == ("default", "raid-stripe-32768")
    assert exps["smoke"].profiles == ("default",)


def test_row_parameters_of_smaller_scales_are_rows_of_the_full_scale():
    for exp in registry.experiments().values():
        for name, spec in exp.params.items():
            if spec.rows:
                for scale in ("ci", "quick"):
                    assert set(exp.scales[scale][name]) <= set(exp.scales["full"][name]), (exp.name, scale, name)
        assert set(exp.profiles) <= set(exp.row_profiles or exp.profiles)


def test_suite_rows_match_the_full_scale_and_row_profiles():
    e1 = registry.get("e1")
    text = e1.suite_path.read_text()
    for prof in e1.row_profiles:
        for rtt in e1.scales["full"]["rtts"]:
            for f in e1.scales["full"]["rate_factors"]:
                label = "W" if f == 1 else f"{f}W"
                assert f"\nrtt{rtt}-{label}-{prof}\n" in text
    e2 = registry.get("e2")
    text = e2.suite_path.read_text()
    for n in e2.scales["full"]["clients"]:
        assert f"\nuncached-{n}-clients\n" in text
    for prof in e2.row_profiles:
        assert f"\nraid-write-{prof}\n" in text and f"\ncached-reads-{prof}\n" in text


@pytest.mark.parametrize("sets,problem", [
    ({"nope": "1"}, "--set: nope: e1 has no parameter 'nope' (known: input_mb 0..1024, max_output_mb 1..1024, "
                    "rate_factors 1..100, rtts 0..1000"),
    ({"sweep_jobs": "many"}, "sweep_jobs must be a whole number"),
    ({"sweep_jobs": "2.5"}, "sweep_jobs must be a whole number"),
    ({"rtts": "0,x"}, "rtts must be a list of numbers"),
    ({"rate_factors": "1.5"}, "rate_factors must be a list of whole numbers"),
    ({"rtts": "0,15"}, "has rows for rtts 0, 10, 20, 40, 80 only (not 15)"),
    ({"sweep_load": "fast"}, "sweep_load must be a number"),
])
def test_set_checks_key_and_type(sets, problem):
    with pytest.raises(ConfigError) as exc:
        registry.get("e1").parameters("quick", sets)
    assert problem in str(exc.value) and "\n" not in str(exc.value)


def test_set_values_get_the_declared_types():
    p = registry.get("e1").parameters("ci", {"RTTS": "0,20", "sweep_load": "1", "sweep_jobs": "16"})
    assert p["rtts"] == [0, 20] and p["sweep_load"] == 1.0 and isinstance(p["sweep_load"], float)
    assert p["sweep_jobs"] == 16 and p["rate_factors"] == [2]
    assert registry.get("e2").parameters("ci", {"clients": [1, 4]})["clients"] == [1, 4]
    with pytest.raises(ConfigError, match="smoke has no parameter 'rtts' \\(known: none\\)"):
        registry.get("smoke").parameters("quick", {"rtts": "0"})


def test_profiles_without_rows_are_refused():
    runner.check("e1", "quick", ["default", "transfer-plain"], {})
    with pytest.raises(ConfigError, match="has rows for profiles table4-default, table4-updated, table4-default-scaled, "
                                           "table4-updated-scaled, default, wan-tuned, transfer-plain only"):
        runner.check("e1", "quick", ["collector-tuned"], {})


def _fake_site(monkeypatch):
    from testbed.cli import experiment_commands
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: pytest.fail("the site must not be touched"))


def test_run_unknown_set_key_is_one_line_exit_2(capsys, monkeypatch):
    _fake_site(monkeypatch)
    assert cli.main(["-t", "small", "run", "e1", "--set", "rttz=0,20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "rttz" in err and "known: input_mb" in err and "rtts" in err


def test_run_wrong_type_is_one_line_exit_2(capsys, monkeypatch):
    _fake_site(monkeypatch)
    assert cli.main(["-t", "small", "run", "e2", "--scale", "ci", "--set", "write_mb=big"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "write_mb must be a whole number" in err


def test_scale_option_and_its_aliases(monkeypatch):
    from testbed.cli import experiment_commands
    seen = []
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: Site(topology.load("small")))
    monkeypatch.setattr(runner, "sized_for_site", lambda exp, scale, topo, accelerator, sets, **k: sets)
    class FakeRun:
        path = PROJECT_ROOT / "nowhere"
    monkeypatch.setattr(runner, "run_checked", lambda site, exp, scale, sets, profs, select=(), repeat=None, **_quiet:
                        seen.append(scale) or (0, FakeRun()))
    monkeypatch.setattr(experiment_commands, "_print_comparison", lambda *a, **k: None)
    for argv, scale in ((["--scale", "ci"], "ci"), (["--quick"], "quick"), (["--full"], "full"), ([], "quick")):
        assert cli.main(["-t", "small", "run", "e1"] + argv) == 0
        assert seen[-1] == scale
    with pytest.raises(SystemExit):
        cli.main(["-t", "small", "run", "e1", "--scale", "huge"])
    with pytest.raises(SystemExit):
        cli.main(["-t", "small", "run", "e1", "--scale", "ci", "--full"])


def test_robot_argv_uses_the_registry_suite(tmp_path):
    argv = runner.robot_argv(registry.get("e2"), "ci", tmp_path)
    assert argv[-1] == str(registry.get("e2").suite_path) and "SCALE:ci" in argv


def _sources(exp):
    """The experiment's suite, the libraries it imports (not TestbedLibrary, shared by all) and
    the modules of its package (testbed/experiments/NAME/: where its points' Measured records are made)."""
    suite = exp.suite_path
    texts = [suite.read_text()]
    for lib in re.findall(r"^Library\s+(\S+\.py)", texts[0], re.MULTILINE):
        path = (suite.parent / lib).resolve()
        if path.name != "TestbedLibrary.py":
            texts.append(path.read_text())
    entry = next(m for m in list(sys.modules.values()) if getattr(m, "EXPERIMENT", None) is exp)
    texts += [p.read_text() for p in sorted(Path(entry.__file__).parent.glob("*.py"))]
    return "\n".join(texts)


def _recorded_names(text):
    """Metric names written literally on a line that records (Record Metric..., record_metric(, rec()),
    prefixed by any experiment's name (e1., smoke., faults., ...)."""
    prefixes = "|".join(sorted({re.escape(n) for n in registry.experiments()} | {r"e\d+"}))
    names = set()
    for line in text.splitlines():
        if re.search(r"record", line, re.IGNORECASE) or re.search(r"\brec\(", line):
            names.update(re.findall(rf"\b((?:{prefixes})\.[a-z0-9_]+)\b", line))
    return names


def test_every_declared_metric_is_recorded_by_its_suite_or_library():
    for exp in registry.experiments().values():
        recorded = _recorded_names(_sources(exp))
        missing = set(exp.metrics) - recorded
        assert not missing, f"{exp.name} declares metrics it never records: {sorted(missing)}"
        undeclared = {n for n in recorded if n.split(".")[0] == exp.name} - set(exp.metrics)
        assert not undeclared, f"{exp.name} records metrics it does not declare: {sorted(undeclared)}"


def test_every_paper_metric_is_recorded_by_some_experiment():
    declared = {m: e for e in registry.experiments().values() for m in e.metrics}
    for fig in compare.load_paper():
        exp = declared.get(fig["metric"])
        assert exp is not None, f"results/paper: {fig['metric']} is recorded by no experiment"
        assert fig["metric"] in _recorded_names(_sources(exp))
    for exp in registry.experiments().values():
        if exp.paper:  # an experiment's paper file holds its own figures only
            assert {f["metric"].split(".")[0] for f in compare.load_paper(exp.paper_path)} == {exp.name}


def test_no_suite_list_outside_the_registry():
    for rel in ("testbed/harness/runner.py", "testbed/cli/experiment_commands.py", "testbed/results/compare.py"):
        text = (PROJECT_ROOT / rel).read_text()
        for exp in registry.experiments().values():
            assert exp.suite.rsplit("/", 1)[-1] not in text, (rel, exp.suite)
        assert "X_PARAMS" not in text and "CI_SUITES" not in text and "SUITES = " not in text, rel


def test_run_passes_robot_selection_before_the_suite_file():
    from testbed.harness import runner
    argv = runner.robot_argv(registry.get("e1"), "ci", "/tmp/r", ["--test", "rtt80-2W-default", "--include", "RTT80"])
    i = argv.index("--test")
    assert argv[i:i + 4] == ["--test", "rtt80-2W-default", "--include", "RTT80"]
    assert argv[-1].endswith("e1_transfer_limits.robot")


def test_the_demo_sizes_e1s_saturation_to_the_submit_hosts_cpus_under_tcg():
    from testbed.model import topology
    head = registry.headline()
    default = topology.load("default")
    sets, why = head.sized_for("quick", "tcg", default)
    cpus = default.role_host("submit").cpus
    assert sets == {"saturation_jobs": 8 * cpus} and len(why) == 1
    assert why[0].startswith("saturation_jobs 32 -> ") and "override" in why[0]
    assert head.sized_for("quick", "kvm", default) == ({}, [])       # KVM runs the scale as it is
    assert head.sized_for("ci", "tcg", default) == ({}, [])          # 8 jobs at ci: already carried
    sets, why = head.sized_for("full", "tcg", default)               # full: every slot -> capped
    assert sets["saturation_jobs"] == 8 * cpus and "every worker slot" in why[0]
    head.parameters("quick", sets)                                    # a valid --set for the run
    assert registry.get("e5").sized_for("quick", "tcg", default) == ({}, [])


def test_demo_prints_what_it_scaled_and_passes_it_to_the_run(monkeypatch, capsys):
    from testbed.cli import experiment_commands
    from testbed.machines import lifecycle, plan
    from testbed.harness import runner
    seen = {}
    monkeypatch.setattr(lifecycle, "up", lambda site, profile, health, **kw: 0)
    monkeypatch.setattr(plan, "recorded_accel", lambda state: "tcg")

    class FakeRun:
        path = PROJECT_ROOT / "results" / "nothing"

    def fake_run(topo, suite, profiles, scale, sets=None, repeat=None, pause_unused=None, pin=None, echo=print):
        seen.update(suite=suite, scale=scale, sets=sets, repeat=repeat, profiles=profiles,
                    quiet=(pause_unused, pin))
        return 0, FakeRun()
    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: {})   # not this host's console logs
    monkeypatch.setattr(experiment_commands, "_print_comparison", lambda runs, **kw: None)
    args = type("A", (), {"topology": "default"})()
    assert experiment_commands.cmd_demo(args) == 0
    assert seen == {"suite": "e1", "scale": "quick", "sets": {"saturation_jobs": 8, "rate_factors": [2]},
                    "repeat": 1,
                    "profiles": ["table4-default", "table4-updated"],   # the scaled pair: `./tb run e1`
                    "quiet": (False, False)}   # one trial: the demo's site stays as it came up
    out = capsys.readouterr().out
    assert "demo scale (TCG," in out and "rate_factors [1, 2] -> [2]" in out
    registry.headline().parameters("quick", seen["sets"])              # a valid --set for the run


def test_the_demo_keeps_the_points_of_the_latency_claim_and_its_model():
    """The demo's 2W sweep holds Figure 2's red line, which the latency claim and its scale
    model read; the tuning claim reads W (the paper's tuned line), which only `./tb run e1` has."""
    head = registry.headline()
    labels = {e1_rate_label(f) for f in head.demo_sets["rate_factors"]}
    full = {e1_rate_label(f) for f in head.scales["quick"]["rate_factors"]}
    by_id = {c.id: c for c in head.claims()}
    for cid in ("e1-loss-grows-with-rtt", "e1-loss-grows-with-rtt-scaled"):
        assert {s.params["rate"] for s in by_id[cid].value.selectors()} <= labels
    read = {s.params["rate"] for c in by_id.values() for s in c.value.selectors() if "rate" in s.params}
    assert read <= full   # every claim's points are in `./tb run e1` at quick


def test_names_parameters_are_words_and_rows_compare_as_text():
    e3 = registry.get("e3")
    assert e3.parameters("quick", {"readers": "uproot"})["readers"] == ["uproot"]
    assert e3.parameters("ci", {"READERS": "root, uproot"})["readers"] == ["root", "uproot"]
    with pytest.raises(ConfigError, match="readers must be a list of names like root,uproot"):
        e3.parameters("quick", {"readers": "ROOT!"})
    with pytest.raises(ConfigError, match="has rows for readers root, uproot only \\(not fast\\)"):
        e3.parameters("quick", {"readers": "root,fast"})
    assert points.same_value("80", 80.0) and points.same_value("root", " root")
    assert not points.same_value("root", "uproot") and not points.same_value("10", "1e1x")


def test_a_parameter_outside_its_bounds_is_refused_with_them():
    assert registry.get("e3").parameters("quick", {"read_every": "5"})["read_every"] == 5
    with pytest.raises(ConfigError, match="read_every must be from 1 to 10000000, not 0$"):
        registry.get("e3").parameters("quick", {"read_every": "0"})
    with pytest.raises(ConfigError, match="client_pgread must be from 0 to 1, not 2$"):
        registry.get("e2").parameters("quick", {"client_pgread": "2"})
    counts = registry.Param("ints", minimum=1, maximum=8)
    assert counts.parse("k", "1,2") == [1, 2] and not counts.check([0, 2])
    with pytest.raises(ConfigError, match="k must be from 1 to 8, not -3$"):
        counts.parse("k", "2,-3")
    half = registry.Param("float", minimum=0, maximum=0.5)
    assert half.check(0.5) and not half.check(0.6)


def test_the_box_recipe_carries_root_and_what_its_interpreter_needs():
    from testbed.machines import box
    recipe = box.RECIPE_DIR
    assert "python-e3.txt" in box.RECIPES["debian13"]
    pins = [line.split("#")[0].strip() for line in (recipe / "python-e3.txt").read_text().splitlines()]
    assert "root==0.1a12" in pins
    packages = [line.split("#")[0].strip() for line in (recipe / "debian-packages.txt").read_text().splitlines()]
    assert "g++" in packages   # cling asks the compiler for the standard headers
    build = (recipe / "build-debian.sh").read_text()
    # the import check compiles C++ (cling without headers imports fine and exits 0)
    assert "ROOT.gInterpreter.Declare" in build and "du -sh" in build and "pip install ${pip_s} s" in build


def test_ci_and_demo_profiles_are_among_the_experiments_own():
    """`testbed test` runs each experiment's ci_profiles (else its profiles); a name outside
    its profiles is refused when the experiment is declared."""
    import dataclasses
    head = registry.headline()
    assert head.ci_profiles and set(head.ci_profiles) < set(head.profiles)
    for field_name in ("ci_profiles", "demo_profiles"):
        with pytest.raises(ValueError, match=f"{field_name} names \\['no-such'\\]"):
            dataclasses.replace(head, **{field_name: ("no-such",)})


def test_a_selection_that_picks_no_test_is_refused_before_the_run():
    from testbed.harness import runner
    from testbed.model.errors import ConfigError
    runner.check_selection(registry.get("e1"), ["raw-tcp"], [])          # a point of the suite
    runner.check_selection(registry.get("e1"), ["rtt80*"], ["RTT80"])    # robot's own patterns and tags
    runner.check_selection(registry.get("e1"), [], [])                   # no selection: the whole suite
    with pytest.raises(ConfigError) as err:
        runner.check_selection(registry.get("e1"), ["nosuchpoint"], [])
    assert str(err.value).startswith("robot/suites/e1_transfer_limits.robot: --test nosuchpoint: "
                                     "selects no test of the suite (its tests: raw-tcp, saturation")
    with pytest.raises(ConfigError, match="--include nope: selects no test"):
        runner.check_selection(registry.get("e2"), [], ["nope"])
