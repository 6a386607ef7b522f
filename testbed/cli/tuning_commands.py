"""Verbs that change a running site's tuning: profiles and the emulated WAN."""
from testbed.cli.common import _profile, _site
from testbed.model.errors import TestbedError

def cmd_profile_show(args):
    from testbed.model import profiles, tables
    prof = _profile(args.name)
    print(f"profile {prof.name} ({prof.source}){': ' + prof.description if prof.description else ''}")
    if len(prof.chain) > 1:
        print("extends: " + " <- ".join(prof.chain))
    if prof.reference:
        print(f"reference: {prof.reference}")
    for what, why in sorted(prof.declares.items()):
        print(f"declares {what}: {why}")
    print(tables.render(["role", "section", "key", "value"], profiles.flatten(prof)))
    from testbed.model import links
    for link in links.parse_links(prof.wan, prof.source, "wan"):
        print(f"wan: {link.a} <-> {link.b} {links.describe(link)}")
    return 0


def cmd_profile_diff(args):
    from testbed.model import profiles, tables
    a, b = _profile(args.a), _profile(args.b)
    for what in sorted(set(a.declares) | set(b.declares)):  # what one runs that the other does not
        print(f"declares {what}: {a.name}: {a.declares.get(what, '-')}; {b.name}: {b.declares.get(what, '-')}")
    rows = profiles.diff(a, b)
    if not rows:
        print(f"profiles {a.name} and {b.name} set the same values")
        return 0
    print(tables.render(["role", "section", "key", a.name, b.name], rows))
    return 0


def cmd_profile_apply(args):
    from testbed.network import netem, wan
    from testbed.remote import profile_record
    from testbed.results import release_record
    from testbed.services import tuning
    site = _site(args, change="profile apply")
    topo, ssh, state = site.topo, site.ssh(), site.state
    prof = _profile(args.name)
    release_record.refuse_unknown_knobs([prof], site)
    with profile_record.failure_recorded(state, prof):   # some hosts may have it: none is known in force
        outcome = tuning.apply(topo, ssh, prof, profile_record.recorded_profile(state))
    if prof.wan:
        wan.set_links(topo, ssh, state, netem.parse_links(prof.wan, prof.source, "wan"))
    profile_record.record_profile(state, prof, outcome)
    print(f"recorded in {state.profile_record}")
    return 0


def cmd_wan_set(args):
    from testbed.network import netem, wan
    from testbed.model import links as link_text, tables
    links = [netem.parse_spec(spec) for spec in args.links]   # before the site is touched
    site = _site(args, change="wan set")
    topo, ssh, state = site.topo, site.ssh(), site.state
    for link in links:
        for group in (link.a, link.b):
            try:
                topo.group(group)
            except KeyError:
                raise TestbedError(f"wan set: {link.a}:{link.b}: unknown host group {group!r} "
                                   f"(hosts and roles of {topo.name})") from None
    rows = wan.set_links(topo, ssh, state, links)
    configured = {f"{link.a}<->{link.b}": link_text.describe(link) for link in links}
    print(tables.render(["link", "configured", "probe", "measured RTT ms (median)", "min", "max"],
                        [[r["link"], configured.get(r["link"], f"{r['configured_ms']:g} ms RTT"),
                          f"{r['from']}->{r['to']}", r["measured_ms"], r["min_ms"], r["max_ms"]] for r in rows]))
    return 0


def cmd_wan_show(args):
    from testbed.model import links
    from testbed.network import wan
    site = _site(args)
    record = wan.in_force(site.state)
    if not record["links"]:
        print("no WAN emulation recorded (all links at LAN latency)")
    for link in record["links"]:
        print(f"{link['a']} <-> {link['b']}: {links.describe(links.Link(**link))}")
    for row in record.get("measured", []):
        print(f"  measured {row['from']}->{row['to']}: {row['measured_ms']} ms (configured {row['configured_ms']:g})")
    if args.qdiscs:
        for host, text in wan.show(site.topo, site.ssh()).items():
            print(f"--- {host}\n{text}")
    return 0


def cmd_wan_clear(args):
    from testbed.model.links import describe
    from testbed.network import wan
    site = _site(args, change="wan clear")
    topo = site.topo
    kept = [link for link in wan.clear(topo, site.ssh(), site.state)
            if link.rtt_ms or link.jitter_ms or link.loss_pct or link.rate_mbit]
    print(f"WAN emulation cleared on {len(topo.hosts)} hosts; the topology's own links stay: "
          + ("; ".join(f"{link.a}<->{link.b} {describe(link)}" for link in kept) or "none"))
    return 0
