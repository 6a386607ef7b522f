"""Render each host's configuration from the topology and a profile.

Output per host, under the testbed's state directory:
    hosts/<name>/files/...   files installed verbatim under / on the guest
    hosts/<name>/secrets/... pool password, authorized SSH key
    hosts/<name>/provision/  the role scripts (copied from provision/roles)
    hosts/<name>.tgz         all of the above, what Vagrant uploads
"""
import io
import shutil
import tarfile
from pathlib import Path

import jinja2

from testbed import PROJECT_ROOT
from testbed.model import constants

TEMPLATE_DIR = PROJECT_ROOT / "provision" / "templates"
SCRIPT_DIR = PROJECT_ROOT / "provision" / "roles"
CONDOR_ROLES = ("submit", "cm", "ccb", "worker", "dtn")
CONDOR_ROLE_ORDER = ("cm", "ccb", "submit", "worker", "dtn")
XROOTD_DTN_INSTANCES = ("redir", "data", "xcache", "direct")
SHARED_PORT = constants.HTCONDOR_PORT


def environment():
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


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
        "dtn": topo.role_host("dtn"), "origin": topo.role_host("origin"),
        "raid_mount": constants.RAID_MOUNT, "condor": is_condor_host(host),
        "sysctls": profile.for_host(host.roles, "sysctl"),
        "knobs": profile.for_host(host.roles, "condor"),
        "md": profile.for_host(host.roles, "md"),
        "cache": profile.for_host(host.roles, "xrootd_cache"),
    }


def render_condor(env, ctx):
    host = ctx["host"]
    parts = [env.get_template("condor/common.conf.j2").render(ctx)]
    for role in CONDOR_ROLE_ORDER:
        if host.has(role):
            parts.append(env.get_template(f"condor/{role}.conf.j2").render(ctx))
    return "\n".join(parts)


def render_profile_files(env, ctx):
    """The files a profile owns; `testbed profile apply` pushes just these."""
    files = {"etc/sysctl.d/90-testbed-profile.conf":
             env.get_template("system/sysctl.conf.j2").render(ctx)}
    if ctx["condor"]:
        files["etc/condor/config.d/60-testbed-profile.conf"] = \
            env.get_template("condor/profile.conf.j2").render(ctx)
    if ctx["host"].has("dtn"):
        files["etc/xrootd/dtn.cfg"] = env.get_template("xrootd/dtn.cfg.j2").render(ctx)
    return files


def render_host_files(topo, profile, host, accel=None):
    """{relative path under /: content} for one host; `accel` is kvm or tcg."""
    env = environment()
    ctx = context(topo, profile, host, accel)
    files = {"etc/hosts": env.get_template("system/hosts.j2").render(ctx),
             "etc/network/interfaces": env.get_template("system/interfaces.j2").render(ctx),
             "etc/testbed/host.env": env.get_template("system/host.env.j2").render(ctx)}
    if ctx["condor"]:
        files["etc/condor/config.d/50-testbed.conf"] = render_condor(env, ctx)
    if host.has("origin"):
        files["etc/xrootd/xrootd-origin.cfg"] = env.get_template("xrootd/origin.cfg.j2").render(ctx)
    files.update(render_profile_files(env, ctx))
    return files


def write_host(state, topo, profile, host, authorized_key, accel=None):
    """Write hosts/<name>/ and hosts/<name>.tgz; returns the tarball path."""
    root = state.host_dir(host.name)
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, text in render_host_files(topo, profile, host, accel).items():
        path = tmp / "files" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    secrets = tmp / "secrets"
    secrets.mkdir(parents=True, mode=0o700)
    shutil.copy(state.pool_password, secrets / "pool-password")
    (secrets / "authorized_keys").write_text(authorized_key)
    shutil.copytree(SCRIPT_DIR, tmp / "provision")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    tarball = root.with_suffix(".tgz")
    partial = tarball.with_suffix(".tgz.tmp")
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(root, arcname=".", filter=_normalise)
    partial.replace(tarball)
    return tarball


def _normalise(info):
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def write_all(state, topo, profile, accel=None):
    state.ensure_secrets()
    key = Path(str(state.ssh_key) + ".pub").read_text()
    return {name: write_host(state, topo, profile, host, key, accel) for name, host in topo.hosts.items()}


def tar_bytes(files):
    """A gzip tarball of {relative path: text}, for pushing files over SSH."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), 0o644
            tar.addfile(_normalise(info), io.BytesIO(data))
    return buf.getvalue()
