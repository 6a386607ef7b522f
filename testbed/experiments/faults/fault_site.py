"""The fault suite's site-level steps that the Robot library FaultLibrary calls: a bad WAN
between the submit host and the workers, whether the site is restored after an
interrupted run, the libvirt networks that forward. Kept here so the library imports
only `testbed.experiments` (and model types)."""
from testbed.injectors import security_checks
from testbed.model import profiles
from testbed.network import netem, wan
from testbed.services import tuning


def set_bad_wan(topo, ssh, state, rtt_ms, loss_pct, count=10):
    """submit <-> workers at rtt_ms with loss_pct each way; the set_links rows."""
    return wan.set_links(topo, ssh, state, [netem.Link("submit", "worker", rtt_ms=float(rtt_ms),
                                                       loss_pct=float(loss_pct))], count=count)


def restore_problems(topo, ssh):
    """What is not restored: hosts with netem beyond the topology's own links, and the
    first mismatches of the `default` profile's read-back."""
    want = {h for h, cmds in netem.host_plans(topo, wan.effective_links(topo, [])).items()
            if any("netem" in c for c in cmds)}
    extra = [h for h, text in wan.show(topo, ssh).items() if "netem" in text and h not in want]
    _got, bad = tuning.read_back(topo, ssh, profiles.load("default"))
    return [f"{h} still has netem" for h in extra] + [f"profile default: {b}" for b in bad[:3]]


def network_forwards(topo):
    """{libvirt network: [forward modes]} (security_checks.network_forwards)."""
    return security_checks.network_forwards(topo)
