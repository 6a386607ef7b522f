"""E3's site: the storage and compute sites and their RTT matrix, and the commands and
files that build them - the worker's per-site source addresses, policy routing and
per-cell netem, the sites' users on the submit host and the worker, the XRootD federation
on the DTN and the ROOT files of every storage site.

Everything here builds a command or a file; fax.py's `FaxExperiment` runs them on the site.
"""
import shlex
import string

from testbed import PROJECT_ROOT
from testbed.model import constants as c
from testbed.network.netem import netem_handle, prio_class
from testbed.services.storage import units_command


SITE_NAMES = string.ascii_lowercase
MAX_PRIO_BANDS = 16  # the kernel's TCQ_PRIO_BANDS


# --- sites and the RTT matrix ---------------------------------------------------------
def site_names(n):
    if not 2 <= n <= 4:
        raise ValueError(f"E3 needs 2 to 4 sites (one prio band per off-diagonal cell), got {n}")
    return list(SITE_NAMES[:n])


def rtt_matrix(sites, rtts):
    """{compute: {storage: rtt_ms}}: 0 on the diagonal; the site pairs (a,b), (a,c), (b,c),
    ... get `rtts` in order (cycling), the same both ways."""
    if not rtts or any(r <= 0 for r in rtts):
        raise ValueError(f"off-diagonal RTTs must be > 0 ms, got {rtts}")
    m = {x: {y: 0.0 for y in sites} for x in sites}
    k = 0
    for i, x in enumerate(sites):
        for y in sites[i + 1:]:
            m[x][y] = m[y][x] = float(rtts[k % len(rtts)])
            k += 1
    return m


def cells(matrix):
    """[(compute, storage, rtt)] row by row."""
    return [(x, y, matrix[x][y]) for x in matrix for y in matrix[x]]


def concurrency_cell(matrix, rtt):
    """The first off-diagonal (compute, storage) cell with `rtt`."""
    for x, y, r in cells(matrix):
        if x != y and r == float(rtt):
            return x, y
    raise ValueError(f"no off-diagonal cell has {rtt:g} ms (matrix RTTs: "
                     f"{sorted({r for _, _, r in cells(matrix) if r})})")


def far_cell(matrix):
    """The first (compute, storage) cell with the largest RTT, and that compute site's own
    (diagonal) cell: where the learning rows read remotely and locally."""
    x, y, _ = max(cells(matrix), key=lambda cell: cell[2])
    return (x, y), (x, x)


def server_port(sites, site):
    return c.E3_SERVER_PORT_BASE + sites.index(site)


def redirector_site(sites):
    """The site the federation's redirector belongs to (site a). FAX's redirector is one
    service at one site: a job opens every file there first (TCP connect, login, open, the
    redirect), so a reader at another site pays the RTT between its site and this one
    before it reaches the data server; a reader at this site pays none."""
    return sites[c.E3_REDIRECTOR_SITE_INDEX]


def redirect_rtt(matrix, sites, compute):
    """The RTT (ms) compute site `compute`'s traffic to the redirector is delayed by."""
    return matrix[compute][redirector_site(sites)]


def site_user(site):
    return f"{c.E3_USER_PREFIX}{site}"


def site_uid(sites, site):
    return c.E3_UID_BASE + 1 + sites.index(site)


def site_table(sites, site):
    return c.E3_TABLE_BASE + 1 + sites.index(site)


def site_address(site_net, sites, site):
    """The worker's alias address for compute site `site` on the site network."""
    return str(site_net.network_address + c.E3_HOST_OCTET_BASE + 1 + sites.index(site))


def global_name(site, filename):
    return f"{c.E3_NAMESPACE}/{site}/{filename}"


def file_names(n):
    return [f"data{i:03d}.root" for i in range(n)]


