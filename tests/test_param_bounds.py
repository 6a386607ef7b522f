"""Every numeric experiment parameter has declared bounds, checked at import for every scale
and for each `--set` before anything else; YAML numbers that are nan or infinite are refused."""
import math

import pytest
import yaml

from testbed import PROJECT_ROOT, cli
from testbed.harness import registry
from testbed.harness.registry import Experiment, Param
from testbed.model import profiles, topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.remote.site import Site


def numeric_params():
    return [(exp, name, spec) for exp in registry.experiments().values()
            for name, spec in exp.params.items() if spec.kind != "names"]


def test_every_numeric_parameter_declares_both_bounds_and_every_scale_lies_within():
    found = numeric_params()
    assert len(found) > 90
    for exp, name, spec in found:
        assert spec.minimum is not None and spec.maximum is not None, (exp.name, name)
        assert math.isfinite(spec.minimum) and math.isfinite(spec.maximum) and spec.minimum <= spec.maximum
        for scale in registry.SCALES:
            value = exp.scales[scale][name]
            if value is None:
                assert spec.optional, (exp.name, scale, name)
                continue
            for v in value if isinstance(value, list) else [value]:
                assert spec.minimum <= v <= spec.maximum, (exp.name, scale, name, v, spec.range)


def test_what_the_demo_and_the_site_sizing_set_is_within_the_bounds():
    head = registry.headline()
    head.parameters("quick", head.demo_sets)
    small = topology.load("small")
    for exp in registry.experiments().values():
        for scale in registry.SCALES:
            for accelerator in ("tcg", "kvm"):
                exp.parameters(scale, exp.sized_for(scale, accelerator, small)[0])


@pytest.mark.parametrize("kwargs,problem", [
    ({}, "needs a finite minimum and maximum"),
    ({"minimum": 0}, "needs a finite minimum and maximum"),
    ({"maximum": 10}, "needs a finite minimum and maximum"),
    ({"minimum": 0, "maximum": math.inf}, "needs a finite minimum and maximum"),
    ({"minimum": math.nan, "maximum": 1}, "needs a finite minimum and maximum"),
    ({"minimum": False, "maximum": 1}, "needs a finite minimum and maximum"),
    ({"minimum": 5, "maximum": 1}, "minimum 5 is above its maximum 1"),
])
def test_a_numeric_param_without_both_bounds_is_refused(kwargs, problem):
    for kind in ("int", "float", "ints", "numbers"):
        with pytest.raises(ValueError, match=problem):
            Param(kind, "help", **kwargs)


def test_names_have_no_bounds():
    assert Param("names").range == ""
    with pytest.raises(ValueError, match="a names Param has no minimum or maximum"):
        Param("names", minimum=0, maximum=1)


def test_range_is_shown_as_a_user_reads_it():
    assert Param("int", minimum=0, maximum=10**6).range == "0..1000000"
    assert Param("float", minimum=0.01, maximum=100.0).range == "0.01..100"


@pytest.mark.parametrize("kind,text,problem", [
    ("int", "-5", "k must be from 0 to 100, not -5"),
    ("int", "101", "k must be from 0 to 100, not 101"),
    ("int", "99999999999", "k must be from 0 to 100, not 99999999999"),
    ("int", "nan", "k must be a whole number like 8"),
    ("int", "inf", "k must be a whole number like 8"),
    ("float", "-3", "k must be from 0 to 100, not -3"),
    ("float", "1e308", "k must be from 0 to 100, not 1e+308"),
    ("float", "nan", "k must be a number like 0.25"),
    ("float", "-inf", "k must be a number like 0.25"),
    ("float", "1e400", "k must be a number like 0.25"),
    ("ints", "1,200", "k must be from 0 to 100, not 200"),
    ("ints", "1,nan", "k must be a list of whole numbers like 1,2,4"),
    ("numbers", "0,-0.5", "k must be from 0 to 100, not -0.5"),
    ("numbers", "0,nan", "k must be a list of numbers like 0,20,40"),
    ("numbers", "inf", "k must be a list of numbers like 0,20,40"),
])
def test_parse_refuses_values_outside_the_bounds_and_nan_or_inf(kind, text, problem):
    with pytest.raises(ConfigError) as exc:
        Param(kind, minimum=0, maximum=100).parse("k", text)
    assert str(exc.value) == f"--set: k={text}: {problem}"


