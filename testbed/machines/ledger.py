"""What provisioning changes on an existing host, and how `down` undoes it.

An existing host (topology `existing:`) is a machine of the user's: the testbed may change
only what it records. `changes` lists, for one host, everything provisioning may touch
(packages, files, folders, accounts, the site address, kernel settings, the /etc/hosts
block, services); the list travels in the host's bundle as `existing/changes`.
provision/existing/prepare.sh reads it on the host: in `plan` mode it prints what would
change (the dry run), in `apply` mode it writes the ledger (TESTBED_LEDGER) before it
changes anything, then installs what is missing. provision/existing/remove.sh undoes the
ledger, and only the ledger, on `down`. Here: the list, the commands that run the two
scripts, and the parsers of what they print.
"""
import hashlib
import shlex
import socket

from testbed import PROJECT_ROOT
from testbed.machines.packages import existing_host_packages
from testbed.model import constants as c

SCRIPTS = PROJECT_ROOT / "provision" / "existing"
CHANGES = "existing/changes"          # in the host's bundle
MARKER_FILE = "files" + c.TESTBED_MARKER
CONDOR_ROLES = ("submit", "cm", "ccb", "worker", "dtn")
USER_ROLES = ("submit", "worker")     # jobs run as the submitting user on both ends
# folders the packages and their daemons make, removed with them by `down`
PACKAGE_DIRS = {"condor": ("/etc/condor", "/var/lib/condor", "/var/log/condor", "/run/condor"),
                "xrootd-server": ("/etc/xrootd", "/var/log/xrootd", "/var/spool/xrootd", "/run/xrootd")}
REFUSED = 3                           # the scripts' exit code for "not the testbed's to change"


def owner():
    """This checkout's identity, written into the marker of every host it provisions."""
    return f"{socket.gethostname()}:{PROJECT_ROOT}"


def profile_sysctl_keys():
    """Every kernel setting any profile sets: `profile apply` may set any of them later, so
    each one's value before the testbed is recorded."""
    from testbed.model import profiles
    keys = set()
    for path in sorted(profiles.PROFILE_DIR.glob("*.yaml")):
        prof = profiles.load(path.stem)
        for role in prof.roles:
            keys.update(prof.section(role, "sysctl"))
    return sorted(keys)


def changes(topo, host, files, sysctls):
    """The entries of `existing/changes` for one existing host, in order (see prepare.sh):
    `files` {relative path: text} are the bundle's files, `sysctls` {key: value} the
    provisioning profile's kernel settings for the host."""
    out = [("path", "/var/lib/testbed"), ("path", "/etc/testbed")]
    packages = existing_host_packages(host.roles)
    for package in packages:
        out += [("dir", d) for d in PACKAGE_DIRS.get(package, ())]
    for rel, text in sorted(files.items()):
        out.append(("file", "/" + rel, hashlib.sha256(text.encode()).hexdigest()))
    if any(host.has(r) for r in CONDOR_ROLES):
        out += [("path", "/etc/condor/passwords.d/POOL"), ("path", "/etc/condor/tokens.d")]
    if host.has("origin"):
        out.append(("exclusive", c.ORIGIN_DIR))
    if any(host.has(r) for r in USER_ROLES):
        for user in c.SUBMIT_USERS:
            home = f"/home/{user}"
            out += [("path", home), ("path", f"{home}/.condor"), ("user", user)]
    out += [("package", p) for p in packages]
    if host.existing.interface and host.site_ip != host.existing.address:
        out.append(("address", host.existing.interface, f"{host.site_ip}/{topo.site_net.prefixlen}"))
    from testbed.model.profiles import normalise_sysctl
    for key in sorted(set(profile_sysctl_keys()) | set(sysctls)):
        out.append(("sysctl", key, normalise_sysctl(sysctls[key]) if key in sysctls else ""))
    out.append(("block", "/etc/hosts"))
    if any(host.has(r) for r in CONDOR_ROLES):
        out.append(("service", c.CONDOR_UNIT))
    if host.has("origin"):
        out.append(("service", f"{c.ORIGIN_UNIT}.service"))
    return out


