"""Every YAML the project reads (topologies, profiles, paper figures) refuses a key given
twice, naming the key and both lines (yaml itself keeps the last one silently)."""
import pytest

from testbed.model import profiles, topology
from testbed.model.errors import ConfigError
from testbed.model.schema import load_yaml
from testbed.results import compare

TOPOLOGY = """name: twice
hosts:
  a:
    roles: [submit]
  b:
    roles: [worker]
  a:
    roles: [cm]
"""


def test_a_topology_with_a_host_twice_is_refused_naming_the_key_and_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text(TOPOLOGY)
    with pytest.raises(ConfigError) as exc:
        topology.load(str(path))
    assert str(exc.value) == (f"{path}: line 7: duplicate key 'a' (first on line 3; YAML would keep only the last)")
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("loader, text", [
    (profiles.load, "name: p\ndescription: x\nroles:\n  worker:\n    sysctl: {}\ndescription: y\n"),
    (compare.load_paper, "figures:\n  - id: f1\n    x: 1\n    x: 2\n"),
])
def test_profiles_and_paper_figures_refuse_a_key_twice(tmp_path, loader, text):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"duplicate key '(description|x)' \(first on line \d+;"):
        loader(str(path) if loader is profiles.load else path)


def test_same_keys_in_different_mappings_and_merges_are_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {cpus: 1}\na: {cpus: 2, <<: *b}\nb: {cpus: 2}\n")
    assert load_yaml(path)["a"] == {"cpus": 2} and load_yaml(path)["b"] == {"cpus": 2}


def test_every_shipped_yaml_has_no_key_twice():
    from testbed import PROJECT_ROOT
    for path in sorted(PROJECT_ROOT.glob("topologies/*.yaml")) + sorted(PROJECT_ROOT.glob("profiles/*.yaml")) \
            + sorted(PROJECT_ROOT.glob("results/paper/*.yaml")):
        load_yaml(path)