# --- worker: addresses, policy routing and per-cell netem ------------------------------
def worker_setup_commands(sites, matrix, site_net, dtn_ip, dev):
    """argv lists (run in order, each idempotent) that give every compute site its own
    source address and every (compute, storage) cell with RTT > 0 its own netem class:
    u32 on (source = compute site, destination = the DTN, port = the storage site's
    server). A compute site away from the redirector's site also sends its traffic to the
    redirector's port through the class of its cell with that site, so the redirect costs
    it that RTT. The qdisc starts with a delete, so applying twice leaves one copy."""
    prefix = site_net.prefixlen
    cmds = []
    for s in sites:
        addr, table, uid = site_address(site_net, sites, s), site_table(sites, s), site_uid(sites, s)
        cmds.append(["ip", "addr", "replace", f"{addr}/{prefix}", "dev", dev])
        cmds.append(["ip", "route", "replace", str(site_net), "dev", dev, "src", addr, "table", str(table)])
        # only the site's traffic to the DTN's XRootD leaves from its address: the starter
        # also moves the job's files as that user, and the shadow on the submit host admits
        # only the worker's own address (a file transfer from the alias was refused)
        cmds.append(["ip", "rule", "del", "priority", str(table)])
        cmds.append(["ip", "rule", "add", "priority", str(table), "uidrange", f"{uid}-{uid}",
                     "to", f"{dtn_ip}/32", "lookup", str(table)])
    active = [(x, y, r) for x, y, r in cells(matrix) if r > 0]
    bands = 3 + len(active)
    if bands > MAX_PRIO_BANDS:
        raise ValueError(f"{len(active)} delayed cells need {bands} prio bands (at most {MAX_PRIO_BANDS})")
    cmds.append(["tc", "qdisc", "del", "dev", dev, "root"])
    cmds.append(["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio", "bands", str(bands),
                 "priomap"] + ["1"] * 16)
    band_of = {}
    for i, (x, y, r) in enumerate(active):
        band = band_of[(x, y)] = 4 + i
        cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", prio_class(band), "handle", netem_handle(band),
                     "netem", "delay", f"{r:g}ms", "limit", "10000"])
        cmds.append(_port_filter(dev, site_address(site_net, sites, x), dtn_ip, server_port(sites, y), band))
    home = redirector_site(sites)
    for x in sites:
        if (x, home) in band_of:  # the cell (x, redirector's site) is delayed: so is the redirect
            cmds.append(_port_filter(dev, site_address(site_net, sites, x), dtn_ip, c.E3_REDIRECTOR_PORT,
                                     band_of[(x, home)]))
    return cmds


def _port_filter(dev, src, dst, port, band):
    """tc u32: packets from `src` to `dst`:`port` go to prio band `band`."""
    return ["tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            "match", "ip", "src", f"{src}/32", "match", "ip", "dst", f"{dst}/32",
            "match", "ip", "dport", str(port), "0xffff", "flowid", prio_class(band)]


def worker_teardown_commands(sites, site_net, dev):
    """Undo worker_setup_commands (each may fail harmlessly if already gone); the root qdisc
    is deleted here and the topology's own WAN re-applied by the suite afterwards."""
    cmds = [["tc", "qdisc", "del", "dev", dev, "root"]]
    for s in sites:
        addr, table, uid = site_address(site_net, sites, s), site_table(sites, s), site_uid(sites, s)
        cmds.append(["ip", "rule", "del", "priority", str(table)])
        cmds.append(["ip", "route", "flush", "table", str(table)])
        cmds.append(["ip", "addr", "del", f"{addr}/{site_net.prefixlen}", "dev", dev])
    return cmds


def script(commands, dev_ip, tolerant=("del", "flush")):
    """A shell script running argv lists on the interface holding `dev_ip` (@DEV@); deletes
    and flushes may fail (nothing to remove), anything else stops the script."""
    lines = ["set -e", f"dev=$(ip -o -4 addr show | awk '$4 ~ /^{dev_ip.replace('.', '[.]')}\\// {{print $2; exit}}')",
             f"[ -n \"$dev\" ] || {{ echo 'no interface has {dev_ip}' >&2; exit 3; }}"]
    for argv in commands:
        text = " ".join(shlex.quote(a) for a in argv).replace("@DEV@", '"$dev"')
        if any(a in tolerant for a in argv[:4]):
            text += " 2>/dev/null || true"
        lines.append(text)
    return "\n".join(lines) + "\n"


