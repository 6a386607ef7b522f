"""A run's host noise: each experiment declares the roles it uses and measures; `testbed run`
pauses the guests it does not use (never the pool's, nor one the pool still contacts) and
pins the measured ones as its settings say, records both in the manifest, and leaves the
paused guests out of the suite's health checks, profile swaps and WAN settings; after the
run the resumed guests get the profile and WAN in force. Fake robot, virsh and SSH."""
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from testbed import PROJECT_ROOT
from testbed.cli import main as cli_main
from testbed.harness import quiet, registry, runner, session
from testbed.machines import domains, quiesce
from testbed.model import constants, profiles, topology
from testbed.model.errors import ConfigError, RemoteError
from testbed.model.state import TestbedState
from testbed.network import netem, wan
from testbed.remote import profile_record
from testbed.remote.site import Site
from testbed.remote.ssh import Result
from testbed.results import runs
from testbed.services import health, tuning
from testbed.services.condor import Pool
from tests.support import script_env
from tests.test_health import FakeSSH as HealthSSH
from tests.test_quiesce import FakeSSH, FakeVirsh
from tests.test_run_context import FakeRobot, library_as_robot_imports_it


# --- the registry's declarations ------------------------------------------------------------------
def test_every_experiment_declares_the_roles_it_uses_and_measures_by_the_topology_model():
    for name, exp in registry.experiments().items():
        assert exp.uses, f"{name} declares no uses"
        assert set(exp.uses) <= set(topology.ROLES) and set(exp.measured) <= set(exp.uses), name
    exps = registry.experiments()
    assert set(exps["smoke"].uses) == set(exps["faults"].uses) == set(topology.ROLES)
    # E1's jobs reach the workers only through CCB; the DTN and the origin take no part
    assert set(exps["e1"].uses) == {"submit", "cm", "ccb", "worker"} and exps["e1"].measured == ("submit", "worker")
    assert "origin" not in exps["e3"].uses and "dtn" in exps["e3"].uses and "dtn" in exps["e4"].uses


@pytest.mark.parametrize("topo_name", ["default", "small"])
def test_no_experiment_pauses_a_guest_of_the_pool_on_a_shipped_topology(topo_name):
    topo = topology.load(topo_name)
    for name, exp in registry.experiments().items():
        for host in quiet.hosts_to_pause(topo, exp.uses):
            roles = set(topo.hosts[host].roles)
            assert not roles & set(constants.POOL_ROLES) and not roles & set(exp.uses), (name, host)


# --- what is paused and pinned -------------------------------------------------------------------
def test_only_guests_outside_the_pool_whose_roles_the_experiment_does_not_use_are_paused():
    default, small = topology.load("default"), topology.load("small")
    e1 = ("submit", "cm", "ccb", "worker")
    assert quiet.hosts_to_pause(default, e1) == ["dtn", "origin"]
    assert quiet.hosts_to_pause(small, e1) == ["dtn"]              # small's submit host is also the origin
    assert quiet.hosts_to_pause(default, ("submit", "cm", "ccb", "worker", "dtn")) == ["origin"]
    # a declaration that leaves out the pool's roles still never pauses a CM, CCB, worker or submit host
    assert quiet.hosts_to_pause(default, ("dtn",)) == ["origin"]
    assert quiet.hosts_to_pause(default, topology.ROLES) == []


