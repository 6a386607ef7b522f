"""One run context: `testbed run` resolves the topology *by file*, the typed `--set`
parameters and the profiles once, writes them into the manifest, and the Robot library
reads them from there; the runner alone closes the manifest and writes one report."""
import itertools
import re
import subprocess
from types import SimpleNamespace

import pytest
from robot.utils import Importer

from testbed import PROJECT_ROOT
from testbed.harness import registry, runner
from testbed.model import topology
from testbed.model.errors import ConfigError
from testbed.model.schema import load_yaml
from testbed.remote.site import Site
from testbed.results import runs

RESOURCE = PROJECT_ROOT / "robot" / "resources" / "experiment.resource"


def elsewhere_topology(tmp_path):
    """topologies/small.yaml copied to <tmp>/sites/mine.yaml under another `name:`."""
    text = (PROJECT_ROOT / "topologies" / "small.yaml").read_text()
    path = tmp_path / "sites" / "mine.yaml"
    path.parent.mkdir()
    path.write_text(re.sub(r"^name: small$", "name: elsewhere", text, flags=re.M))
    return path


class FakeRobot:
    """subprocess.Popen for the runner: records robot's argv, 'runs' at once with rc 0."""
    argv = None

    def __init__(self, argv, cwd=None, **_popen_options):
        FakeRobot.argv = argv
        self.pid = 0

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


