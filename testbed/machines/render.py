"""Render each host's configuration from the topology and a profile.

Output per host, under the testbed's state directory:
    hosts/<name>/files/...   files installed verbatim under / on the guest
    hosts/<name>/secrets/... pool password, authorized SSH key
    hosts/<name>/provision/  the role scripts (copied from provision/roles)
    hosts/<name>/existing/   an existing host's list of what provisioning may change
                             (testbed/machines/ledger.py)
    hosts/<name>.tgz         all of the above, what provisioning uploads
"""
import os
import shutil
import tarfile
from pathlib import Path

import jinja2

from testbed import PROJECT_ROOT
from testbed.machines import ledger
from testbed.model.state import write_private
from testbed.model import constants
from testbed.model.errors import ConfigError

TEMPLATE_DIR = PROJECT_ROOT / "provision" / "templates"
SCRIPT_DIR = PROJECT_ROOT / "provision" / "roles"
CONDOR_ROLES = ("submit", "cm", "ccb", "worker", "dtn")
CONDOR_ROLE_ORDER = ("cm", "ccb", "submit", "worker", "dtn")
XROOTD_DTN_INSTANCES = ("redir", "data", "xcache", "direct")
SHARED_PORT = constants.HTCONDOR_PORT


class Knobs(dict):
    """One profile section as merged for a host (the templates' sysctls, knobs, md, cache)."""

    def __init__(self, section, values):
        super().__init__(values)
        self._profile_section = section


class MissingKnob(jinja2.UndefinedError):
    """A template read a profile knob the profile does not set; the message is section.knob."""


class _Undefined(jinja2.StrictUndefined):
    """StrictUndefined that names a missing profile knob by its section."""

    def __init__(self, hint=None, obj=jinja2.utils.missing, name=None, exc=jinja2.UndefinedError):
        if hint is None and isinstance(obj, Knobs) and isinstance(name, str):
            hint, exc = f"{obj._profile_section}.{name}", MissingKnob
        super().__init__(hint, obj, name, exc)


def environment():
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              undefined=_Undefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def render_template(env, name, ctx):
    """Render one template; a value it needs and does not get is a one-line ConfigError
    naming the profile file, the missing knob (or variable) and the template."""
    host, profile = ctx["host"], ctx["profile"]
    try:
        return env.get_template(name).render(ctx)
    except MissingKnob as exc:
        raise ConfigError(profile.source, f"roles.{'|'.join(host.roles)}.{exc.message}",
                          f"not set, and template {name} needs it for host {host.name} "
                          "(set it, or extend default)") from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(profile.source, "", f"template {name} for host {host.name}: "
                                              f"undefined variable: {exc.message}") from None


def had_list(cm_hosts):
    """HAD_LIST / REPLICATION_LIST: every CM at the shared port, in CONDOR_HOST order."""
    return ", ".join(f"{name}:{SHARED_PORT}" for name in cm_hosts)


def ccb_addresses(topo):
    ccbs = topo.with_role("ccb") or topo.with_role("cm")
    return [f"{h.name}:{SHARED_PORT}" for h in ccbs]


def is_condor_host(host):
    return any(host.has(role) for role in CONDOR_ROLES)


def context(topo, profile, host, accel=None):
    cms = [h.name for h in topo.with_role("cm")]
    return {
        "topo": topo, "host": host, "profile": profile, "accel": accel,
        "cm_hosts": cms, "had_list": had_list(cms), "replication_list": had_list(cms),
        "ccb_addresses": ccb_addresses(topo), "users": constants.SUBMIT_USERS, "c": constants.as_template_context(),
        "owner": ledger.owner(),
        "dtn": topo.role_host("dtn"), "origin": topo.role_host("origin"),
        "raid_mount": constants.RAID_MOUNT, "condor": is_condor_host(host),
        "site_mtu": topo.layout.site_mtu,
        "sysctls": Knobs("sysctl", profile.for_host(host.roles, "sysctl")),
        "knobs": Knobs("condor", profile.for_host(host.roles, "condor")),
        "md": Knobs("md", profile.for_host(host.roles, "md")),
        "cache": Knobs("xrootd_cache", profile.for_host(host.roles, "xrootd_cache")),
    }


