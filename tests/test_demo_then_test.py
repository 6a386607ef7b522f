"""The README's two commands in either order: `testbed demo` leaves `default` up and marks it;
`testbed test` takes that site down before its unit tests (saying so) and refuses, before them
too, any other topology a user brought up here."""
import types

import pytest

from testbed.cli import experiment_commands
from testbed.machines import lifecycle
from testbed.model import topology
from testbed.model.errors import TestbedError


@pytest.fixture
def state_root(monkeypatch, tmp_path):
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    return tmp_path


def test_the_demo_mark_lasts_until_the_site_is_brought_up_again_or_down(state_root):
    default = topology.load("default")
    assert not lifecycle.left_by_demo("default")
    lifecycle.mark_left_by_demo(default)
    assert lifecycle.left_by_demo("default") and not lifecycle.left_by_demo("small")
    assert (state_root / "default" / "left-by-demo").exists() and lifecycle.demo_mark("default").exists()


def _tb_test(monkeypatch, up, demo, ran):
    """cmd_test with `up` the topology up in this checkout (left by the demo or not); the
    unit tests, docs and end to end are faked, each call appended to `ran`."""
    monkeypatch.setattr(lifecycle, "active_topology", lambda: up)
    monkeypatch.setattr(lifecycle, "left_by_demo", lambda name: demo)
    monkeypatch.setattr(lifecycle, "down", lambda site: ran.append(f"down {site.name}"))
    monkeypatch.setattr(experiment_commands, "_run", lambda argv: ran.append("unit tests") or 1)   # stop after them
    return experiment_commands.cmd_test(types.SimpleNamespace(unit_only=False, keep=False))


def test_tb_test_takes_down_the_site_the_demo_left_before_its_unit_tests(monkeypatch, capsys):
    ran = []
    assert _tb_test(monkeypatch, "default", True, ran) == 1
    assert ran == ["down default", "unit tests"]
    assert "taking down default, the site `testbed demo` left up" in capsys.readouterr().out


def test_tb_test_refuses_a_site_the_user_brought_up_before_its_unit_tests(monkeypatch):
    ran = []
    with pytest.raises(TestbedError, match=r"topology default is up in this checkout; `testbed -t default down` first"):
        _tb_test(monkeypatch, "default", False, ran)
    assert ran == []


def test_tb_test_with_nothing_up_or_its_own_site_up_takes_nothing_down(monkeypatch):
    for up in (None, "small"):
        ran = []
        assert _tb_test(monkeypatch, up, False, ran) == 1
        assert ran == ["unit tests"]


def test_the_demo_marks_its_site_and_says_it_is_up(monkeypatch, capsys, state_root):
    from testbed.harness import runner
    run = types.SimpleNamespace(path=state_root / "run")
    ups = []
    monkeypatch.setattr(lifecycle, "up", lambda site, profile, health=None, **kw: ups.append(kw) or 0)
    monkeypatch.setattr(runner, "sized_for_site", lambda *a, **k: {})
    monkeypatch.setattr(runner, "run_on_live_guests", lambda *a, **k: (0, [run], None))
    monkeypatch.setattr(experiment_commands, "_print_comparison", lambda runs, against_paper=False: None)
    assert experiment_commands.cmd_demo(types.SimpleNamespace(topology=None)) == 0
    assert ups == [{"keep_warm": False}]   # no snapshot in the demo's 20 minutes
    assert lifecycle.left_by_demo("default")
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("demo: the default site is still up (9 VMs, 7680 MB of guest RAM)")
    assert "`./tb down` takes it down, and `./tb test` takes it down itself" in out[-1]
