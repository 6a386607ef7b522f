"""Pausing and pinning guests for a run, against a fake virsh and a fake SSH: what is paused
and pinned, in which order; that everything is undone on success, failure, Ctrl-C and
SIGTERM, with signals held while the guests are resumed; the record a run killed outright
leaves and the next run undoes; the resumed guests' answer and clock."""
import json
import os
import signal
import time
import types

import pytest

from testbed.machines import domains, quiesce
from testbed.model import topology
from testbed.model.errors import TestbedError
from testbed.model.state import TestbedState
from testbed.remote.site import Site
from testbed.remote.ssh import Result

NEW_STYLE = " VCPU   CPU Affinity\n----------------------\n 0      0-1\n 1      0-1\n\n"
OLD_STYLE = "VCPU: CPU Affinity\n----------------------------------\n   0: 0-1\n"
EMULATOR = " emulator: CPU Affinity\n----------------------------------\n       *: 0-1\n\n"


class FakeVirsh:
    """libvirt as virsh shows it: each domain running or paused, its vCPU and emulator pinning."""

    def __init__(self, topo, vcpus=1, fail=None, on=None):
        self.calls = []
        self.dom = {domains.domain_name(topo, h): {"state": "running", "vcpus": {str(i): "0-1" for i in range(vcpus)},
                                                   "emulator": "0-1"} for h in topo.hosts}
        self.fail = fail or {}   # (verb, domain) -> stderr
        self.on = on or {}       # verb -> callable(args), run before the verb

    def verbs(self, *names):
        return [(c[0], c[1]) if len(c) > 1 else (c[0],) for c in self.calls if c[0] in names]

    def __call__(self, *args, timeout=None):
        self.calls.append(args)
        verb, dom = args[0], args[1] if len(args) > 1 else None
        if verb in self.on:
            self.on[verb](args)
        if (verb, dom) in self.fail:
            return types.SimpleNamespace(stdout="", stderr=self.fail[(verb, dom)], returncode=1)
        d, out = self.dom.get(dom), ""
        if verb == "suspend":
            d["state"] = "paused"
        elif verb == "resume":
            if d["state"] != "paused":
                return types.SimpleNamespace(stdout="", stderr="error: domain is not paused", returncode=1)
            d["state"] = "running"
        elif verb == "domstate":
            out = d["state"] + "\n"
        elif verb == "vcpupin" and args[2] == "--live":
            out = " VCPU   CPU Affinity\n----------------------\n" + \
                  "".join(f" {v}      {c}\n" for v, c in sorted(d["vcpus"].items()))
        elif verb == "vcpupin":
            d["vcpus"][args[2]] = args[3]
        elif verb == "emulatorpin" and args[2] == "--live":
            out = f" emulator: CPU Affinity\n----------------------------------\n       *: {d['emulator']}\n"
        elif verb == "emulatorpin":
            d["emulator"] = args[2]
        return types.SimpleNamespace(stdout=out, stderr="", returncode=0)


class FakeSSH:
    """Guests that answer (unless listed in `silent`) and report their clock before a set."""

    def __init__(self, silent=()):
        self.ran, self.silent = [], set(silent)

    def run(self, host, command, check=True, input_bytes=None, timeout=None):
        self.ran.append((host, command))
        return Result(host, 255 if host in self.silent else 0, "", "no route" if host in self.silent else "")

    def run_many(self, commands, check=False, timeout=None):
        self.ran += list(commands.items())
        return {h: Result(h, 0, "was=1000.0\nok\n", "") for h in commands}


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setattr(quiesce, "ANSWER_POLL_S", 0.01)
    topo = topology.load("default")
    virsh = FakeVirsh(topo)
    monkeypatch.setattr(domains, "_virsh", virsh)
    return topo, virsh, FakeSSH(), TestbedState("default", root=tmp_path)


def quiet(site, pause=(), pin=None, **kw):
    topo, _virsh, ssh, state = site
    lines = kw.pop("lines", [])
    return quiesce.Quiesce(Site(topo, root=state.dir.parent), quiesce.Plan(pause=list(pause), pin=dict(pin or {})),
                           ssh=ssh, echo=lines.append, **kw)


def states(virsh):
    return {d.split("-", 2)[2]: v["state"] for d, v in virsh.dom.items()}