def test_the_measured_roles_get_host_cpus_of_their_own():
    default, small = topology.load("default"), topology.load("small")
    assert quiet.pin_plan(small, ("submit", "worker"), [0, 1]) == {"submit": "0", "worker1": "1"}
    assert quiet.pin_plan(default, ("submit", "worker"), [0, 1]) == {"submit": "0", "worker1": "1", "worker2": "1"}
    assert quiet.pin_plan(default, ("submit", "worker"), [0, 1, 2, 3]) == {"submit": "0-1", "worker1": "2-3",
                                                                           "worker2": "2-3"}
    assert quiet.pin_plan(default, ("submit", "worker"), [0, 1, 2]) == {"submit": "0-1", "worker1": "2",
                                                                        "worker2": "2"}
    assert quiet.pin_plan(default, ("cm", "submit", "dtn"), [0, 1]) == {"cm1": "0", "cm2": "0", "submit": "1",
                                                                        "dtn": "0"}
    assert quiet.pin_plan(default, ("submit", "worker"), [0]) == {}           # one CPU: nothing to set apart
    assert quiet.pin_plan(default, ("submit",), [0, 1]) == {}                 # one role: nothing to set apart
    assert quiet.pin_plan(small, ("submit", "origin", "worker"), [0, 1]) == {"submit": "0", "worker1": "1"}
    assert quiet.cpulist([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"


@pytest.mark.parametrize("uses, problem", [(None, "must declare uses"), (("submit", "gpu"), "not roles"),
                                           (("submit",), "measured")])
def test_a_declaration_without_uses_or_with_unknown_roles_is_refused(uses, problem):
    with pytest.raises(ValueError, match=problem):
        registry.Experiment(name="x", title="x", seed=None, suite="x.robot", scales={s: {} for s in registry.SCALES},
                            uses=uses, measured=("worker",) if problem == "measured" else ())


# --- settings and plan ------------------------------------------------------------------------------
def test_the_option_wins_over_the_topology_which_wins_over_the_scale():
    small = topology.load("small")
    assert quiet.settings("quick", small)["pause_unused"] is True
    assert quiet.settings("full", small)["pause_unused"] is True
    assert quiet.settings("ci", small)["pause_unused"] is False                    # what ./tb test runs
    assert quiet.settings("quick", small)["pin"] is False
    small.quiet = {"pause_unused": False, "pin": True}
    got = quiet.settings("quick", small)
    assert (got["pause_unused"], got["pin"], got["set_by"]["pin"]) == (False, True, "topology")
    got = quiet.settings("quick", small, pause_unused=True, pin=False)
    assert (got["pause_unused"], got["pin"], got["set_by"]) == (True, False, {"pause_unused": "option", "pin": "option"})


def test_the_topology_may_set_its_own_choice_and_a_bad_value_names_the_field(tmp_path):
    text = (PROJECT_ROOT / "topologies" / "small.yaml").read_text()
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(text + "quiet: {pin: true}\n")
    bad.write_text(text + "quiet: {pin: often}\n")
    assert topology.load(good).quiet == {"pin": True}
    with pytest.raises(ConfigError, match=r"bad.yaml: quiet.pin: must be true or false"):
        topology.load(bad)
    bad.write_text(text + "quiet: {pause: true}\n")
    with pytest.raises(ConfigError, match=r"quiet.pause: unknown key"):
        topology.load(bad)


class ContactsSSH(FakeSSH):
    """FakeSSH whose pool lists the ads and routed jobs given."""

    def __init__(self, status="", queue="", answers=True):
        super().__init__()
        self.status, self.queue, self.answers = status, queue, answers

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        if command == Pool.CONTACTS_SCRIPT:
            self.ran.append((host, "contacts"))
            if not self.answers:
                return Result(host, 1, "", "")
            return Result(host, 0, f"{self.status}\n#STATUS-OK#\n{self.queue}\n#QUEUE-OK#\n", "")
        return super().run(host, command, check, input_bytes, timeout)


def test_the_pool_says_which_hosts_it_would_still_contact():
    topo = topology.load("default")
    ssh = ContactsSSH(status="submit.default.testbed undefined\nworker1.default.testbed undefined\n"
                             "dtn.default.testbed dtn.default.testbed\n",
                      queue="undefined\ncondor dtn.default.testbed dtn:9618\n")
    got = Pool(topo, ssh).hosts_contacted()
    assert set(got) == {"submit", "worker1", "dtn"} and "collectors list an ad" in got["dtn"]
    ssh = ContactsSSH(queue="condor origin@default.testbed origin:9618")
    assert Pool(topo, ssh).hosts_contacted() == {"origin": "a queued job is routed to it (GridResource)"}
    with pytest.raises(RemoteError, match="contacts are unknown"):
        Pool(topo, ContactsSSH(answers=False)).hosts_contacted()


def test_a_guest_the_pool_still_contacts_keeps_running_and_so_do_all_when_it_cannot_be_asked():
    topo = topology.load("default")
    e1 = registry.get("e1")
    plan = quiet.plan(e1, topo, {"pause_unused": True, "pin": True}, cpus=[0, 1])
    assert plan.pause == ["dtn", "origin"] and plan.pin == {"submit": "0", "worker1": "1", "worker2": "1"}
    kept_plan, kept = quiet.keep_contacted(plan, Pool(topo, ContactsSSH(status="dtn.default.testbed x")))
    assert kept_plan.pause == ["origin"] and list(kept) == ["dtn"] and kept_plan.pin == plan.pin
    kept_plan, kept = quiet.keep_contacted(plan, Pool(topo, ContactsSSH(answers=False)))
    assert kept_plan.pause == [] and set(kept) == {"dtn", "origin"}
    assert quiet.plan(e1, topo, {"pause_unused": False, "pin": False}).empty


# --- the run ----------------------------------------------------------------------------------------
@pytest.fixture
def vm_site(tmp_path, monkeypatch):
    """The small site as a fake: robot, libvirt, SSH and health; state and results in tmp."""
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(runs, "RESULTS_ROOT", tmp_path / "results")
    monkeypatch.setattr(runner.accel, "detect", lambda: "tcg")
    monkeypatch.setattr(runner.disks, "describe", lambda topo: {})
    topo = topology.load("small")
    virsh, ssh = FakeVirsh(topo), ContactsSSH()
    monkeypatch.setattr(domains, "_virsh", virsh)
    monkeypatch.setattr(Site, "ssh", lambda *a, **k: ssh)
    monkeypatch.setattr(quiet, "host_cpus", lambda: [0, 1])
    monkeypatch.setattr(quiesce, "ANSWER_POLL_S", 0.01)
    healthy = []
    monkeypatch.setattr(quiet.health, "wait_healthy", lambda *a, **k: healthy.append(k) or {"healthy": True})
    seen = []

    class Robot(FakeRobot):
        def __init__(self, argv, cwd=None, **options):
            super().__init__(argv, cwd, **options)
            seen.append({d.split("-", 2)[2]: v["state"] for d, v in virsh.dom.items()})
    monkeypatch.setattr(runner, "subprocess", SimpleNamespace(Popen=Robot, DEVNULL=subprocess.DEVNULL,
                                                              TimeoutExpired=subprocess.TimeoutExpired))
    return SimpleNamespace(topo=topo, virsh=virsh, ssh=ssh, robot_saw=seen, healthy=healthy)


def test_a_quick_run_pauses_the_unused_guests_for_every_trial_and_records_it(vm_site):
    rc, run = runner.run(Site(vm_site.topo), "e1", ["default"], "quick", repeat=2, echo=lambda *_: None)
    assert rc == 0 and [s["dtn"] for s in vm_site.robot_saw] == ["paused", "paused"]
    assert all(v["state"] == "running" for v in vm_site.virsh.dom.values())       # and resumed after
    assert vm_site.virsh.verbs("suspend", "resume") == [("suspend", "tb-small-dtn"), ("resume", "tb-small-dtn")]
    q = run.manifest()["quiet"]
    assert q["pause_unused"] is True and q["set_by"]["pause_unused"] == "quick scale"
    assert q["paused"] == ["dtn"] and q["changed"]["paused"] == ["dtn"] and q["pin"] is False
    assert q["outcome"]["resumed"] == ["dtn"] and q["outcome"]["problems"] == []
    assert q["outcome"]["after_resume"]["healthy_after_s"] >= 0 and vm_site.healthy
    # the suite's library reads the paused hosts from the manifest and leaves them out
    lib = library_as_robot_imports_it(FakeRobot.argv)
    assert lib.context.paused == ["dtn"] and lib.site.paused == ("dtn",)


def test_a_ci_run_touches_no_guest_and_pinning_is_asked_for(vm_site):
    rc, run = runner.run(Site(vm_site.topo), "e1", ["default"], "ci", echo=lambda *_: None)
    q = run.manifest()["quiet"]
    assert vm_site.virsh.calls == [] and q["paused"] == [] and q["pause_unused"] is False
    rc, run = runner.run(Site(vm_site.topo), "e1", ["default"], "ci", pin=True, echo=lambda *_: None)
    q = run.manifest()["quiet"]
    assert q["pin_plan"] == {"submit": "0", "worker1": "1"} and q["paused"] == []
    assert q["changed"]["pinned"]["worker1"]["previous"] == {"vcpus": {"0": "0-1"}, "emulator": "0-1"}
    assert all(v["emulator"] == "0-1" for v in vm_site.virsh.dom.values())      # put back after the run


def test_a_scaled_profile_is_checked_against_the_booted_release_by_its_base(vm_site, monkeypatch):
    from testbed.results import release_record
    kept = release_record.load_all()[0]["box"]   # a box with a parameter table kept: knobs are judged
    monkeypatch.setattr(release_record.box_choice, "booted_box", lambda site: kept)
    checked = []
    real = release_record.load_all
    monkeypatch.setattr(release_record, "load_all", lambda root=None: checked.append("judged") or real(root))
    rc, run = runner.run(Site(vm_site.topo), "e1", ["table4-default", "table4-default-scaled"], "ci",
                         echo=lambda *_: None)
    assert rc == 0 and checked == ["judged"]        # the scaled one by its base: no AttributeError
    assert run.manifest()["profile_contents"]["table4-default-scaled"]["k"] is None


def test_an_interrupted_run_resumes_the_paused_guests(vm_site, monkeypatch):
    monkeypatch.setattr(runner, "supervise", lambda argv, ack, echo: (0, ["SIGINT"]))
    lines = []
    with pytest.raises(KeyboardInterrupt):
        runner.run(Site(vm_site.topo), "e1", ["default"], "quick", echo=lines.append)
    assert all(v["state"] == "running" for v in vm_site.virsh.dom.values())
    run = runs.resolve("latest-e1")
    assert run.manifest()["status"] == "interrupted" and run.manifest()["quiet"]["outcome"]["resumed"] == ["dtn"]


def test_a_run_whose_pause_fails_is_marked_failed_and_runs_no_trial(vm_site):
    vm_site.virsh.fail[("suspend", "tb-small-dtn")] = "error: cannot suspend"
    with pytest.raises(Exception, match="pausing dtn"):
        runner.run(Site(vm_site.topo), "e1", ["default"], "quick", echo=lambda *_: None)
    assert vm_site.robot_saw == [] and runs.resolve("latest-e1").manifest()["status"] == "failed"


def test_the_resumed_guests_get_the_profile_and_wan_put_in_force_while_they_were_paused(tmp_path, monkeypatch):
    topo, state = topology.load("default"), TestbedState("default", root=tmp_path)
    profile_record.record_profile(state, profiles.load("default"))
    at_pause = quiet.site_records(state)
    applied, tc = [], []
    monkeypatch.setattr(quiet.tuning, "apply", lambda *a, **k: applied.append((a[2].name, a[3].name, k["skip"])))
    monkeypatch.setattr(quiet.wan, "apply", lambda t, s, links, skip=(): tc.append((links, skip)))
    monkeypatch.setattr(quiet.health, "wait_healthy", lambda *a, **k: {})
    def after_resume(resumed):
        return quiet.reapply_after_resume(Site(topo, root=tmp_path), None, at_pause, resumed, echo=lambda *_: None)
    assert "profile_applied" not in after_resume(["dtn"]) and applied == []    # nothing changed meanwhile
    profile_record.record_profile(state, profiles.load("wan-tuned"))
    wan.record(state, [netem.Link(a="submit", b="worker", rtt_ms=80)])
    out = after_resume(["dtn", "origin"])
    assert out["profile_applied"] == "wan-tuned" and out["wan_applied"]
    name, previous, skip = applied[0]
    assert (name, previous) == ("wan-tuned", "default") and set(skip) == set(topo.hosts) - {"dtn", "origin"}
    assert tc[0][0] == [netem.Link(a="submit", b="worker", rtt_ms=80)] and "dtn" not in tc[0][1]


def test_a_scaled_profile_put_in_force_while_paused_reaches_the_resumed_guests(tmp_path, monkeypatch):
    from testbed.model import scaled_profiles
    topo, state = topology.load("default"), TestbedState("default", root=tmp_path)
    profile_record.record_profile(state, profiles.load("table4-default"))
    at_pause = quiet.site_records(state)
    applied = []
    monkeypatch.setattr(quiet.tuning, "apply", lambda *a, **k: applied.append((a[2], a[3].name)))
    monkeypatch.setattr(quiet.health, "wait_healthy", lambda *a, **k: {})
    made = scaled_profiles.scaled(profiles.load("table4-updated"), 0.0086)   # E1's, made at run time
    profile_record.record_profile(state, made)
    assert quiet.site_records(state)["profile"] == "table4-updated@k=0.0086"
    out = quiet.reapply_after_resume(Site(topo, root=tmp_path), None, at_pause, ["dtn"], echo=lambda *_: None)
    assert out["profile_applied"] == "table4-updated@k=0.0086"
    prof, previous = applied[0]
    assert prof.name == "table4-updated-scaled" and prof.roles == made.roles and previous == "table4-default"


# --- the suite leaves the paused guests alone --------------------------------------------------
def test_the_health_check_lists_a_paused_guest_and_probes_neither_it_nor_its_xrootd():
    topo = topology.load("small")
    ssh = HealthSSH(topo, broken=("dtn",))       # a paused guest answers nothing
    asked = []
    run_many = ssh.run_many
    ssh.run_many = lambda commands, **k: asked.append(set(commands)) or run_many(commands, **k)
    assert not health.collect(topo, ssh)["healthy"]
    report = health.collect(topo, ssh, skip=("dtn",))
    assert report["healthy"], report["problems"]
    assert "dtn" not in asked[-1] and report["hosts"]["dtn"]["paused"]
    assert set(report["xrootd"]) == {"origin"} and "paused" in health.format_report(report)
    from testbed.experiments.e5 import e5_scale  # E5's own pool check, for its run's startds
    assert e5_scale.wait_healthy(topo, ssh, 1, echo=lambda *_: None, skip=("dtn",))[0]


def test_profile_swaps_and_wan_settings_leave_the_paused_guests_alone():
    from tests.test_tuning import ReadbackSSH
    from tests.test_wan_topology_links import RecordingSSH
    topo, prof = topology.load("small"), profiles.load("wan-tuned")
    ssh = ReadbackSSH(topo, lambda h, s, k: tuning.expected_values(topo, prof, topo.hosts[h])[(s, k)])
    sent = []
    run_many = ssh.run_many
    ssh.run_many = lambda commands, **k: sent.append(set(commands)) or run_many(commands, **k)
    out = tuning.apply(topo, ssh, prof, echo=lambda *_: None, skip=("dtn",))
    assert all("dtn" not in hosts for hosts in sent) and "dtn" not in out["readback"]
    rec = RecordingSSH()
    wan.apply(topo, rec, wan.effective_links(topo, [netem.Link("submit", "worker", 80.0)]), skip=("dtn",))
    assert "dtn" not in rec.scripts and "netem delay 40ms" in rec.scripts["worker1"]


def test_the_session_passes_its_paused_hosts_on(monkeypatch):
    topo = topology.load("small")
    calls = {}
    monkeypatch.setattr(session.health, "wait_healthy", lambda *a, **k: calls.setdefault("health", k["skip"]))
    monkeypatch.setattr(session.wan, "clear", lambda *a, **k: calls.setdefault("wan", k["skip"]))
    site = session.Session(topo, ssh=SimpleNamespace(), paused=["dtn"])
    site.wait_healthy(10, echo=print)
    site.clear_wan()
    assert calls == {"health": ("dtn",), "wan": ("dtn",)}
    monkeypatch.setattr(session.health, "guest_versions", lambda ssh, host: {"probed": host})
    monkeypatch.setattr(session.runs, "host_facts", lambda: {"qemu": "9"})
    assert site.guest_versions()["probed"] == "submit"                # the DTN is paused
    assert session.Session(topo, ssh=SimpleNamespace()).guest_versions()["probed"] == "dtn"


# --- the command line and the benchmark ------------------------------------------------------
def cli_run_on(vm_site, monkeypatch, capsys, argv=()):
    """`testbed -t small run e1 --scale quick` on the fake site: (rc, the run, stdout)."""
    from testbed.cli import experiment_commands
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: Site(vm_site.topo))
    monkeypatch.setattr(runner, "sized_for_site", lambda exp, scale, topo, accelerator, sets, **k: sets)
    rc = cli_main(["-t", "small", "run", "e1", "--scale", "quick", *argv])
    return rc, runs.resolve("latest-e1"), capsys.readouterr().out


def test_testbed_run_writes_the_runs_report_after_printing_its_comparison(vm_site, monkeypatch, capsys):
    rc, run, out = cli_run_on(vm_site, monkeypatch, capsys)
    assert rc == 0 and run.manifest()["status"] == "complete" and (run.path / runner.REPORT).is_file()
    said = out.splitlines()
    done = next(i for i, line in enumerate(said) if line.startswith(f"run {run.label}: complete"))
    assert said[-1] == f"report: {run.path / runner.REPORT} (0 plots)" and done < len(said) - 2


def test_an_interrupted_testbed_run_writes_its_report_then_says_it_was_interrupted(vm_site, monkeypatch, capsys):
    monkeypatch.setattr(runner, "supervise", lambda argv, ack, echo: (0, ["SIGTERM"]))
    rc, run, out = cli_run_on(vm_site, monkeypatch, capsys)
    assert rc == 130 and run.manifest()["status"] == "interrupted" and (run.path / runner.REPORT).is_file()
    said = out.splitlines()
    assert said[-2].startswith("report: ") and said[-1].startswith(f"run {run.label}: interrupted (SIGTERM)")
    assert run.manifest()["quiet"]["outcome"]["resumed"] == ["dtn"]


def test_a_run_stopped_outside_robot_is_marked_interrupted_with_its_guests_resumed(vm_site, monkeypatch):
    def stopped(argv, ack, echo):
        raise KeyboardInterrupt   # a signal the runner's own handler did not see through robot
    monkeypatch.setattr(runner, "supervise", stopped)
    with pytest.raises(KeyboardInterrupt):
        runner.run(Site(vm_site.topo), "e1", ["default"], "quick", repeat=2, echo=lambda *_: None)
    m = runs.resolve("latest-e1").manifest()
    assert m["status"] == "interrupted" and m["end"] and m["quiet"]["outcome"]["resumed"] == ["dtn"]


def test_a_resume_that_fails_after_the_trials_leaves_their_status_and_is_recorded(vm_site):
    vm_site.virsh.fail[("resume", "tb-small-dtn")] = "error: cannot resume"
    rc, run = runner.run(Site(vm_site.topo), "e1", ["default"], "quick", repeat=2, echo=lambda *_: None)
    m = run.manifest()
    assert rc == 0 and len(vm_site.robot_saw) == 2 and m["status"] == "complete"
    assert any("cannot resume" in p for p in m["quiet"]["outcome"]["problems"])


def test_run_options_reach_the_runner(monkeypatch):
    from testbed.cli import experiment_commands
    seen = []
    monkeypatch.setattr(experiment_commands, "_site", lambda args, change=None, running=True: Site(topology.load("small")))
    monkeypatch.setattr(runner, "sized_for_site", lambda exp, scale, topo, accelerator, sets, **k: sets)
    monkeypatch.setattr(experiment_commands, "_print_comparison", lambda *a, **k: None)
    monkeypatch.setattr(runner, "run_checked", lambda *a, **k: seen.append((k["pause_unused"], k["pin"],
                                                                            k["from_snapshot"])) or
                        (0, SimpleNamespace(path=PROJECT_ROOT / "nowhere")))
    for argv, want in (([], (None, None, None)), (["--pause-unused", "--pin"], (True, True, None)),
                       (["--no-pause-unused", "--no-pin"], (False, False, None)),
                       (["--from-snapshot", "clean"], (None, None, "clean"))):
        assert cli_main(["-t", "small", "run", "e1", "--scale", "ci"] + argv) == 0
        assert seen[-1] == want


def test_a_run_from_a_snapshot_reverts_the_site_before_it_looks_at_its_guests(monkeypatch, tmp_path):
    events = []
    monkeypatch.setattr(runner.snapshots, "restore", lambda site, name, ssh, health: events.append(("restore", name)))
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: events.append(("dead?",)) or {"submit": "Oops"})
    with pytest.raises(runner.TestbedError, match="the kernel of submit"):
        runner.run_checked(Site(topology.load("small"), root=tmp_path), registry.get("e1"), "ci", {},
                           from_snapshot="clean")
    assert events == [("restore", "clean"), ("dead?",)]


