"""How `testbed run` quiets the host for an experiment: which guests it pauses and pins, from
the registry's declaration (`uses`, `measured`) and the run's settings; the pool check that
keeps a guest running while HTCondor would still contact it; and what a resumed guest gets
back - the profile and WAN links put in force while it was paused - before the site's
health is checked again. testbed/machines/quiesce.py pauses, pins and undoes both.

Settings: the run's option (`--pause-unused`, `--pin`), else the topology's `quiet:`
section, else the scale's default. Pausing is on at `quick` and `full`, the scales whose
verdicts come from repeated trials: an unused guest's kernel timers and daemons cost emulated
CPU (TCG) on the same host cores the measured guests need. It is off at `ci`: `./tb test`
checks that every suite works, in minutes, on `small`, where a resume and a health check
per suite would add time and no verdict. Pinning is off unless asked: on 2 host cores it
gives the measured guests a core each but leaves every other running guest to share both,
and benchmarks/e1_noise.py is what shows whether that lowers the spread on a given host.
"""
import os
import time
from functools import partial

from testbed.machines import quiesce
from testbed.model import constants as c, scaled_profiles
from testbed.model.errors import RemoteError
from testbed.model.links import Link
from testbed.network import wan
from testbed.remote import profile_record
from testbed.services import health, tuning
from testbed.services.condor import Pool

DEFAULTS = {"pause_unused": {"ci": False, "quick": True, "full": True},
            "pin": {"ci": False, "quick": False, "full": False}}


def settings(scale, topo, pause_unused=None, pin=None):
    """{'pause_unused': bool, 'pin': bool, 'set_by': {setting: 'option' | 'topology' | '<scale> scale'}}:
    the option when given, else the topology's `quiet:` value, else the scale's default."""
    out, set_by = {}, {}
    for key, value in (("pause_unused", pause_unused), ("pin", pin)):
        site = (getattr(topo, "quiet", None) or {}).get(key)
        if value is not None:
            out[key], set_by[key] = bool(value), "option"
        elif site is not None:
            out[key], set_by[key] = site, "topology"
        else:
            out[key], set_by[key] = DEFAULTS[key][scale], f"{scale} scale"
    return out | {"set_by": set_by}


def hosts_to_pause(topo, uses):
    """The hosts none of whose roles the experiment uses (`uses`: role names) and none of
    whose roles is the main pool's (constants.POOL_ROLES), in the topology's order; none of
    another machine's hypervisor."""
    keep = set(uses) | set(c.POOL_ROLES)
    return [h.name for h in topo.hosts.values() if not keep & set(h.roles) and _here(topo, h.name)]


def _here(topo, name):
    """Not a VM of another machine's hypervisor: pausing and pinning act on this machine's
    libvirt and CPUs only (a remote guest keeps running as it is)."""
    hv = topo.hypervisor_of(name)
    return hv is None or hv.on_this_machine