def render_condor(env, ctx):
    host = ctx["host"]
    parts = [render_template(env, "condor/common.conf.j2", ctx)]
    for role in CONDOR_ROLE_ORDER:
        if host.has(role):
            parts.append(render_template(env, f"condor/{role}.conf.j2", ctx))
    return "\n".join(parts)


def render_profile_files(env, ctx):
    """The files a profile owns; `testbed profile apply` pushes just these."""
    files = {"etc/sysctl.d/90-testbed-profile.conf":
             render_template(env, "system/sysctl.conf.j2", ctx)}
    if ctx["condor"]:
        files["etc/condor/config.d/60-testbed-profile.conf"] = \
            render_template(env, "condor/profile.conf.j2", ctx)
    if ctx["host"].has("dtn"):
        files["etc/xrootd/dtn.cfg"] = render_template(env, "xrootd/dtn.cfg.j2", ctx)
    return files


def render_host_files(topo, profile, host, accel=None):
    """{relative path under /: content} for one host; `accel` is kvm or tcg."""
    env = environment()
    ctx = context(topo, profile, host, accel)
    if host.existing:  # its own /etc/hosts (a block of ours in it) and network files
        files = {"etc/testbed/hosts": render_template(env, "system/hosts-block.j2", ctx),
                 "etc/testbed/installed-by": render_template(env, "system/installed-by.j2", ctx),
                 "etc/testbed/host.env": render_template(env, "system/host.env.j2", ctx)}
    else:
        files = {"etc/hosts": render_template(env, "system/hosts.j2", ctx),
                 "etc/network/interfaces": render_template(env, "system/interfaces.j2", ctx),
                 "etc/testbed/host.env": render_template(env, "system/host.env.j2", ctx)}
    if ctx["condor"]:
        files["etc/condor/config.d/50-testbed.conf"] = render_condor(env, ctx)
    if host.has("origin"):
        files["etc/xrootd/xrootd-origin.cfg"] = render_template(env, "xrootd/origin.cfg.j2", ctx)
    files.update(render_profile_files(env, ctx))
    return files


def write_host(state, topo, profile, host, authorized_key, accel=None):
    """Write hosts/<name>/ and hosts/<name>.tgz; returns the tarball path."""
    root = state.host_dir(host.name)
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp.mkdir(mode=0o700)  # holds secrets/: private from its creation
    files = render_host_files(topo, profile, host, accel)
    for rel, text in files.items():
        path = tmp / "files" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if host.existing:
        (tmp / ledger.CHANGES).parent.mkdir()
        (tmp / ledger.CHANGES).write_text(existing_changes(topo, profile, host, files))
    secrets = tmp / "secrets"
    secrets.mkdir(mode=0o700)
    write_private(secrets / "pool-password", state.pool_password.read_bytes())
    write_private(secrets / "authorized_keys", authorized_key)
    shutil.copytree(SCRIPT_DIR, tmp / "provision")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    tarball = root.with_suffix(".tgz")
    partial = tarball.with_suffix(".tgz.tmp")
    partial.unlink(missing_ok=True)
    # 0600 from its creation: the bundle carries the pool password
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh, tarfile.open(fileobj=fh, mode="w:gz") as tar:
        tar.add(root, arcname=".", filter=_normalise)
    partial.replace(tarball)
    return tarball


def existing_changes(topo, profile, host, files=None, accel=None):
    """The text of an existing host's `existing/changes` (testbed/machines/ledger.py)."""
    files = files if files is not None else render_host_files(topo, profile, host, accel)
    return ledger.changes_text(ledger.changes(topo, host, files, profile.for_host(host.roles, "sysctl")))


def _normalise(info):
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def write_all(state, topo, profile, accel=None):
    state.ensure_secrets()
    key = Path(str(state.ssh_key) + ".pub").read_text()
    return {name: write_host(state, topo, profile, host, key, accel) for name, host in topo.hosts.items()}


def render_run_file(name, **ctx):
    """A configuration file a suite installs for one run only (e.g. provision/templates/e4/),
    rendered by the same Jinja environment (StrictUndefined) as the provisioned files."""
    try:
        return environment().get_template(name).render(ctx)
    except jinja2.UndefinedError as exc:
        raise ConfigError(str(TEMPLATE_DIR / name), "", f"undefined variable: {exc.message}") from None
