"""Less noise from the host during a run: pause (libvirt suspend) the guests the run does not
use, pin the measured guests' vCPU and emulator threads to host CPUs of their own, and undo
both whatever happens - success, failure, Ctrl-C, SIGTERM.

`Plan` says what to do: the hosts to pause, in order, and the host CPUs of each guest to pin
(which ones a run chooses is harness/quiet.py's). `Quiesce` is the context manager that does
it. Before each change it writes what it is changing - the guests it pauses, each pinned
guest's previous pinning - to the testbed's state folder, so that a run killed outright is
undone by the next one (`undo_left`). On the way out it resumes the
guests (the last paused first) and puts the previous pinning back with Ctrl-C and SIGTERM
held off (the third signal abandons, leaving the record); then it waits until each resumed
guest answers over SSH and sets its clock from the host's: the guests run no time sync and
a paused guest's clock stood still (constants.MAX_TIME_SKIP_S keeps its condor_master from
restarting the daemons at the step; `virsh domtime --sync` would need a guest agent the box
does not have). The caller's `after_resume(resumed hosts)` runs last: the site's health
lives in a layer above this one.
"""
import json
import os
import re
import signal
import threading
from dataclasses import dataclass, field

from testbed.machines import domains, snapshots
from testbed.model import constants as c
from testbed.model.errors import TestbedError
from testbed.model.state import write_json
from testbed.remote.poll import wait_for

VIRSH_TIMEOUT_S = 60
ANSWER_POLL_S = 2   # seconds between the SSH probes of a resumed guest
ABANDON_AFTER = 3   # the third signal while the guests are resumed and unpinned abandons that
VCPU_LINE = re.compile(r"^\s*(\d+)\s*:?\s+([0-9][0-9,^-]*)\s*$")    # `virsh vcpupin DOM`: " 0      0-1"
EMULATOR_LINE = re.compile(r"^\s*\*\s*:\s*([0-9][0-9,^-]*)\s*$")   # `virsh emulatorpin DOM`: "  *: 0-1"
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _virsh(*args):
    return domains._virsh(*args, timeout=VIRSH_TIMEOUT_S)


def _checked(res, what):
    if res.returncode != 0:
        detail = (res.stderr or res.stdout or "").strip().splitlines()
        raise TestbedError(f"{what}: {detail[-1] if detail else f'virsh exit {res.returncode}'}")
    return res.stdout


def read_pinning(domain):
    """{'vcpus': {'0': '0-1', ...}, 'emulator': '0-1'}: the running domain's pinning."""
    vcpus = {m.group(1): m.group(2) for line in
             _checked(_virsh("vcpupin", domain, "--live"), f"{domain}: vcpupin").splitlines()
             if (m := VCPU_LINE.match(line))}
    emulator = [m.group(1) for line in
                _checked(_virsh("emulatorpin", domain, "--live"), f"{domain}: emulatorpin").splitlines()
                if (m := EMULATOR_LINE.match(line))]
    if not vcpus or not emulator:
        raise TestbedError(f"{domain}: virsh vcpupin/emulatorpin printed no CPU list to restore later")
    return {"vcpus": vcpus, "emulator": emulator[0]}


def set_pinning(domain, pinning):
    """Pin each vCPU and the emulator threads as `pinning` (read_pinning's shape) says, live."""
    for vcpu, cpus in sorted(pinning["vcpus"].items(), key=lambda item: int(item[0])):
        _checked(_virsh("vcpupin", domain, str(vcpu), cpus, "--live"), f"{domain}: vcpupin {vcpu} {cpus}")
    _checked(_virsh("emulatorpin", domain, pinning["emulator"], "--live"),
             f"{domain}: emulatorpin {pinning['emulator']}")


@dataclass
class Plan:
    pause: list = field(default_factory=list)   # host names, paused in this order
    pin: dict = field(default_factory=dict)     # host -> the CPU list its vCPUs and emulator threads get

    @property
    def empty(self):
        return not self.pause and not self.pin