def changes_text(entries):
    return "".join("\t".join(str(f) for f in entry) + "\n" for entry in entries)


def _script(name):
    return shlex.quote((SCRIPTS / name).read_text())


def plan_command():
    """Run prepare.sh in `plan` mode on the changes list given on stdin: reads, never writes
    (but a copy of the list in /tmp, removed after: prepare.sh reads it more than once, and
    stdin over SSH is a pipe that reads once)."""
    return ("f=$(mktemp /tmp/testbed-plan.XXXXXX) && cat > \"$f\" && "
            f"bash -c {_script('prepare.sh')} prepare plan \"$f\"; rc=$?; rm -f \"$f\"; exit $rc")


def provision_command(apply_sh):
    """The provisioning of an existing host, the bundle on stdin: prepare.sh records and
    installs, then provision/apply.sh runs the role scripts as on a VM."""
    return ("f=$(mktemp /tmp/testbed-provision.XXXXXX) && d=$(mktemp -d /tmp/testbed-prepare.XXXXXX) && "
            "cat > \"$f\" && tar -xzf \"$f\" -C \"$d\" " + shlex.quote("./" + CHANGES) + " "
            + shlex.quote("./" + MARKER_FILE) + " && "
            f"bash -c {_script('prepare.sh')} prepare apply \"$d/{CHANGES}\" \"$d/{MARKER_FILE}\" && "
            f"bash -c {shlex.quote(apply_sh)} apply \"$f\"; rc=$?; rm -rf \"$f\" \"$d\"; exit $rc")


def remove_command(identity=None):
    """remove.sh: undo the ledger; refuses (exit REFUSED) on a host another checkout owns."""
    args = " ".join(shlex.quote(a) for a in (identity or owner(), c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END))
    return f"bash -c {_script('remove.sh')} remove {args}"


def parse_lines(text, kinds):
    """[(kind, field, detail)] of the tab-separated lines of a script whose first field is in `kinds`."""
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] in kinds and len(parts) >= 2:
            out.append((parts[0], parts[1], "\t".join(parts[2:])))
    return out


WOULD = {"path": "create {0}", "dir": "let its packages create {0}", "exclusive": "create {0}",
         "create": "create {0}", "replace": "replace {0} (the original is kept and put back by down)",
         "update": "update {0} (the testbed's own)", "user": "create user {0}",
         "address": "add site address {1} to {0}", "sysctl": "set {0}: {1}",
         "block": "add a block of site host names to {0} (from '" + c.HOSTS_BLOCK_BEGIN + "' to its END line)",
         "service": "enable and start {0}", "packages": "install packages {0}",
         "dependencies": "install their dependencies {0}"}


def describe_plan(text):
    """One line per change `prepare.sh plan` printed, in words."""
    return [WOULD.get(field, field + " {0} {1}").format(*(detail.split("\t") + ["", ""])).strip()
            for _kind, field, detail in parse_lines(text, {"would"})]


def conflicts(text):
    """The reasons `prepare.sh` or `remove.sh` refused the host (their `conflict` lines)."""
    return [f"{detail}" if field in ("exclusive", "interface", "htcondor") else f"{field} {detail}"
            for _kind, field, detail in parse_lines(text, {"conflict"})]


DONE = {"service": "stopped and disabled {0}", "address": "removed site address {0}",
        "link": "set {0}", "sysctl": "set {0} back", "block": "removed the testbed's block from {0}",
        "restored": "put back the original {0}", "packages": "purged packages {0}",
        "user": "deleted user {0}", "group": "deleted group {0}", "path": "removed {0}",
        "record": "removed {0}", "host": "{0}"}


def describe_removal(text):
    """(done, kept): what remove.sh did and what it left, in words."""
    done = [DONE.get(field, field + " {0}").format(detail)
            for _k, field, detail in parse_lines(text, {"done", "nothing"})]
    kept = [f"kept {field} {detail}" for _k, field, detail in parse_lines(text, {"kept"})]
    return done, kept