def test_a_run_under_tcg_sizes_e1s_saturation_for_the_submit_host_unless_the_user_set_it(monkeypatch, capsys,
                                                                                         tmp_path):
    """`testbed run`, `testbed test` and the demo size a run in the runner, the one place."""
    from testbed.machines import plan
    default = topology.load("default")
    seen, accel = [], {"now": "tcg"}
    monkeypatch.setattr(plan, "recorded_accel", lambda state: accel["now"])
    monkeypatch.setattr(runner.console, "dead_guests", lambda topo: {})             # not this host's consoles
    monkeypatch.setattr(runner.repair_record, "refusal", lambda topo, state: "")
    real = runner.sized_for_site

    class Sized(Exception):
        pass

    def sized(*a, **k):   # the sets the run goes on with; nothing after them is this test's
        seen.append(real(*a, **k))
        raise Sized
    monkeypatch.setattr(runner, "sized_for_site", sized)

    def run(sets):
        with pytest.raises(Sized):
            runner.run_checked(Site(default, root=tmp_path), registry.get("e1"), "quick", sets)
        return seen[-1]
    cpus = default.role_host("submit").cpus
    sets = run({"rtts": "0,80"})
    assert sets["saturation_jobs"] == 8 * cpus and "rtts" in sets
    assert "quick scale (TCG, " in capsys.readouterr().out
    assert str(run({"saturation_jobs": "16"})["saturation_jobs"]) == "16"   # the user's value stands
    accel["now"] = "kvm"
    assert "saturation_jobs" not in run({})                                  # KVM runs the scale as it is