def library_as_robot_imports_it(argv):
    """TestbedLibrary built the way Robot builds it from experiment.resource's Library line:
    its arguments' ${VARS} from robot's --variable options, else the resource's defaults."""
    text = RESOURCE.read_text()
    defaults = dict(re.findall(r"^\$\{(\w+)\}\s+(.*?)\s*$", text, flags=re.M))
    given = dict(argv[i + 1].split(":", 1) for i, a in enumerate(argv) if a == "--variable")
    values = {k: ("" if v == "${EMPTY}" else v) for k, v in defaults.items()} | given
    line = next(line for line in text.splitlines() if "TestbedLibrary.py" in line)
    args = [re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], a) for a in re.split(r"\s{2,}", line.strip())[2:]]
    cls = Importer("test library").import_class_or_module_by_path(str(PROJECT_ROOT / "robot" / "libraries" /
                                                                      "TestbedLibrary.py"))
    return cls(*args)


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "RESULTS_ROOT", tmp_path / "results")
    monkeypatch.setattr(runner.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(runner.disks, "describe", lambda topo: {})
    monkeypatch.setattr(runner, "subprocess", SimpleNamespace(Popen=FakeRobot, DEVNULL=subprocess.DEVNULL,
                                                              TimeoutExpired=subprocess.TimeoutExpired))
    return tmp_path


def test_run_with_a_topology_file_elsewhere_drives_the_suite_against_that_file(fake_site, monkeypatch):
    path = elsewhere_topology(fake_site)
    monkeypatch.chdir(fake_site)                      # `testbed -t sites/mine.yaml run ...`
    topo = topology.load("sites/mine.yaml")
    assert topo.name == "elsewhere"                   # no topologies/elsewhere.yaml exists
    rc, run = runner.run(Site(topo), "e1", ["default"], "ci", ["rtts=0,20"], echo=lambda *_: None)
    assert rc == 0
    monkeypatch.chdir(PROJECT_ROOT)                   # robot runs in the project root
    lib = library_as_robot_imports_it(FakeRobot.argv)
    assert lib.site.topo.source.resolve() == path.resolve() and lib.site.topo.name == "elsewhere"
    assert lib.experiment_parameters("e1")["rtts"] == [0, 20]
    assert lib.profiles_to_compare() == ["default"]


def test_the_manifest_holds_the_resolved_context_and_the_runner_writes_one_report(fake_site):
    path = elsewhere_topology(fake_site)
    rc, run = runner.run(Site(topology.load(path)), "e1", ["default"], "ci", {"rtts": "0,20"},
                         echo=lambda *_: None)
    m = run.manifest()
    assert m["topology"]["file"] == str(path.resolve()) and m["topology"]["name"] == "elsewhere"
    assert m["topology"] == load_yaml(path) | {"file": str(path.resolve()), "box": "debian13"}  # the file as given
    assert m["parameters"] == {"rtts": [0, 20]} and m["experiment_parameters"]["rtts"] == [0, 20]
    assert m["scale"] == "ci" and m["profiles"] == ["default"] and m["status"] == "complete"
    assert (run.path / "summary.html").exists()
    assert not (run.path / "figures.html").exists() and not (run.path / "comparison.html").exists()
    argv = " ".join(FakeRobot.argv)
    assert "TOPOLOGY:" not in argv and "RTTS:" not in argv and f"RESULTS_DIR:{run.path}" in argv


def test_the_library_leaves_a_runners_manifest_to_the_runner(fake_site):
    rc, run = runner.run(Site(topology.load(elsewhere_topology(fake_site))), "smoke", ["default"], "ci", {},
                         echo=lambda *_: None)
    run.update(status="running")
    lib = library_as_robot_imports_it(FakeRobot.argv)
    lib.site.run = runs.Run(run.path)
    lib.finish_experiment()
    assert run.manifest()["status"] == "running"


def test_the_vagrantfile_reads_the_plan_of_the_topology_file(tmp_path):
    from testbed.machines import lifecycle
    topo = topology.load(elsewhere_topology(tmp_path))
    env = lifecycle.vagrant_env(topo)
    assert env["TESTBED_TOPOLOGY"] == "elsewhere" and env["TESTBED_TOPOLOGY_FILE"] == str(topo.source.resolve())
    text = (PROJECT_ROOT / "Vagrantfile").read_text()
    assert "TESTBED_TOPOLOGY_FILE" in text
    ruby = subprocess.run(["which", "ruby"], capture_output=True).returncode == 0
    if ruby:
        assert subprocess.run(["ruby", "-c", str(PROJECT_ROOT / "Vagrantfile")], capture_output=True).returncode == 0


ADAPTERS = sorted(p.stem for p in (PROJECT_ROOT / "robot" / "libraries").glob("*.py")) + \
    ["../listeners/Interrupted", "../listeners/Progress"]


# A Robot library is keywords over the experiments, the gateway to HTCondor and XRootD
# (services), the emulated WAN (network), the model and the records; the site's machines,
# SSH and the CLI stay behind them.
ROBOT_MAY_IMPORT = {"experiments", "harness", "services", "network", "results", "model"}


@pytest.mark.parametrize("name", ADAPTERS)
def test_robot_libraries_import_the_experiments_gateway_model_and_records_only(name):
    import ast
    tree = ast.parse((PROJECT_ROOT / "robot" / "libraries" / f"{name}.py").read_text())
    layers = {node.module.split(".")[1] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("testbed.")}
    layers |= {alias.name.split(".")[1] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name.startswith("testbed.")}
    assert layers <= ROBOT_MAY_IMPORT, f"{name} imports testbed.{sorted(layers - ROBOT_MAY_IMPORT)}"


def test_plain_robot_opens_closes_and_reports_its_own_run(fake_site, monkeypatch):
    lib = library_as_robot_imports_it([])             # no RESULTS_DIR: the resource's TOPOLOGY (small)
    assert lib.context is None and lib.site.topo.name == "small"
    monkeypatch.setattr(lib.site, "guest_versions", lambda: {"condor": "23.9"})
    path = lib.start_experiment("smoke")
    lib.record_metric("wan.rtt_measured", "0.5", "ms", link="a-b", rtt_ms="20")
    lib.finish_experiment()
    run = runs.Run(path)
    m = run.manifest()
    assert m["status"] == "complete" and m["versions"] == {"condor": "23.9"} and m["suite"] == "smoke"
    assert m["topology"]["file"] == str((PROJECT_ROOT / "topologies" / "small.yaml").resolve())
    assert run.metrics()[0]["params"] == {"link": "a-b", "rtt_ms": 20}
    assert (run.path / "summary.html").exists()


def test_the_runs_report_is_not_a_file_robot_writes_in_the_same_folder():
    from testbed.harness import runner
    assert runner.REPORT not in {"report.html", "log.html", "output.xml"}


def test_a_repeated_run_runs_the_suite_once_per_trial_into_one_folder(fake_site, monkeypatch):
    seen = []

    class Robot(FakeRobot):
        rcs = itertools.chain([0, 1, 0], itertools.repeat(0))

        def __init__(self, argv, cwd=None, **options):
            super().__init__(argv, cwd, **options)
            seen.append(argv)
            self.rc = next(Robot.rcs)

        def wait(self, timeout=None):
            return self.rc

        def poll(self):
            return self.rc
    monkeypatch.setattr(runner, "subprocess", SimpleNamespace(Popen=Robot, DEVNULL=subprocess.DEVNULL,
                                                              TimeoutExpired=subprocess.TimeoutExpired))
    topo = topology.load("small")
    rc, run = runner.run(Site(topo), "smoke", ["default"], "quick", echo=lambda *_: None)
    assert rc == 1 and len(seen) == 3                      # quick: 3 trials; the failed one decides
    outputs = [a[a.index("--output") + 1] for a in seen]
    assert outputs == ["output-trial1.xml", "output-trial2.xml", "output-trial3.xml"]
    m = run.manifest()
    assert (m["trials"], m["trial"], m["status"]) == (3, 3, "failed")
    seen.clear()
    rc, run = runner.run(Site(topo), "smoke", ["default"], "ci", echo=lambda *_: None)
    assert len(seen) == 1 and "--output" not in seen[0]   # ci: one trial, robot's own file names


@pytest.mark.parametrize("bad", [0, -2, True, "3"])
def test_a_repeat_that_is_not_a_whole_number_from_1_is_refused(bad):
    with pytest.raises(ConfigError, match="--repeat"):
        runner.trials_for(registry.get("e1"), "quick", bad)


@pytest.mark.parametrize("suite_status, status", [("PASS", "complete"), ("SKIP", "complete"), ("FAIL", "failed")])
def test_plain_robot_counts_a_skipped_suite_as_complete(fake_site, monkeypatch, suite_status, status):
    """A suite whose rows were all SKIP (not points of the scale, or a known upstream defect)
    did not fail: the manifest says complete, as `testbed run` says for robot's exit status 0."""
    import sys
    lib = library_as_robot_imports_it([])
    monkeypatch.setattr(lib.site, "guest_versions", lambda: {"condor": "23.9"})
    monkeypatch.setattr(sys.modules[type(lib).__module__], "_var",
                        lambda name, default=None: suite_status if name == "SUITE_STATUS" else default)
    path = lib.start_experiment("smoke")
    lib.finish_experiment()
    assert runs.Run(path).manifest()["status"] == status


def test_a_run_names_the_scaled_columns_whose_k_its_saturation_test_gives(fake_site):
    rc, run = runner.run(Site(topology.load("small")), "e1", ["table4-default", "table4-default-scaled"], "ci", {},
                         echo=lambda *_: None)
    m = run.manifest()
    assert m["profiles"] == ["table4-default", "table4-default-scaled"]
    pending = m["profile_contents"]["table4-default-scaled"]
    assert pending["k"] is None and pending["scaled_from"] == "table4-default"
    assert pending["base"]["roles"] == m["profile_contents"]["table4-default"]["roles"]
    lib = library_as_robot_imports_it(FakeRobot.argv)
    assert lib.profiles_to_compare() == ["table4-default", "table4-default-scaled"]
    with pytest.raises(ConfigError, match="has rows for profiles"):
        runner.run(Site(topology.load("small")), "e1", ["wan-tuned-scaled"], "ci", {}, echo=lambda *_: None)