def cpulist(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (virsh's CPU list)."""
    runs = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def pin_plan(topo, roles, cpus):
    """{host: CPU list}: each measured role's guests on host CPUs of their own, the first role on
    the first CPUs; {} with one host CPU or fewer than two of the roles present (nothing to set
    apart). With more roles than CPUs the roles take the CPUs in turn; a guest with two measured
    roles goes with the first. 2 host CPUs, E1 (submit, worker): submit on 0, the workers on 1."""
    groups, seen = [], set()
    for role in roles:
        hosts = [h.name for h in topo.with_role(role) if h.name not in seen and _here(topo, h.name)]
        seen.update(hosts)
        if hosts:
            groups.append(hosts)
    cpus = sorted(set(cpus))
    if len(cpus) < 2 or len(groups) < 2:
        return {}
    shares, start = [], 0
    for i in range(len(groups)):
        if len(groups) > len(cpus):
            shares.append([cpus[i % len(cpus)]])
            continue
        size = len(cpus) // len(groups) + (1 if i < len(cpus) % len(groups) else 0)
        shares.append(cpus[start:start + size])
        start += size
    return {host: cpulist(share) for hosts, share in zip(groups, shares) for host in hosts}


def host_cpus():
    """The host CPUs this process may run on (every CPU of the host, unless restricted)."""
    return sorted(os.sched_getaffinity(0))


def plan(exp, topo, chosen, cpus=None):
    """The quiesce.Plan of a run of `exp` with the chosen `settings`."""
    pause = hosts_to_pause(topo, exp.uses) if chosen["pause_unused"] else []
    pin = pin_plan(topo, exp.measured, host_cpus() if cpus is None else cpus) if chosen["pin"] else {}
    return quiesce.Plan(pause=pause, pin=pin)


def keep_contacted(the_plan, pool):
    """(the plan without the hosts the main pool would still contact, {host: why kept running}):
    a paused guest the negotiator, collector or schedd still talks to would hold that daemon
    until its time-out. When the pool cannot be asked, every host is kept running."""
    if not the_plan.pause:
        return the_plan, {}
    try:
        contacted = pool.hosts_contacted()
    except RemoteError as exc:
        contacted = {h: f"the pool could not be asked which hosts it contacts ({exc})" for h in the_plan.pause}
    kept = {h: why for h, why in contacted.items() if h in the_plan.pause}
    return quiesce.Plan(pause=[h for h in the_plan.pause if h not in kept], pin=the_plan.pin), kept


def site_records(state):
    """The profile (by what `scaled_profiles.load` takes: a scaled one's `<base>@k=<k>`) and WAN links
    the site's records hold (what every running guest has)."""
    prof = profile_record.recorded_profile(state)
    return {"profile": prof.spec if prof else None, "links": wan.in_force(state).get("links") or []}


def reapply_after_resume(site, ssh, at_pause, resumed, echo=print, healthy_timeout=c.QUIET_HEALTHY_S):
    """Quiesce's after_resume (`at_pause`: the site's `site_records` when the guests were
    paused): give the `resumed` guests the profile and WAN links the suite put in force while
    they were paused (it applies both to the running guests only), then wait until the site is
    healthy (an HTCondor daemon on a resumed guest may have missed updates and reconnects).
    Returns what it did, for the manifest; TestbedError when not healthy."""
    topo, state = site.topo, site.state
    out, now = {}, site_records(state)
    others = [h for h in topo.hosts if h not in resumed]
    if now["profile"] and now["profile"] != at_pause["profile"]:
        previous = scaled_profiles.load(at_pause["profile"]) if at_pause["profile"] else None
        prof = scaled_profiles.load(now["profile"])
        with profile_record.failure_recorded(state, prof):   # the resumed guests may have it part way
            tuning.apply(topo, ssh, prof, previous, echo=echo, skip=others)
        out["profile_applied"] = now["profile"]
    if now["links"] != at_pause["links"]:
        wan.apply(topo, ssh, [Link(**link) for link in now["links"]], skip=others)
        out["wan_applied"] = True
    started = time.monotonic()
    health.wait_healthy(topo, ssh, timeout=healthy_timeout, echo=echo)
    out["healthy_after_s"] = round(time.monotonic() - started, 1)
    echo(f"quiet: site {topo.name} healthy {out['healthy_after_s']:g} s after the resume")
    return out


def prepare(site, exp, scale, pause_unused=None, pin=None, echo=print, ssh=None, cpus=None):
    """(the run's quiesce.Quiesce on the site, its manifest entry). Touches nothing yet; when
    there is a guest to pause, asks the pool which of them it would still contact and keeps those."""
    topo = site.topo
    chosen = settings(scale, topo, pause_unused, pin)
    the_plan = plan(exp, topo, chosen, cpus)
    kept, hook = {}, None
    if the_plan.pause:
        ssh = ssh or site.ssh(timeout=120)
        the_plan, kept = keep_contacted(the_plan, Pool(topo, ssh))
        hook = partial(reapply_after_resume, site, ssh, site_records(site.state), echo=echo)
    entry = {"pause_unused": chosen["pause_unused"], "pin": chosen["pin"], "set_by": chosen["set_by"],
             "uses": list(exp.uses), "paused": list(the_plan.pause), "kept_running": kept,
             "pin_plan": dict(the_plan.pin)}
    return quiesce.Quiesce(site, the_plan, ssh=ssh, echo=echo, after_resume=hook), entry


def summary(entry):
    """One line: what the run does about the host's noise, and why."""
    by = entry["set_by"]
    pause = (f"pausing {', '.join(entry['paused'])}" if entry["paused"] else "nothing to pause") \
        if entry["pause_unused"] else "off"
    kept = "".join(f"; {h} kept running: {why}" for h, why in entry["kept_running"].items())
    pin = (", ".join(f"{h} on CPU {cpus}" for h, cpus in entry["pin_plan"].items()) or "nothing to set apart") \
        if entry["pin"] else "off"
    return f"quiet: pause unused guests: {pause} ({by['pause_unused']}){kept}; pin: {pin} ({by['pin']})"