@pytest.mark.parametrize("kind,value", [
    ("float", math.nan), ("float", math.inf), ("float", -math.inf), ("float", 10**400),
    ("numbers", [0, math.nan]), ("numbers", [math.inf]), ("ints", [1, 10**400]),
])
def test_values_that_already_have_a_type_are_refused_when_nan_or_infinite(kind, value):
    """From code or YAML, not text: they bypass the text parser."""
    spec = Param(kind, minimum=0, maximum=100)
    with pytest.raises(ConfigError, match="must be a"):
        spec.parse("k", value)
    assert not spec.check(value)


def test_the_bounds_hold_at_the_edges():
    spec = Param("float", minimum=0.01, maximum=100)
    assert spec.parse("k", "0.01") == 0.01 and spec.parse("k", 100) == 100.0
    assert Param("ints", minimum=1, maximum=2).parse("k", [1, 2]) == [1, 2]


def _experiment(value):
    scales = {s: {"n": 4} for s in registry.SCALES}
    scales["quick"]["n"] = value
    return Experiment(name="x", title="x", seed=None, suite="robot/suites/x.robot", uses=("worker",),
                      params={"n": Param("int", "jobs", minimum=1, maximum=8)}, scales=scales)


def test_a_scale_value_outside_the_bounds_is_refused_at_import():
    assert _experiment(8).scales["quick"]["n"] == 8
    with pytest.raises(ValueError, match=r"^x: quick.n = 9: n must be from 1 to 8, not 9$"):
        _experiment(9)
    with pytest.raises(ValueError, match=r"^x: quick.n = 0: n must be from 1 to 8, not 0$"):
        _experiment(0)
    with pytest.raises(ValueError, match=r"^x: quick.n = 'many': n must be a whole number like 8$"):
        _experiment("many")


def test_an_unknown_key_lists_the_known_parameters_with_their_bounds():
    with pytest.raises(ConfigError) as exc:
        registry.get("e3").parameters("quick", {"nope": "1"})
    assert "(known: basket_events 1..1000000, branches 1..10000, " in str(exc.value)
    assert "read_branches 1..10000, read_every 1..10000000, readers, rtts 1..1000, sites 2..4)" in str(exc.value)


# --- the command line: the bound first, whatever the site ------------------------------------
def _no_site(monkeypatch):
    """The site and its topology must not be asked before the parameters are checked."""
    from testbed.cli import experiment_commands
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True:
                        pytest.fail("the site must not be asked"))


@pytest.mark.parametrize("setting,line", [
    ("sweep_jobs=-5", "testbed: --set: sweep_jobs=-5: sweep_jobs must be from 1 to 100000, not -5"),
    ("tcp_seconds=-1", "testbed: --set: tcp_seconds=-1: tcp_seconds must be from 1 to 86400, not -1"),
    ("saturation_load=-3", "testbed: --set: saturation_load=-3: saturation_load must be from 0.01 to 100, not -3"),
    ("sweep_load=1e308", "testbed: --set: sweep_load=1e308: sweep_load must be from 0.01 to 100, not 1e+308"),
    ("sweep_jobs=99999999999",
     "testbed: --set: sweep_jobs=99999999999: sweep_jobs must be from 1 to 100000, not 99999999999"),
    ("rtts=0,nan", "testbed: --set: rtts=0,nan: rtts must be a list of numbers like 0,20,40"),
])
def test_a_bad_set_is_one_line_exit_2_before_the_site(setting, line, capsys, monkeypatch):
    _no_site(monkeypatch)
    assert cli.main(["-t", "small", "run", "e1", "--set", setting]) == 2
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and "Traceback" not in captured.err and captured.out == ""