@pytest.mark.parametrize("text", [NEW_STYLE, OLD_STYLE])
def test_the_previous_pinning_is_read_from_either_virsh_layout(monkeypatch, text):
    out = {"vcpupin": text, "emulatorpin": EMULATOR}
    monkeypatch.setattr(domains, "_virsh", lambda *a, timeout=None: types.SimpleNamespace(
        stdout=out[a[0]], stderr="", returncode=0))
    got = quiesce.read_pinning("tb-small-submit")
    assert got["emulator"] == "0-1" and got["vcpus"]["0"] == "0-1"
    assert len(got["vcpus"]) == (2 if text is NEW_STYLE else 1)
    out["emulatorpin"] = "error-free but empty\n"
    with pytest.raises(TestbedError, match="printed no CPU list"):
        quiesce.read_pinning("tb-small-submit")


# --- the undo, however the block ends ----------------------------------------------------------
def test_pins_then_pauses_in_order_and_undoes_in_reverse_then_sets_the_resumed_clocks(site):
    topo, virsh, ssh, state = site
    lines = []
    with quiet(site, pause=["dtn", "origin"], pin={"submit": "0", "worker1": "1"}, lines=lines) as q:
        assert states(virsh)["dtn"] == states(virsh)["origin"] == "paused"
        assert virsh.dom["tb-default-submit"]["vcpus"] == {"0": "0"} and virsh.dom["tb-default-worker1"]["emulator"] == "1"
        rec = json.loads(state.quiet_record.read_text())
        assert rec["paused"] == ["dtn", "origin"] and rec["pinned"]["submit"]["emulator"] == "0-1"
        assert rec["pid"] == os.getpid() and quiesce.paused_now(state) == ["dtn", "origin"]   # `./tb status`
    assert virsh.verbs("suspend", "resume") == [("suspend", "tb-default-dtn"), ("suspend", "tb-default-origin"),
                                                ("resume", "tb-default-origin"), ("resume", "tb-default-dtn")]
    set_calls = [c for c in virsh.calls if c[0] in ("vcpupin", "emulatorpin", "suspend") and c[2:3] != ("--live",)]
    assert set_calls.index(("suspend", "tb-default-dtn")) > set_calls.index(("emulatorpin", "tb-default-worker1", "1", "--live"))
    assert all(v["state"] == "running" and v["vcpus"] == {"0": "0-1"} and v["emulator"] == "0-1"
               for v in virsh.dom.values())                                  # the previous pinning is back
    assert not state.quiet_record.exists() and quiesce.paused_now(state) == []
    answered = [h for h, cmd in ssh.ran if cmd == "true"]
    clocks = [h for h, cmd in ssh.ran if "date -u -s" in cmd]
    assert answered == ["origin", "dtn"] and sorted(clocks) == ["dtn", "origin"]   # resumed guests only
    assert q.outcome["resumed"] == ["origin", "dtn"] and q.outcome["unpinned"] == ["submit", "worker1"]
    assert q.outcome["clock_corrected_s"] is not None and q.outcome["problems"] == []
    assert q.changed["pinned"]["submit"] == {"cpus": "0", "previous": {"vcpus": {"0": "0-1"}, "emulator": "0-1"}}
    assert any("paused dtn, origin" in line for line in lines)


@pytest.mark.parametrize("error", [RuntimeError("a row failed"), KeyboardInterrupt()])
def test_a_failure_or_ctrl_c_in_the_run_still_resumes_and_unpins(site, error):
    topo, virsh, ssh, state = site
    with pytest.raises(type(error)):
        with quiet(site, pause=["dtn"], pin={"submit": "0"}):
            raise error
    assert all(v["state"] == "running" and v["emulator"] == "0-1" for v in virsh.dom.values())
    assert not state.quiet_record.exists()