def fake_e1_run(root, values, quiet_entry, jobs=8):
    run = runs.Run.create("e1", ["default"], topology={"name": "small"}, profile_contents={}, accel="tcg",
                          root=root, experiment_parameters={"sweep_jobs": jobs})
    run.update(selection=["--test", "rtt80-2W-default"], quiet=quiet_entry, trials=len(values))
    for trial, value in enumerate(values, 1):
        runs.Run(run.path, trial=trial).record("e1.efficiency_lost", value, "ratio", rtt_ms=80.0, rate="2W",
                                               profile="default")
        runs.Run(run.path, trial=trial).record("e1.efficiency_lost", 9.0, "ratio", rtt_ms=0.0, rate="2W",
                                               profile="default")
    return run


def test_the_noise_benchmark_prints_each_arms_cv_and_their_ratio(tmp_path):
    loud = fake_e1_run(tmp_path / "a", [0.4, 0.6, 0.5, 0.3, 0.7], {"paused": [], "pin_plan": {}})
    calm = fake_e1_run(tmp_path / "b", [0.50, 0.52, 0.48, 0.51, 0.49],
                       {"paused": ["dtn"], "pin_plan": {"submit": "0", "worker1": "1"}}, jobs=16)
    out = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "e1_noise.py"), "--from",
                          str(loud.path), str(calm.path)], capture_output=True, text=True, env=script_env())
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line.startswith(("without", "with "))}
    # jobs/point, trials, mean, sd, CV with its standard error (McKay: cv / sqrt(8) x sqrt(1 + 2 cv^2))
    assert re.search(r"\s8\s+5\s+0\.500\s+0\.158\s+31\.6% ± 12\.2%", rows["without"])
    assert re.search(r"\s16\s+5\s+0\.500\s+0\.016\s+3\.2% ± 1\.1%\s+paused dtn; pinned submit:0, worker1:1",
                     rows["with"])
    assert "CV with / without: 0.10" in out.stdout
    assert "goal CV <= 10% with pausing and pinning: met (3.2% ± 1.1%)" in out.stdout
    one = fake_e1_run(tmp_path / "c", [0.5], {})
    out = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "e1_noise.py"), "--from",
                          str(loud.path), str(one.path)], capture_output=True, text=True, env=script_env())
    assert out.returncode == 1 and "fewer than two trials" in out.stdout


