"""What the site's HTCondor and XRootD release make of the configuration the testbed writes.

For every HTCondor knob the testbed's templates and profiles set, the release's own default
(its parameter table, dumped with no configuration file at all: CONDOR_CONFIG=ONLY_ENV, raw
so that two releases compare as written) and the value in force on one host of each role; for
XRootD, the lines its servers logged against the rendered configuration (an unknown or
ignored directive). `testbed box knobs --keep` keeps one record per release in
results/releases/, and `testbed report docs` puts the releases side by side.
"""
import re

from testbed.machines.render import TEMPLATE_DIR
from testbed.model import profiles
from testbed.services import health
from testbed.services.gateway import Daemons

KNOB_LINE = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)?)[ \t]*=", re.M)
CONDOR_TEMPLATES = ("condor", "e5")     # folders under provision/templates
ROLES = ("submit", "cm", "ccb", "worker", "dtn")
# what xrootd says of a directive it does not take (XrdOuca's and the plugins' config parsers)
XROOTD_COMPLAINTS = r"unknown directive|ignoring|Config warning|not supported|deprecated"
XROOTD_LOGS = "/var/log/xrootd"


def template_knobs(template_dir=TEMPLATE_DIR):
    """{knob: [template files that set it]} over the HTCondor templates."""
    out = {}
    for folder in CONDOR_TEMPLATES:
        for path in sorted((template_dir / folder).glob("*.j2")):
            for name in KNOB_LINE.findall(path.read_text()):
                out.setdefault(name, []).append(f"{folder}/{path.name}")
    return out


def profile_knobs(profile_dir=profiles.PROFILE_DIR):
    """{knob: [profiles that set it]} over every profile's `condor` sections."""
    out = {}
    for path in sorted(profile_dir.glob("*.yaml")):
        prof = profiles.load(path.stem)
        for role in prof.roles:
            for name in prof.section(role, "condor"):
                out.setdefault(name, [])
                if path.stem not in out[name]:
                    out[name].append(path.stem)
    return out


def testbed_knobs():
    """Every HTCondor knob the testbed sets, sorted: {knob: [where it is set]}."""
    found = template_knobs()
    for name, where in profile_knobs().items():
        found.setdefault(name, []).extend(f"profile {p}" for p in where)
    return dict(sorted(found.items()))


def parse_dump(text):
    """condor_config_val -dump's `NAME = value` lines -> {NAME: value}; a value written over
    several lines (`NAME @=end` ... `@end`) is joined into one."""
    out, name, lines = {}, None, []
    for line in text.splitlines():
        if name is not None:
            if line.strip().startswith("@end"):
                out[name], name = " ".join(x.strip() for x in lines if x.strip()), None
            else:
                lines.append(line)
            continue
        m = re.match(r"^([A-Za-z0-9_.]+) @=(\w+)\s*$", line)
        if m:
            name, lines = m.group(1).upper(), []
            continue
        m = re.match(r"^([A-Za-z0-9_.]+) = ?(.*)$", line)
        if m:
            out[m.group(1).upper()] = m.group(2)
    return out


def values_of(knobs, text):
    """{knob: its value in a dump, None when the dump has none}."""
    dump = parse_dump(text)
    return {k: dump.get(k.upper()) for k in knobs}


def role_hosts(topo):
    """{role: its first host} for the roles the topology has."""
    out = {}
    for role in ROLES:
        hosts = topo.with_role(role)
        if hosts:
            out[role] = hosts[0].name
    return out


def collect(topo, ssh):
    """The record of this site's release: versions (as in a run's manifest) and the packages
    they came from, the release's defaults, the values in force per role, XRootD's lines."""
    knobs = testbed_knobs()
    hosts = role_hosts(topo)
    probe = hosts.get("submit") or next(iter(hosts.values()))
    packages = ssh.run(probe, "dpkg-query -W -f '${Package} ${Version}\\n' "
                              "condor xrootd-server xrootd-client 2>/dev/null").stdout
    defaults = values_of(knobs, ssh.run(probe, Daemons.DEFAULTS_DUMP).stdout)
    dumps = ssh.run_many({host: Daemons.CONFIG_DUMP for host in hosts.values()}, check=True)
    in_force = {role: values_of(knobs, dumps[host].stdout) for role, host in hosts.items()}
    complaints = (f"grep -rhiE '{XROOTD_COMPLAINTS}' {XROOTD_LOGS} 2>/dev/null | "
                  "sed -E 's/^[0-9: ]+[0-9]+ //' | sort | uniq -c | sort -rn | head -40")
    logs = ssh.run_many({h.name: complaints for h in topo.hosts.values() if h.has("dtn")})
    xrootd = {host: [line.strip() for line in res.stdout.splitlines() if line.strip()] for host, res in logs.items()}
    return {"versions": health.guest_versions(ssh, probe),
            "packages": dict(line.split() for line in packages.splitlines() if len(line.split()) == 2),
            "knobs": knobs, "defaults": defaults, "in_force": in_force, "hosts": hosts, "xrootd_lines": xrootd}
