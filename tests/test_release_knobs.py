"""A release's record (services/release_knobs.py) and the releases side by side
(results/release_record.py, the docs' release-knobs section), over a faked SSH."""
from types import SimpleNamespace

import pytest

from testbed.model import topology
from testbed.report import site_sections
from testbed.results import release_record
from testbed.services import release_knobs


def test_the_knobs_come_from_the_templates_and_the_profiles():
    knobs = release_knobs.testbed_knobs()
    assert "templates" not in knobs and "NEGOTIATOR_INTERVAL" in knobs
    assert "condor/common.conf.j2" in knobs["NEGOTIATOR_INTERVAL"]
    assert "e5/negotiation-per-request.conf.j2" in knobs["USE_RESOURCE_REQUEST_COUNTS"]
    assert "profile table4-default" in knobs["MAX_CONCURRENT_DOWNLOADS"]
    assert list(knobs) == sorted(knobs)


def test_a_dump_gives_each_knob_its_value_or_none():
    dump = ("# Configuration from machine: submit\nNEGOTIATOR_INTERVAL = 60\nALLOW_READ = \n"
            "CATALOG_SPACE @=end\n   ifthenelse(\n   a,\n   0)\n@end\nUPDATE_INTERVAL = 300\n")
    assert release_knobs.values_of(["NEGOTIATOR_INTERVAL", "allow_read", "CATALOG_SPACE", "FOO", "UPDATE_INTERVAL"],
                                   dump) == {"NEGOTIATOR_INTERVAL": "60", "allow_read": "", "FOO": None,
                                             "CATALOG_SPACE": "ifthenelse( a, 0)", "UPDATE_INTERVAL": "300"}


def test_a_release_is_named_by_the_versions_a_manifest_records():
    assert release_record.release_name({"condor": "25.14.1", "xrootd": "v6.2.0"}) == "HTCondor 25.14.1, XRootD 6.2.0"
    assert release_record.release_name(None) == "HTCondor ?, XRootD ?"


class FakeSSH:
    """Answers as a site of one release would: `defaults` for ONLY_ENV, `files` otherwise."""

    def __init__(self, defaults, files, version):
        self.defaults, self.files, self.version, self.hosts = defaults, files, version, []

    def run(self, host, command, check=True, timeout=None):
        self.hosts.append(host)
        if command.startswith("echo condor="):          # health.VERSIONS_SCRIPT
            out = f"condor={self.version}\nxrootd=v6.2.0\nkernel=6.12\nos=Debian\n"
        elif command.startswith("dpkg-query"):
            out = f"condor {self.version}+dfsg-1\nxrootd-server 6.2.0-2\n"
        elif command.startswith("grep"):
            out = "      2 Config warning: ignoring unknown directive 'pss.foo'\n"
        else:
            table = self.defaults if "ONLY_ENV" in command else self.files
            out = "".join(f"{n} = {v}\n" for n, v in table.items())
        return SimpleNamespace(stdout=out, ok=True)

    def run_many(self, commands, check=False, timeout=None):
        return {host: self.run(host, command, check) for host, command in commands.items()}


def test_a_record_of_the_small_site_and_two_releases_side_by_side(tmp_path):
    topo = topology.load("small")
    old = release_knobs.collect(topo, FakeSSH({"NEGOTIATOR_INTERVAL": "60", "UPDATE_INTERVAL": "300"},
                                              {"NEGOTIATOR_INTERVAL": "20"}, "23.9.6"))
    ssh = FakeSSH({"NEGOTIATOR_INTERVAL": "60"}, {"NEGOTIATOR_INTERVAL": "20"}, "25.14.1")
    new = release_knobs.collect(topo, ssh)
    assert set(new["hosts"]) == {"submit", "cm", "ccb", "worker", "dtn"}
    assert new["in_force"]["cm"]["NEGOTIATOR_INTERVAL"] == "20"
    assert new["xrootd_lines"] == {"dtn": ["2 Config warning: ignoring unknown directive 'pss.foo'"]}
    assert new["versions"]["condor"] == "25.14.1" and new["packages"]["condor"] == "25.14.1+dfsg-1"
    # kept one file per release, listed oldest release first whatever the order of keeping
    release_record.keep(new, "grid-testbed-debian13-sid", tmp_path)
    release_record.keep(old, "grid-testbed-debian13", tmp_path)
    kept = release_record.load_all(tmp_path)
    assert [r["versions"]["condor"] for r in kept] == ["23.9.6", "25.14.1"]
    diffs = release_record.differences(kept)
    assert [d[0] for d in diffs] == ["UPDATE_INTERVAL"]          # NEGOTIATOR_INTERVAL: same default
    assert diffs[0][1] == ["300", None]
    text = site_sections.release_knobs_section(tmp_path)
    assert "`UPDATE_INTERVAL`" in text and "(none)" in text and "1 of" in text
    assert "pss.foo" in text
    assert "No release is kept yet" in site_sections.release_knobs_section(tmp_path / "none")


