import pytest
import yaml

from testbed import PROJECT_ROOT
from testbed.model import profiles
from testbed.model.errors import ConfigError


def write(tmp_path, name, data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_profiles_load_with_inheritance():
    tuned = profiles.load("wan-tuned")
    assert tuned.chain == ["wan-tuned", "default"]
    sysctl = tuned.section("all", "sysctl")
    # seed 000, Table 4, tuned column, exactly
    assert sysctl == {
        "net.core.wmem_max": 12582912, "net.core.rmem_max": 12582912,
        "net.ipv4.tcp_rmem": "10240 87380 12582912", "net.ipv4.tcp_wmem": "10240 87380 12582912",
        "net.core.netdev_max_backlog": 250000, "net.ipv4.tcp_mtu_probing": 1}
    # inherited from default untouched
    assert tuned.section("dtn", "md") == {"stripe_cache_size": 256, "group_thread_cnt": 0}
    assert profiles.load("raid-stripe-32768").section("dtn", "md")["stripe_cache_size"] == 32768
    assert profiles.load("collector-tuned").section("worker", "condor")["UPDATE_INTERVAL"] == 120


def test_for_host_merges_all_then_roles_in_order():
    p = profiles.load("collector-tuned")
    assert p.for_host(["cm"], "sysctl")["net.core.rmem_max"] == 10485760
    assert p.for_host(["worker"], "sysctl")["net.core.rmem_max"] == 212992


def test_diff_lists_only_differences():
    rows = profiles.diff(profiles.load("default"), profiles.load("raid-stripe-32768"))
    assert rows == [("dtn", "md", "stripe_cache_size", 256, 32768)]


def test_profiles_are_robot_variable_files():
    # robot --variablefile X.yaml needs a mapping of variable names
    for path in profiles.PROFILE_DIR.glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert isinstance(data, dict) and all(isinstance(k, str) and k.isidentifier() for k in data)


@pytest.mark.parametrize("roles, field, problem", [
    ({"wizard": {}}, "roles.wizard", "unknown key"),
    ({"all": {"colour": {}}}, "roles.all.colour", "unknown key"),
    ({"dtn": {"md": {"stripe_cache_size": 99999}}}, "roles.dtn.md.stripe_cache_size", "17..32768"),
    ({"dtn": {"md": {"speed": 1}}}, "roles.dtn.md.speed", "unknown md knob"),
    ({"all": {"sysctl": {"NotASysctl": 1}}}, "roles.all.sysctl.NotASysctl", "not a sysctl name"),
    ({"all": {"sysctl": {"net.core.rmem_max": "big"}}}, "roles.all.sysctl.net.core.rmem_max", "number"),
    ({"submit": {"condor": {"ALLOW_WRITE": "*"}}}, "roles.submit.condor.ALLOW_WRITE", "may not set"),
    ({"submit": {"condor": {"X": [1]}}}, "roles.submit.condor.X", "number or a string"),
    ({"dtn": {"xrootd_cache": {"ram": "lots"}}}, "roles.dtn.xrootd_cache.ram", "size like"),
])
def test_bad_profile_values(tmp_path, roles, field, problem):
    path = write(tmp_path, "bad", {"name": "bad", "roles": roles})
    with pytest.raises(ConfigError) as err:
        profiles.load(path)
    assert str(err.value).startswith(f"{path}: {field}: ")
    assert problem in str(err.value)


def test_extends_loop_is_an_error(tmp_path):
    write(tmp_path, "a", {"name": "a", "extends": str(tmp_path / "b.yaml")})
    write(tmp_path, "b", {"name": "b", "extends": str(tmp_path / "a.yaml")})
    with pytest.raises(ConfigError) as err:
        profiles.load(tmp_path / "a.yaml")
    assert "inheritance loop" in str(err.value)


def test_derived_overrides_parent_and_keeps_wan(tmp_path):
    write(tmp_path, "base", {"name": "base", "roles": {"all": {"sysctl": {"net.core.rmem_max": 1}}},
                             "wan": [{"between": ["submit", "worker"], "rtt_ms": 20}]})
    write(tmp_path, "child", {"name": "child", "extends": str(tmp_path / "base.yaml"),
                              "roles": {"all": {"sysctl": {"net.core.rmem_max": 2}}}})
    child = profiles.load(tmp_path / "child.yaml")
    assert child.section("all", "sysctl") == {"net.core.rmem_max": 2}
    assert child.wan[0]["rtt_ms"] == 20


def test_normalise_sysctl():
    assert profiles.normalise_sysctl("4096\t87380   6291456") == "4096 87380 6291456"


def test_every_profile_is_a_robot_variable_file():
    from robot.variables.filesetter import YamlImporter
    for path in sorted((PROJECT_ROOT / "profiles").glob("*.yaml")):
        names = {name for name, _ in YamlImporter().import_variables(str(path))}
        assert {"name", "roles"} <= names, path


@pytest.mark.parametrize("key, value, what", [
    ("USER_JOB_WRAPPER", "/tmp/w.sh", "runs_commands"),
    ("STARTD_CRON_PROBE_EXECUTABLE", "/tmp/p.sh", "runs_commands"),
    ("SCHEDD", "/tmp/schedd", "runs_commands"),
    ("STARTD.STARTER", "/tmp/starter", "runs_commands"),
    ("STARTER_JOB_HOOK_KEYWORD", "X", "runs_commands"),
    ("FILETRANSFER_PLUGINS", "/tmp/p.py", "runs_commands"),
    ("SEC_DEFAULT_ENCRYPTION", "OPTIONAL", "weakens_encryption"),
])
def test_a_profile_that_runs_commands_or_weakens_encryption_must_declare_it(tmp_path, key, value, what):
    roles = {"worker": {"condor": {key: value}}}
    path = write(tmp_path, "bad", {"name": "bad", "roles": roles})
    with pytest.raises(ConfigError) as err:
        profiles.load(path)
    assert str(err.value).startswith(f"{path}: roles.worker.condor.{key}: ")
    assert f"declares: {{{what}: <reason>}}" in str(err.value) and "\n" not in str(err.value)
    write(tmp_path, "ok", {"name": "ok", "roles": roles, "declares": {what: "a test of the declaration"}})
    assert profiles.load(tmp_path / "ok.yaml").declares == {what: "a test of the declaration"}


def test_a_declaration_is_inherited_kept_in_the_manifest_and_needs_a_reason(tmp_path):
    child = profiles.load("table4-default")           # extends transfer-plain, which declares
    assert "weakens_encryption" in child.declares and child.as_dict()["declares"] == child.declares
    from testbed.model import scaled_profiles
    assert scaled_profiles.scaled(child, 0.01).declares == child.declares
    for declares, problem in (({"weakens_encryption": ""}, "needs a one-line reason"),
                              ({"anything": "x"}, "unknown key")):
        path = write(tmp_path, "p", {"name": "p", "declares": declares})
        with pytest.raises(ConfigError, match=problem):
            profiles.load(path)


def test_ccb_address_belongs_to_the_topology():
    with pytest.raises(ConfigError, match="owned by the topology"):
        profiles._check_condor_security(profiles.Reader({}, "p.yaml"), "CCB_ADDRESS", "evil:9618")
