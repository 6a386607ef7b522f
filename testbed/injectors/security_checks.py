"""Security invariants of a running site: no HTCondor host opens a permission to everyone,
a client without credentials can neither submit nor read the queue, the libvirt networks
forward nothing, and no guest has a default route out.
"""
import re
import xml.etree.ElementTree as ET

from testbed.model.errors import RemoteError
from testbed.services.gateway import Daemons, Schedd

# every permission knob the config defines (with any subsystem or local-name prefix), each
# printed expanded: `NAME = value`
ALLOW_DUMP = Daemons.config_dump_command("^([A-Za-z0-9_]+\\.)*ALLOW_[A-Za-z0-9_]+$")
WIDE_OPEN = {"*", "*/*", "*@*", "*@*/*", "*/*.*", "0.0.0.0/0", "*.*", "*.*.*.*"}


# ALLOW_CLIENT is the other way round: which servers a client tool trusts (default `*`),
# not who may use a daemon
CLIENT_SIDE = {"ALLOW_CLIENT"}


def open_permissions(text):
    """[(knob, value)] whose value lets anyone in (an entry like `*`, `*/*`, `*@*`, 0.0.0.0/0)."""
    bad = []
    for line in text.splitlines():
        name, sep, value = line.partition(" = ")
        if not sep or not re.fullmatch(r"([A-Za-z0-9_]+\.)*ALLOW_[A-Za-z0-9_]+", name.strip()):
            continue
        if name.strip().split(".")[-1].upper() in CLIENT_SIDE:
            continue
        entries = {e.strip() for e in re.split(r"[,\s]+", value) if e.strip()}
        if entries & WIDE_OPEN:
            bad.append((name.strip(), value.strip()))
    return bad


def forwards(xml_text):
    """The <forward> elements of a libvirt network's XML, as their mode (or 'nat' when unset)."""
    root = ET.fromstring(xml_text)
    return [f.get("mode", "nat") for f in root.findall("forward")]


def default_routes(text):
    """Lines of `ip -4 route show default` / `ip -6 route show default`."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("default")]


DENIED = re.compile(r"AUTHENTICATE|PERMISSION DENIED|DENIED|not authorized|Failed to authenticate|"
                    r"Authorization|SECMAN", re.IGNORECASE)
NOT_FOUND = re.compile(r"Can't find address|Unable to locate|Failed to locate|Couldn't contact the condor_collector",
                       re.IGNORECASE)


def judge_client(rc, text, what):
    """'denied' (the schedd refused), 'allowed' (it answered), or 'unreached' (the client never
    got to ask: the check proves nothing)."""
    if rc == 0:
        return "allowed"
    # an authentication refusal wins over the "Couldn't contact the collector" that follows
    # it: the pool turned the client away for lack of credentials (at the collector, which
    # it asks for the schedd's address, or at the schedd)
    if DENIED.search(text):
        return "denied"
    if NOT_FOUND.search(text):
        return "unreached"
    if what == "submit" and re.search(r"submitted to cluster", text):
        return "allowed"
    return "unreached"


def anonymous_script(schedd, pool, action):
    """Shell for a client host: as `nobody`, with no token directory and nothing in HOME,
    read the submit host's queue (action=read) or submit a job to it (action=submit)."""
    common = ("d=$(mktemp -d /tmp/tb-anon.XXXXXX); chmod 0755 \"$d\"; "
              "printf 'executable = /bin/true\\nuniverse = vanilla\\nqueue 1\\n' > \"$d/job.sub\"; "
              "chmod 0644 \"$d/job.sub\"; cd \"$d\"; ")
    env = (f"env -i PATH=/usr/bin:/bin HOME=\"$d\" _CONDOR_SEC_TOKEN_DIRECTORY=\"$d/tokens\" "
           f"_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS=FS,IDTOKENS")
    tool = Schedd.remote_client_command(action, schedd, pool)
    return (common + f"runuser -u nobody -- {env} timeout 120 {tool} 2>&1; rc=$?; "
            f"cd /; rm -rf \"$d\"; echo \"#rc=$rc\"")


def parse_rc(text):
    m = re.search(r"#rc=(\d+)\s*$", text)
    return int(m.group(1)) if m else None


class SecurityChecks:
    def __init__(self, topo, ssh):
        self.topo, self.ssh = topo, ssh

    def condor_hosts(self):
        return [h.name for h in self.topo.hosts.values()
                if any(r in h.roles for r in ("submit", "cm", "ccb", "worker", "dtn"))]

    def open_permissions(self):
        """{host: [(knob, value)]} of permissions open to anyone, on every HTCondor host;
        RemoteError when a host printed no ALLOW_ knob at all (nothing was checked)."""
        results = self.ssh.run_many({h: ALLOW_DUMP for h in self.condor_hosts()}, timeout=120)
        out = {}
        for host, res in results.items():
            if not res.ok or " = " not in res.stdout:
                raise RemoteError(f"{host}: condor_config_val printed no ALLOW_ knobs "
                                  f"({(res.stderr.strip() or 'no output')[:120]})")
            out[host] = open_permissions(res.stdout)
        return out

    def default_routes(self):
        """{host: [default route lines]} of every VM (IPv4 and IPv6); an existing host's
        routes are its own network's, not the testbed's to judge."""
        cmd = "ip -4 route show default; ip -6 route show default 2>/dev/null"
        results = self.ssh.run_many({h.name: cmd for h in self.topo.vm_hosts}, timeout=60)
        bad = [h for h, r in results.items() if not r.ok]
        if bad:
            raise RemoteError(f"cannot read the routes of {', '.join(bad)}")
        return {h: default_routes(r.stdout) for h, r in results.items()}

    def network_forwards(self):
        """{libvirt network: [forward modes]} of the topology's networks, read with virsh on
        the machine that runs the VMs (the suite runs there)."""
        from testbed.machines import domains
        out = {}
        for name in self.topo.network_names().values():
            res = domains._virsh("net-dumpxml", name, timeout=30)
            if res.returncode != 0:
                raise RemoteError(f"virsh net-dumpxml {name}: {(res.stderr.strip() or 'failed')[:160]}")
            out[name] = forwards(res.stdout)
        return out

    def schedd_name(self, submit):
        """The submit host's schedd as the pool's collector lists it (asked as root there)."""
        out = Schedd(self.ssh, submit).status("-schedd -af Name Machine").stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].split(".")[0] == submit:
                return parts[0]
        raise RemoteError(f"{submit}: its schedd is not in the collector ({out.strip()[:120] or 'no ads'})")

    def anonymous_client(self, client, submit, action):
        """What a client without credentials on `client` gets from the submit host's schedd:
        {verdict: denied|allowed|unreached, output}. A job it managed to submit is removed."""
        schedd = self.schedd_name(submit)
        for cm in self.topo.with_role("cm"):  # the first collector that lets it find the schedd
            res = self.ssh.run(client, anonymous_script(schedd, cm.site_ip, action), check=False, timeout=200)
            rc = parse_rc(res.stdout)
            text = res.stdout.rsplit("#rc=", 1)[0]
            verdict = judge_client(rc if rc is not None else 1, text, action)
            if verdict != "unreached":
                break
        if action == "submit":
            m = re.search(r"submitted to cluster (\d+)", text)
            if m:
                verdict = "allowed"
                Schedd(self.ssh, submit).rm_cluster(m.group(1))
        return {"verdict": verdict, "rc": rc, "output": text.strip()[-400:]}