def test_one_kept_release_has_nothing_to_compare(tmp_path):
    release_record.keep({"versions": {"condor": "23.9.6"}, "defaults": {"A": "1"}}, "b", tmp_path)
    assert release_record.differences(release_record.load_all(tmp_path)) == []
    assert "nothing to compare" in site_sections.release_knobs_section(tmp_path)
    with pytest.raises(ValueError, match="no HTCondor version"):
        release_record.keep({"versions": {}}, "b", tmp_path)


def on_box(monkeypatch, name):
    """A site booted from box `name`, as release_record finds it."""
    monkeypatch.setattr(release_record.box_choice, "booted_box", lambda site: site.box)
    return SimpleNamespace(box=name)


def test_a_profile_knob_the_booted_release_does_not_know_is_refused(tmp_path, monkeypatch):
    from testbed.model import profiles, scaled_profiles
    from testbed.model.errors import ConfigError
    release_record.keep({"versions": {"condor": "23.9.6"}, "defaults": {"OLD_KNOB": "1", "MAX_CONCURRENT_DOWNLOADS": "10"}},
                        "box-23", tmp_path)
    release_record.keep({"versions": {"condor": "25.14.1"}, "defaults": {"OLD_KNOB": None, "MAX_CONCURRENT_DOWNLOADS": "10"}},
                        "box-25", tmp_path)
    prof = profiles.load("table4-default")
    assert "MAX_CONCURRENT_DOWNLOADS" in prof.section("submit", "condor")
    release_record.refuse_unknown_knobs([prof], on_box(monkeypatch, "box-25"), tmp_path)    # known to both: taken
    prof.roles["submit"]["condor"]["OLD_KNOB"] = 2
    release_record.refuse_unknown_knobs([prof], on_box(monkeypatch, "box-23"), tmp_path)    # 23.9.6 knows it
    release_record.refuse_unknown_knobs([prof], on_box(monkeypatch, "box-unkept"), tmp_path)  # nothing to judge by
    with pytest.raises(ConfigError, match=r"table4-default.yaml: roles.submit.condor.OLD_KNOB: unknown to "
                                          r"HTCondor 25.14.1, XRootD \? on box box-25 .*HTCondor 23.9.6"):
        release_record.refuse_unknown_knobs([prof], on_box(monkeypatch, "box-25"), tmp_path)
    scaled = scaled_profiles.AtRunTime("table4-default-scaled")   # named before its k: its base's knobs
    scaled.base.roles["submit"]["condor"]["OLD_KNOB"] = 2
    with pytest.raises(ConfigError, match="OLD_KNOB: unknown to HTCondor 25.14.1"):
        release_record.refuse_unknown_knobs([profiles.load("default"), scaled], on_box(monkeypatch, "box-25"),
                                            tmp_path)


def test_no_profile_of_the_project_sets_a_knob_a_kept_release_lacks(monkeypatch):
    from testbed.model import profiles
    on_box(monkeypatch, None)
    for record in release_record.load_all():
        for path in sorted(profiles.PROFILE_DIR.glob("*.yaml")):
            release_record.refuse_unknown_knobs([profiles.load(path.stem)], SimpleNamespace(box=record["box"]))