# --- users on the submit host and the worker ------------------------------------------
def users_script(sites, add=True):
    """Create (or remove) one system user per compute site with a fixed uid; idempotent."""
    lines = []
    for s in sites:
        u, uid = site_user(s), site_uid(sites, s)
        if add:
            lines.append(f"id -u {u} >/dev/null 2>&1 || useradd --system --no-create-home "
                         f"--uid {uid} --shell /usr/sbin/nologin {u}")
            lines.append(f"[ \"$(id -u {u})\" = {uid} ] || {{ echo '{u} exists with another uid' >&2; exit 4; }}")
        else:
            lines.append(f"id -u {u} >/dev/null 2>&1 && userdel {u} || true")
    return "\n".join(lines) + "\n"


def condor_users_conf(sites):
    """The submit host's schedd accepts the compute sites' users too (FS authentication)."""
    users = ", ".join(f"{site_user(s)}@$(UID_DOMAIN)" for s in sites)
    return f"# E3 (FAX) suite: its compute-site users may submit; removed by the suite teardown.\n" \
           f"ALLOW_WRITE = $(ALLOW_WRITE), {users}\n"


# --- the federation on the DTN ---------------------------------------------------------
def federation_units(sites):
    """systemd units, started in this order (manager first)."""
    p = c.E3_INSTANCE_PREFIX
    units = [f"cmsd@{p}redir", f"xrootd@{p}redir"]
    for s in sites:
        units += [f"cmsd@{p}-{s}", f"xrootd@{p}-{s}"]
    return units


def render_federation(host, sites):
    """/etc/xrootd/e3.cfg for the DTN, from provision/templates/xrootd/e3.cfg.j2."""
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROJECT_ROOT / "provision" / "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    ctx = {"host": host, "c": c.as_template_context(),
           "sites": [{"name": s, "port": server_port(sites, s)} for s in sites]}
    return env.get_template("xrootd/e3.cfg.j2").render(ctx)


def federation_script(sites, cfg_text):
    """DTN: config, instance links, read-only export folders, units started."""
    p = c.E3_INSTANCE_PREFIX
    inst = [f"{p}redir"] + [f"{p}-{s}" for s in sites]
    lines = ["set -e", f"cat > /etc/xrootd/e3.cfg <<'E3CFG'\n{cfg_text}E3CFG"]
    lines += [f"ln -sfn e3.cfg /etc/xrootd/xrootd-{i}.cfg" for i in inst]
    for s in sites:
        d = f"{c.E3_LOCALROOT}{c.E3_NAMESPACE}/{s}"
        lines.append(f"install -d -o root -g root -m 0755 {d}")
    lines += [units_command("restart", [u]) for u in federation_units(sites)]
    return "\n".join(lines) + "\n"


def federation_teardown_script(sites):
    p = c.E3_INSTANCE_PREFIX
    inst = [f"{p}redir"] + [f"{p}-{s}" for s in sites]
    return "\n".join([units_command("stop", reversed(federation_units(sites)), tolerant=True),
                      "rm -f /etc/xrootd/e3.cfg " + " ".join(f"/etc/xrootd/xrootd-{i}.cfg" for i in inst),
                      f"rm -rf {c.E3_LOCALROOT}"]) + "\n"


def data_script(sites, p):
    """DTN: the files of every storage site, written by ROOT in one run of the tool (one
    interpreter start for all sites; site i seeded 2 + i), root-owned 0644; one JSON line
    per file (with its site, basket and cluster facts)."""
    dirs = [f"{c.E3_LOCALROOT}{c.E3_NAMESPACE}/{s}" for s in sites]
    return "\n".join([
        "set -e",
        f"{c.E3_PYTHON} {c.E3_TOOL} write {' '.join(dirs)} --writer root --files {p['files_per_site']} "
        f"--events {p['events']} --branches {p['branches']} --basket-events {p['basket_events']} "
        f"--cluster-events {p['cluster_events']} --seed 2",
        "chmod 0644 " + " ".join(f"{d}/*.root" for d in dirs)]) + "\n"