def test_a_good_set_goes_on_to_the_site(capsys, monkeypatch):
    from testbed.cli import experiment_commands

    def not_up(args, change=None, running=True):
        assert running
        raise TestbedError("no testbed small here; `testbed -t small up` first")
    # the parameters checked, then the site, which is not up
    monkeypatch.setattr(experiment_commands, "_site", not_up)
    assert cli.main(["-t", "small", "run", "e1", "--set", "sweep_jobs=16"]) == 2
    assert capsys.readouterr().err == "testbed: no testbed small here; `testbed -t small up` first\n"


# --- YAML numbers: nan and infinity are refused in one line naming file and field ------------
SMALL = (PROJECT_ROOT / "topologies" / "small.yaml").read_text()


@pytest.mark.parametrize("link,field,shown", [
    ("rtt_ms: .nan}", "wan[0].rtt_ms", "nan"),
    ("rtt_ms: .inf}", "wan[0].rtt_ms", "inf"),
    ("rtt_ms: 20, loss_pct: .nan}", "wan[0].loss_pct", "nan"),
    ("rtt_ms: 20, jitter_ms: -.inf}", "wan[0].jitter_ms", "-inf"),
    ("rtt_ms: 20, rate_mbit: .NaN}", "wan[0].rate_mbit", "nan"),
])
def test_a_topology_link_that_is_nan_or_infinite_is_refused(tmp_path, link, field, shown):
    path = tmp_path / "t.yaml"
    path.write_text(SMALL.replace("rtt_ms: 0}", link))
    with pytest.raises(ConfigError) as exc:
        topology.load(path)
    assert str(exc.value) == f"{path}: {field}: must be a finite number, got {shown}"


def test_a_topology_disk_limit_that_is_nan_is_refused(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(SMALL.replace("mb_per_s: 40", "mb_per_s: .nan"))
    with pytest.raises(ConfigError) as exc:
        topology.load(path)
    assert str(exc.value) == f"{path}: hosts.dtn.disks.mb_per_s: must be a finite number, got nan"
    assert topology.load(PROJECT_ROOT / "topologies" / "small.yaml").wan[0].rtt_ms == 0


@pytest.mark.parametrize("body,field,shown", [
    ("wan:\n  - {between: [submit, worker], rtt_ms: .nan}\n", "wan[0].rtt_ms", "nan"),
    ("wan:\n  - {between: [submit, worker], rtt_ms: 40, loss_pct: .inf}\n", "wan[0].loss_pct", "inf"),
    ("roles:\n  all:\n    sysctl:\n      net.core.rmem_max: .inf\n", "net.core.rmem_max", "inf"),
    ("roles:\n  submit:\n    condor:\n      MAX_TRANSFER_OUTPUT_MB: .nan\n", "MAX_TRANSFER_OUTPUT_MB", "nan"),
])
def test_a_profile_number_that_is_nan_or_infinite_is_refused(tmp_path, body, field, shown):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + body)
    assert yaml.safe_load(path.read_text())   # YAML itself reads .nan and .inf as floats
    with pytest.raises(ConfigError) as exc:
        profiles.load(path)
    text = str(exc.value)
    assert text.startswith(f"{path}: ") and field in text and text.endswith(f"must be a finite number, got {shown}")
    assert "\n" not in text


@pytest.mark.parametrize("name, sets, problem", [
    ("e3", {"read_branches": "500"}, "read_branches (500) must be at most branches (300)"),
    ("e5", {"ramp_start": "64", "ramp_max": "32"}, "ramp_start (64) must be at most ramp_max (32)"),
    ("e5", {"collector_ramp_start": "8"}, "collector_ramp_start (8) must be at most collector_ramp_max (4)"),
])
def test_parameters_that_disagree_with_each_other_are_one_line_naming_both(name, sets, problem):
    from testbed.harness import registry
    from testbed.model.errors import ConfigError
    with pytest.raises(ConfigError) as err:
        registry.get(name).parameters("ci", sets)
    assert problem in str(err.value) and str(err.value).startswith("--set: ")
    registry.get(name).parameters("quick", {"collector_ramp_start": "8"} if name == "e5" else {})  # max 0: as many as fit