def test_sigterm_in_the_run_raises_like_ctrl_c_and_its_handler_is_put_back(site):
    topo, virsh, ssh, state = site
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with quiet(site, pause=["dtn"]):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)     # the handler raises as soon as the signal is delivered
            raise AssertionError("SIGTERM did not interrupt the run")
    assert states(virsh)["dtn"] == "running"
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_ctrl_c_while_resuming_is_held_until_every_guest_is_back(site):
    topo, virsh, ssh, state = site
    sent = []
    # a terminal's Python starts with this handler; a pytest started in the background by a
    # shell without job control inherits SIGINT ignored, so set it here and put it back after
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)

    def ctrl_c_once(args):
        if not sent:
            sent.append(args)
            os.kill(os.getpid(), signal.SIGINT)
    virsh.on["resume"] = ctrl_c_once
    lines, hook = [], []
    with pytest.raises(KeyboardInterrupt):
        with quiet(site, pause=["dtn", "origin"], lines=lines, after_resume=hook.append):
            pass
    assert states(virsh)["dtn"] == states(virsh)["origin"] == "running"
    assert any("resuming the paused guests first" in line for line in lines)
    assert hook == [] and any("health is not checked" in line for line in lines)   # asked to stop
    assert [h for h, cmd in ssh.ran if "date -u -s" in cmd]                          # clocks set all the same
    try:
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # quiet put it back
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_the_third_signal_abandons_the_resume_and_the_next_run_finishes_it(site):
    topo, virsh, ssh, state = site
    virsh.on["resume"] = lambda args: [os.kill(os.getpid(), signal.SIGINT) for _ in range(3)]
    with pytest.raises(KeyboardInterrupt):
        with quiet(site, pause=["dtn", "origin"]):
            pass
    assert json.loads(state.quiet_record.read_text())["paused"]   # what is still paused is on record
    virsh.on.clear()
    rec = json.loads(state.quiet_record.read_text())
    state.quiet_record.write_text(json.dumps(rec | {"pid": 2 ** 22 + 12345}))   # that run has ended
    lines = []
    out = quiesce.undo_left(Site(topo, root=state.dir.parent), ssh=ssh, echo=lines.append)
    assert states(virsh)["dtn"] == states(virsh)["origin"] == "running" and not state.quiet_record.exists()
    assert out["resumed"] and "left" in lines[0]


def test_a_failed_pause_undoes_what_was_done_and_names_the_host(site):
    topo, virsh, ssh, state = site
    virsh.fail[("suspend", "tb-default-origin")] = "error: Failed to suspend domain"
    with pytest.raises(TestbedError, match="pausing origin: error: Failed to suspend"):
        with quiet(site, pause=["dtn", "origin"], pin={"submit": "0"}):
            raise AssertionError("the run must not start")
    assert all(v["state"] == "running" and v["emulator"] == "0-1" for v in virsh.dom.values())
    assert not state.quiet_record.exists()


def test_a_guest_that_does_not_resume_stays_on_record_with_how_to_undo_it(site):
    topo, virsh, ssh, state = site
    lines = []
    with quiet(site, pause=["dtn", "origin"], lines=lines) as q:
        virsh.fail[("resume", "tb-default-dtn")] = "error: internal error"
        virsh.fail[("domstate", "tb-default-dtn")] = "error"
    assert json.loads(state.quiet_record.read_text())["paused"] == ["dtn"]
    assert q.outcome["resumed"] == ["origin"]
    assert any("dtn is still paused" in line and "virsh -c qemu:///system resume tb-default-dtn" in line
               for line in lines)


def test_a_run_still_going_is_not_undone_by_another(site):
    topo, virsh, ssh, state = site
    state.quiet_record.parent.mkdir(parents=True, exist_ok=True)
    state.quiet_record.write_text(json.dumps({"pid": os.getppid(), "paused": ["dtn"], "pinned": {}}))
    with pytest.raises(TestbedError, match=r"pid \d+\) has paused dtn"):
        quiesce.undo_left(Site(topo, root=state.dir.parent), ssh=ssh)
    assert quiesce.undo_left(Site(types.SimpleNamespace(name="other"), root=state.dir.parent), ssh=ssh) is None


def test_a_resumed_guest_must_answer_before_its_clock_is_set(site):
    topo, virsh, ssh, state = site
    ssh.silent = {"dtn"}
    lines = []
    with quiet(site, pause=["dtn", "origin"], lines=lines, answer_timeout=0.05) as q:
        pass
    assert "dtn to answer after its resume" in " ".join(q.outcome["problems"])
    assert [h for h, cmd in ssh.ran if "date -u -s" in cmd] == ["origin"]
    assert list(q.outcome["answered_s"]) == ["origin"]


def test_after_resume_gets_the_resumed_hosts_and_its_failure_is_reported_not_raised(site):
    seen = []
    with quiet(site, pause=["dtn"], after_resume=lambda hosts: seen.append(hosts) or {"healthy_after_s": 3}) as q:
        pass
    assert seen == [["dtn"]] and q.outcome["after_resume"] == {"healthy_after_s": 3}

    def unhealthy(_hosts):
        raise TestbedError("site default not healthy after 600 s")
    with quiet(site, pause=["dtn"], after_resume=unhealthy) as q:
        pass
    assert q.outcome["problems"] == ["after resuming dtn: site default not healthy after 600 s"]


def test_an_empty_plan_touches_nothing(site):
    topo, virsh, ssh, state = site
    with quiet(site) as q:
        pass
    assert virsh.calls == [] and ssh.ran == [] and q.outcome == {}