def test_the_noise_benchmark_sizes_its_arms_as_testbed_run_does():
    """Both arms get the point's RTT and rate and, under TCG, the saturation jobs the CLI's
    `testbed run` would size for the submit host (8 per emulated CPU), not the scale's 32."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("e1_noise", PROJECT_ROOT / "benchmarks" / "e1_noise.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    topo = topology.load("default")
    said = []
    sets = bench.arm_sets(topo, "rtt80-2W-table4-default", "quick", "tcg", echo=said.append)
    assert sets == {"saturation_jobs": 8, "rtts": "80", "rate_factors": "2"}
    assert len(said) == 1 and said[0].startswith("quick scale (TCG, ") and "32 -> 8" in said[0]
    said.clear()
    sets = bench.arm_sets(topo, "rtt80-2W-table4-default", "quick", "kvm", echo=said.append)
    assert sets == {"rtts": "80", "rate_factors": "2"} and said == []
    # --set reaches both arms; a saturation_jobs given is the user's, not the site's sizing
    sets = bench.arm_sets(topo, "rtt80-2W-table4-default", "quick", "tcg",
                          {"sweep_jobs": "16", "saturation_jobs": "4"}, echo=said.append)
    assert sets == {"sweep_jobs": "16", "saturation_jobs": "4", "rtts": "80", "rate_factors": "2"} and said == []
    with pytest.raises(ConfigError, match="rtts comes from --test rtt80-2W-table4-default"):
        bench.arm_sets(topo, "rtt80-2W-table4-default", "quick", "tcg", {"rtts": "0"})
