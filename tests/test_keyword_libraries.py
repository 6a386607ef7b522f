"""The shared keyword libraries, one per area (robot/libraries/): TestbedLibrary keeps the
run and the suite's session, the area libraries reach that session, and experiment.resource
imports every one of them, so a suite finds each shared keyword by the name it always had."""
import re
from collections import defaultdict
from types import SimpleNamespace

import pytest
from robot.libdoc import LibraryDocumentation
from robot.utils import Importer, normalize

from testbed import PROJECT_ROOT
from testbed.harness import session

LIBRARIES = PROJECT_ROOT / "robot" / "libraries"
RESOURCE = PROJECT_ROOT / "robot" / "resources" / "experiment.resource"

# library: {keyword: its arguments, as libdoc prints them}
SHARED = {
    "TestbedLibrary": {
        "Start Experiment": "suite", "Finish Experiment": "", "Restore Step": "name, *args",
        "Record Metric": "name, value, unit=, **params",
        "Record Metric Series": "name, unit, series, column=1, **params",
        "Recorded Values": "name, **params", "Paper Claim Should Hold": "claim_id",
        "Experiment Parameters": "name", "Skip Unless In This Run": "params, **point",
        "Profiles To Compare": "", "Site Should Be Healthy": "timeout=600",
        "Run On Host": "host, command, timeout=600"},
    "TuningLibrary": {
        "Apply Profile": "name", "Apply Profile If Needed": "name", "Restore The Default Profile": "",
        "Profile Should Be In Force": "name"},
    "NetworkLibrary": {
        "Set WAN Latency": "a, b, rtt_ms", "Set WAN Latency If Needed": "a, b, rtt_ms",
        "Measured RTT Should Match": "configured, measured, base=0.0", "Measure RTT": "a, b", "Clear WAN": ""},
    "CondorLibrary": {
        "Clear Job Queue": "", "Submit Sleep Jobs": "count=1, seconds=5, requirements=None",
        "Wait For Jobs": "cluster, count=1, timeout=600", "Collect Job Transfer Metrics": "cluster",
        "Jobs Should Have Run On Role": "cluster, role", "Startds Should Be Reached Through CCB": "",
        "Active Central Manager": "", "Other Central Manager": "host", "Kill Central Manager": "host",
        "Restart Central Manager": "host", "Negotiator Should Move To": "host, timeout=300"},
    "StorageLibrary": {
        "RAID Should Be": "level, members", "Planned RAID Members": "",
        "Read Through Caching Proxy And Check": "filename"},
}


def keywords(name):
    """{normalized keyword name: arguments} of a library, read by path as Robot reads it."""
    return {normalize(k.name, ignore="_"): str(k.args)
            for k in LibraryDocumentation(str(LIBRARIES / f"{name}.py")).keywords}


@pytest.mark.parametrize("name", list(SHARED))
def test_each_shared_library_has_its_areas_keywords_with_their_arguments(name):
    assert keywords(name) == {normalize(k, ignore="_"): args for k, args in SHARED[name].items()}


def test_the_experiment_resource_imports_every_shared_library():
    imported = re.findall(r"^Library\s+\.\./libraries/(\w+)\.py", RESOURCE.read_text(), flags=re.M)
    assert sorted(imported) == sorted(SHARED)


def test_no_keyword_name_is_defined_in_two_libraries():
    """Robot refuses a name two imported libraries define; `Measure Point` is the one every
    experiment library has from its base, and a suite imports one library that keeps it."""
    defined = defaultdict(list)
    for path in sorted(LIBRARIES.glob("[!_]*.py")):
        for kw in keywords(path.stem):
            defined[kw].append(path.stem)
    twice = {kw: libs for kw, libs in defined.items() if len(libs) > 1 and kw != "measurepoint"}
    assert not twice, f"keywords defined in more than one library: {twice}"


def load(name):
    """A library class imported by path, as Robot imports it (its folder on sys.path meanwhile)."""
    return Importer("test library").import_class_or_module_by_path(str(LIBRARIES / f"{name}.py"))


def test_testbed_library_hands_on_none_of_its_sessions_parts():
    forwarded = [n for n in ("topo", "state", "ssh", "pool", "storage", "run", "profile_in_force", "wan_in_force",
                             "profile_name") if hasattr(load("TestbedLibrary"), n)]
    assert not forwarded, f"TestbedLibrary hands on its session's {forwarded}: callers use `site`"


def test_the_area_libraries_reach_the_suites_session(monkeypatch):
    areas = [load(name) for name in SHARED if name != "TestbedLibrary"]
    import _site_library
    site = session.Session.__new__(session.Session)

    class FakeBuiltIn:
        def get_library_instance(self, name):
            assert name == "TestbedLibrary"
            return SimpleNamespace(site=site)
    monkeypatch.setattr(_site_library, "BuiltIn", FakeBuiltIn)
    for cls in areas:
        assert issubclass(cls, _site_library.SiteLibrary)
        assert cls.ROBOT_LIBRARY_SCOPE == "SUITE" and cls.ROBOT_AUTO_KEYWORDS is False
        assert cls().site is site