def _terminate(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


class HeldSignals:
    """Ctrl-C, SIGTERM and SIGHUP counted, not acted on, while the guests are resumed and
    unpinned; the ABANDON_AFTER-th raises KeyboardInterrupt. Only the main thread can catch
    signals: elsewhere this holds nothing."""

    def __init__(self, echo):
        self.echo, self.count, self.previous = echo, 0, {}

    def _on(self, signum, _frame):
        self.count += 1
        if self.count >= ABANDON_AFTER:
            raise KeyboardInterrupt(signal.Signals(signum).name)
        self.echo(f"quiet: {signal.Signals(signum).name}: resuming the paused guests first "
                  f"({ABANDON_AFTER - self.count} more abandon it; the next run would resume them)")

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.signal(s, self._on) for s in HELD}
        return self

    def __exit__(self, *_exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        return False


class Quiesce:
    """`with Quiesce(site, plan): ...` pins and pauses the site's guests as `plan` says, and
    undoes both on the way out, however the block ends. Inside the block SIGTERM and SIGHUP
    raise KeyboardInterrupt, as Ctrl-C does, so the undo runs for them too. `changed` (the
    guests paused, the pinning set and the one it replaced) and `outcome` (what the undo
    did) are for the run's manifest."""

    def __init__(self, site, plan, ssh=None, echo=print, after_resume=None, answer_timeout=c.QUIET_ANSWER_S):
        self.site, self.topo, self.state = site, site.topo, site.state
        self.plan, self._ssh = plan, ssh
        self.echo, self.after_resume, self.answer_timeout = echo, after_resume, answer_timeout
        self.paused, self.pinned = [], {}   # in force now: hosts paused (in order), host -> previous pinning
        self.changed = {"paused": [], "pinned": {}}
        self.outcome = {}
        self._terminating = {}

    @property
    def ssh(self):
        if self._ssh is None:
            self._ssh = self.site.ssh(timeout=60)
        return self._ssh

    def domain(self, host):
        return domains.domain_name(self.topo, host)

    def _save(self):
        """The record of what is in force (none: no file), written before each change."""
        path = self.state.quiet_record
        if not self.paused and not self.pinned:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"pid": os.getpid(), "topology": self.topo.name, "paused": self.paused,
                          "pinned": self.pinned})

    def __enter__(self):
        if self.plan.empty:
            return self
        if threading.current_thread() is threading.main_thread():
            self._terminating = {s: signal.signal(s, _terminate) for s in TERMINATING}
        try:
            for host, cpus in self.plan.pin.items():
                dom = self.domain(host)
                previous = read_pinning(dom)
                self.pinned[host] = previous
                self._save()
                self.changed["pinned"][host] = {"cpus": cpus, "previous": previous}
                set_pinning(dom, {"vcpus": {v: cpus for v in previous["vcpus"]}, "emulator": cpus})
            for host in self.plan.pause:
                self.paused.append(host)
                self._save()
                _checked(_virsh("suspend", self.domain(host)), f"pausing {host}")
                self.changed["paused"].append(host)
        except BaseException:
            try:
                self.undo()
            finally:
                self._release()
            raise
        self.echo("quiet: " + "; ".join(self.describe()))
        return self

    def describe(self):
        lines = [f"paused {', '.join(self.changed['paused'])} (not used by this run)"] if self.changed["paused"] else []
        by_cpus = {}
        for host, pin in self.changed["pinned"].items():
            by_cpus.setdefault(pin["cpus"], []).append(host)
        lines += [f"pinned {', '.join(hosts)} to host CPU {cpus}" for cpus, hosts in by_cpus.items()]
        return lines

    def __exit__(self, exc_type, _exc, _tb):
        if self.plan.empty:
            return False
        try:
            held = self.undo()
        finally:
            self._release()
        if held and exc_type is None:
            raise KeyboardInterrupt("a signal came while the paused guests were resumed")
        return False

    def _release(self):
        for s, handler in self._terminating.items():
            signal.signal(s, handler)
        self._terminating = {}

    def undo(self):
        """Resume (the last paused first) and put the previous pinning back, signals held; then
        wait for each resumed guest to answer, set its clock and call `after_resume` (not after
        a signal: the caller asked to stop). What could not be undone stays in the record and
        is echoed with how to undo it. Returns how many signals came while held
        (KeyboardInterrupt at the ABANDON_AFTER-th)."""
        resumed, problems = [], []
        with HeldSignals(self.echo) as held:
            for host in list(reversed(self.paused)):
                res = _virsh("resume", self.domain(host))
                if res.returncode == 0 or domains.state(self.topo, host) == "running":
                    resumed.append(host)
                    self.paused.remove(host)
                    self._save()
                else:
                    problems.append(f"{host} is still paused ({(res.stderr or '').strip()[:120]}); undo: "
                                    f"virsh -c qemu:///system resume {self.domain(host)}, or the next `./tb run`")
            for host, previous in list(self.pinned.items()):
                try:
                    set_pinning(self.domain(host), previous)
                except TestbedError as exc:
                    problems.append(f"{exc}; the next `./tb run` puts the pinning back")
                    continue
                del self.pinned[host]
                self._save()
        self.outcome = {"resumed": resumed, "unpinned": [h for h in self.changed["pinned"] if h not in self.pinned]}
        if resumed:
            self.outcome.update(self._settle(resumed, problems))
        if resumed and self.after_resume is not None and held.count:
            problems.append(f"interrupted: {', '.join(resumed)} keep the profile and WAN they had when paused "
                            f"and the site's health is not checked; see `./tb status`")
        elif resumed and self.after_resume is not None:
            try:
                self.outcome["after_resume"] = self.after_resume(resumed)
            except Exception as exc:  # the run's measurements stand; the site's state is reported
                problems.append(f"after resuming {', '.join(resumed)}: {exc}")
        self.outcome["problems"] = problems
        for line in problems:
            self.echo(f"quiet: {line}")
        return held.count

    def _settle(self, hosts, problems):
        """Wait until each resumed guest answers over SSH, then set the clocks of those that do."""
        answered = {}
        for host in hosts:
            try:
                answered[host] = round(float(wait_for(
                    f"{host} to answer after its resume", lambda h=host: self.ssh.run(h, "true", check=False,
                                                                                      timeout=20).ok,
                    self.answer_timeout, ANSWER_POLL_S, host=host, error=TestbedError)), 1)
            except TestbedError as exc:
                problems.append(f"{exc}; see `./tb status`")
        out = {"answered_s": answered}
        if answered:
            results, now = snapshots.set_clocks(self.topo, self.ssh, list(answered))
            problems += [f"{h}: its clock could not be set after the pause" for h, r in results.items() if not r.ok]
            out["clock_corrected_s"] = snapshots.clock_skew(results, now)
            self.echo(f"quiet: resumed {', '.join(hosts)}; answered after "
                      f"{', '.join(f'{h} {s:g} s' for h, s in answered.items())}; clocks corrected by up to "
                      f"{out['clock_corrected_s']} s")
        return out


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def left(state):
    """The record a run left ({'pid', 'paused', 'pinned'}), or None."""
    try:
        return json.loads(state.quiet_record.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise TestbedError(f"{state.quiet_record}: unreadable ({exc.msg}); resume its guests with "
                           f"`virsh -c qemu:///system resume DOMAIN` and remove it") from None


def paused_now(state):
    """The hosts a run has paused now, by its record ([] without one, or an unreadable one)."""
    try:
        return list((left(state) or {}).get("paused") or [])
    except TestbedError:
        return []


def undo_left(site, ssh=None, echo=print, after_resume=None):
    """Undo what a run that ended without undoing it left paused or pinned on the site (its
    record): None when there is nothing; TestbedError when the run that wrote it is still running."""
    topo, state = site.topo, site.state
    rec = left(state)
    if rec is None:
        return None
    paused, pinned = list(rec.get("paused") or []), dict(rec.get("pinned") or {})
    pid = rec.get("pid")
    if isinstance(pid, int) and pid != os.getpid() and _running(pid):
        raise TestbedError(f"`testbed run` (pid {pid}) has paused {', '.join(paused) or 'no guest'} and "
                           f"pinned {', '.join(pinned) or 'no guest'} of {topo.name} "
                           f"({state.quiet_record}); wait until it ends")
    echo(f"quiet: a run that ended without undoing it left {', '.join(paused) or 'no guest'} paused and "
         f"{', '.join(pinned) or 'no guest'} pinned: undoing that first")
    q = Quiesce(site, Plan(), ssh=ssh, echo=echo, after_resume=after_resume)
    q.paused, q.pinned = paused, pinned
    q.changed["pinned"] = {h: {"previous": p} for h, p in pinned.items()}
    q.undo()
    return q.outcome
