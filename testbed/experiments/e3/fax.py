"""E3: reading ROOT files over the WAN through an XRootD federation (seed 002, FAX) - a
storage-site x compute-site matrix of analysis jobs, a concurrency scan at one
off-diagonal RTT, the connectivity test, and local-disk / memory baselines.

Scaling to the testbed: every storage site is an XRootD data server on the DTN (own port,
own read-only export /e3/<site> under the RAID) whose cmsd subscribes to an E3 redirector
(also on the DTN), so a job opens /e3/<site>/<file> at the redirector and is redirected to
the owning server, as FAX does. Every compute site is a local user on the worker (tb-e3a,
...) with its own alias address: `ip rule uidrange` sends that user's packets through its
own routing table whose route carries `src` = the site's address, and a prio qdisc on the
worker's site interface steers (src = compute site, dst port = storage server) into a
netem class that delays by the RTT of that cell. The redirector belongs to site A: a
compute site's packets to its port cross the class of the site's cell with A, so a reader
at B or C pays its RTT to A on every open, as a FAX reader pays the RTT to the redirector's
site (each point's records say so: `redirect_rtt_ms`). The jobs of compute site X are
submitted by user tb-e3X, so HTCondor runs them as that user on the worker (same UID_DOMAIN).

The sites, their RTT matrix and the commands and files that build them are in e3_site;
here are the jobs (their description, the readers' reports), the figures, and
`FaxExperiment`, which runs the commands on the site. The Robot library FaxLibrary is thin
over both.
"""
import json
import statistics
import time

from testbed import PROJECT_ROOT
from testbed.experiments.e3 import e3_capacity, e3_figures, e3_rows
from testbed.experiments.e3.e3_site import (cells, condor_users_conf, data_script, federation_script,
                                         federation_teardown_script, global_name, redirect_rtt,
                                         render_federation, rtt_matrix, script, server_port, site_address, site_names,
                                         site_user, users_script, worker_setup_commands,
                                         worker_teardown_commands)
from testbed.harness.registry import DAY_S, MAX_RTT_MS, Experiment, Param
from testbed.machines import hostload
from testbed.machines.box import Box
from testbed.model import constants as c
from testbed.model.errors import ConfigError, RemoteError
from testbed.model.links import rtt_label
from testbed.services.gateway import Schedd, reconfig_command
from testbed.services.storage import xrdcp_command

EXPERIMENT = Experiment(
    name="e3", title="FAX: reading ROOT files over the WAN through an XRootD federation",
    seed="002_e7e8c88ce5ba9636", suite="robot/suites/e3_fax_wan_reads.robot",
    params={
        # one prio band per off-diagonal cell (e3_site.site_names)
        "sites": Param("int", "emulated sites (each storage + compute); 3 or 4", minimum=2, maximum=4),
        # an off-diagonal cell is remote: above the diagonal's 0 ms (e3_site.rtt_matrix)
        "rtts": Param("numbers", "off-diagonal RTTs (ms), given to the site pairs in order, cycling",
                      minimum=1, maximum=MAX_RTT_MS),
        "readers": Param("names", "readers of the matrix: root (ROOT, TTreeCache) and uproot; the first "
                                  "also reads the concurrency, connectivity and baseline jobs", rows=True),
        "extra_reader_rows": Param("int", "compute sites (a, b, ...) whose matrix row the readers after "
                                          "the first read (0: every row)", minimum=0, maximum=4),
        # a reader's cache is in the worker's memory
        "cache_mbs": Param("numbers", "read-ahead cache sizes (MB) of the matrix (ROOT: TTreeCache)", rows=True,
                           minimum=1, maximum=1024),
        "learn_entries": Param("ints", "TTreeCache learning phases (entries; 0 = none) of the learning rows; "
                                       f"{c.E3_ROOT_LEARN_ENTRIES} (ROOT's default) is the matrix's", rows=True,
                               minimum=0, maximum=10**7),
        "concurrency": Param("ints", "concurrent jobs of the concurrency scan", rows=True, minimum=1, maximum=256),
        # one of `rtts` (e3_site.concurrency_cell)
        "concurrency_rtt": Param("float", "RTT (ms) of the cell the concurrency scan runs in",
                                 minimum=1, maximum=MAX_RTT_MS),
        # the files are on the DTN's RAID (`testbed plan --for e3:SCALE` sizes its members)
        "files_per_site": Param("int", "ROOT files per storage site", minimum=1, maximum=100),
        "events": Param("int", "events per file", minimum=1, maximum=10**7),
        "branches": Param("int", "branches of the TTree", minimum=1, maximum=10000),
        "read_branches": Param("int", "branches the analysis reads (the paper: 512 of 8543)", minimum=1, maximum=10000),
        "basket_events": Param("int", "values per basket buffer (ROOT's writer: buffers of 4x this many bytes)",
                               minimum=1, maximum=10**6),
        "cluster_events": Param("int", "events per cluster of the files (0: one cluster)", minimum=0, maximum=10**7),
        "connectivity_every": Param("int", "the connectivity test reads every n-th event (10: the slides' 10%)",
                                    minimum=1, maximum=10**7),
        "read_every": Param("int", "the matrix, learning, concurrency and baseline jobs read every n-th event "
                                   "(1: all; the baskets, bytes and round trips stay those of every event)",
                            minimum=1, maximum=10**7),
        "job_timeout_s": Param("int", "seconds a cell's jobs may take", minimum=1, maximum=DAY_S),
    },
    scales={
        # CI on `small` under TCG, set-up included: 2 sites (2x2 cells, one RTT), one cache
        # size, one tiny file per site (300 branches x 2000 events, ~1.8 MB), concurrency 1
        # and 2 (3 sites and 3 RTTs took 616 s: 30 s a cell, 150 s of set-up); uproot reads
        # the matrix and the other tests, ROOT only site a's row (one local, one remote cell).
        "ci": {"sites": 2, "rtts": [20], "readers": ["uproot", "root"], "extra_reader_rows": 1,
               "cache_mbs": [10], "learn_entries": [c.E3_ROOT_LEARN_ENTRIES], "concurrency": [1, 2],
               "concurrency_rtt": 20.0, "files_per_site": 1, "events": 2000, "branches": 300,
               "read_branches": 40, "basket_events": 500, "cluster_events": 0, "connectivity_every": 10,
               "read_every": 1, "job_timeout_s": 300},
        # quick: files that need the cache. 96 of 192 branches x 200000 events, 4-byte values
        # at ~2.2 B each after ZLIB-4 (measured): the selection is ~42 MB of a ~85 MB file,
        # above the 30 MB cache; one cluster, baskets of 8000-value buffers (7981 events,
        # ~19.5 KB zipped), so a fill is bounded by the cache, not the cluster. ROOT 6.40's
        # TTreeCache takes up to twice its size per fill: over root:// (XRootD 5 on the
        # loopback) 30 MB read the selection in 2 requests (the learning fill, then the
        # rest), 10 MB in 10 (3 fills, 7 baskets it missed). Half the bytes selected (the
        # paper: 13%) keeps the files writable under TCG (ROOT wrote one in 9 s natively).
        # Every job but the connectivity test reads every 10th event (`read_every`): a
        # basket holds ~8000 events, so the cache still fetches every basket of the
        # selection (the same bytes and round trips), while the emulated CPU's per-entry work
        # drops tenfold (the reference's e3.events_per_s gives a job's time at either count).
        "quick": {"sites": 3, "rtts": [5, 40, 80], "readers": ["root", "uproot"], "extra_reader_rows": 0,
                  "cache_mbs": [10, 30], "learn_entries": [100, 1, 0], "concurrency": [1, 2, 4, 8],
                  "concurrency_rtt": 5.0, "files_per_site": 1, "events": 200000, "branches": 192,
                  "read_branches": 96, "basket_events": 8000, "cluster_events": 0, "connectivity_every": 10,
                  "read_every": 10, "job_timeout_s": 900},
        "full": {"sites": 4, "rtts": [5, 20, 40, 80], "readers": ["root", "uproot"], "extra_reader_rows": 0,
                 "cache_mbs": [10, 30], "learn_entries": [100, 1, 0],
                 "concurrency": [1, 2, 4, 8, 16], "concurrency_rtt": 5.0, "files_per_site": 2,
                 "events": 400000, "branches": 256, "read_branches": 96, "basket_events": 8000,
                 "cluster_events": 0, "connectivity_every": 10, "read_every": 1,
                 "job_timeout_s": 1800},
    },
    profiles=("default",),
    metrics=("e3.events_per_s", "e3.cpu_eff", "e3.mb_per_s", "e3.read_calls", "e3.bytes_read_mb",
             "e3.cache_fills", "e3.startup_s", "e3.rtt_measured", "e3.redirect_rtt_measured", "e3.off_over_diag",
             "e3.concurrency_events_per_s", "e3.concurrency_spread", "e3.concurrency_cpu_wait",
             "e3.concurrency_host_cpu_wait", "e3.concurrency_cpu_wait_max", "e3.connectivity_mb_per_s",
             "e3.baseline_events_per_s", "e3.baseline_mb_per_s", "e3.baseline_cpu_eff",
             "e3.disk_over_memory", "e3.file_bytes", "e3.job_max_rss_mb", "e3.job_private_mb"),
    x_params=("rtt_ms", "jobs", "cache_mb", "learn_entries"),
    paper="results/paper/e3.yaml",
    consistent=lambda p: None if p["read_branches"] <= p["branches"] else
    f"read_branches ({p['read_branches']}) must be at most branches ({p['branches']}): the analysis reads branches the tree has",
    figures=e3_figures.figures,    # the storage x compute matrix as heatmaps
    tables=e3_figures.text,        # ... and as text tables
    doc_figures=e3_figures.DOC_FIGURES,   # three of the heatmaps on its docs page
    # The storage sites are XRootD servers on the DTN, the compute sites users on the worker,
    # their jobs matched by the CMs and started through CCB from the submit host. The origin
    # (the remote site of E2) holds none of E3's files: it may be paused.
    uses=("submit", "cm", "ccb", "worker", "dtn"),
    measured=("dtn", "worker"),      # --pin: the federation's servers apart from the readers
    rows=e3_rows.ROWS, points=e3_rows.POINTS,
    capacity=e3_capacity.site_for,   # testbed plan: the hosts its parameters need
)


# --- jobs --------------------------------------------------------------------------------
def cache_mb_of(value, where):
    """A cache size in MB from a suite row or a parameter (text or number); a ConfigError
    naming the row when it does not parse or is not positive."""
    try:
        mb = float(str(value).strip().removesuffix("MB").removesuffix("mb"))
    except ValueError:
        mb = None
    if mb is None or not mb > 0 or mb != mb or mb == float("inf"):
        raise ConfigError(where, "cache_mb", f"{value!r} is not a cache size in MB (a number > 0 like 10)")
    return mb


def reader_of(value, where):
    if value not in c.E3_READERS:
        raise ConfigError(where, "reader", f"{value!r} is not a reader ({', '.join(c.E3_READERS)})")
    return value


def main_reader(p):
    """The reader of the concurrency scan, the connectivity test and the baselines."""
    return p["readers"][0]


def reader_reads_row(p, reader, compute, sites):
    """Whether `reader` reads compute site `compute`'s row of the matrix: the first reader
    every row, the others the first `extra_reader_rows` rows (0: every row)."""
    n = int(p["extra_reader_rows"])
    return reader == main_reader(p) or n <= 0 or sites.index(compute) < n


def reader_arguments(url, p, cache_mb, fraction=1.0, label="", reader="uproot", every=1,
                     learn_entries=c.E3_ROOT_LEARN_ENTRIES):
    args = (f"{c.E3_TOOL} read {url} --reader {reader_of(reader, label or 'job')} "
            f"--branches {p['read_branches']} --fraction {fraction:g} --every {int(every)} "
            f"--cache-mb {cache_mb_of(cache_mb, label or 'job'):g} --label {label or 'job'}")
    if reader == "root":
        args += f" --learn-entries {int(learn_entries)}"
    return args


def job_description(urls, p, cache_mb, worker_machine, fraction=1.0, label="", reader="uproot", every=1,
                    learn_entries=c.E3_ROOT_LEARN_ENTRIES):
    """One job per URL: the box's E3 python on the worker, nothing transferred in; one queue
    statement over the readers' argument lines (HTCondor 25 refuses a second queue)."""
    lines = [f"executable = {c.E3_PYTHON}", "transfer_executable = False", "universe = vanilla",
             "should_transfer_files = YES", "when_to_transfer_output = ON_EXIT", "log = job.log",
             "output = out.$(Process)", "error = err.$(Process)", "request_memory = 32",
             "request_disk = 1024", f'requirements = (Machine == "{worker_machine}")', "+E3Role = \"e3\""]
    lines += ['arguments = "$(reader_args)"', "queue reader_args from ("]
    lines += [f"  {reader_arguments(url, p, cache_mb, fraction, label, reader, every, learn_entries)}" for url in urls]
    return "\n".join(lines + [")"]) + "\n"


def expected_events(p, fraction=1.0, every=1):
    """Events a job reads: every `every`-th of the first `fraction` of a file."""
    stop = max(1, int(round(p["events"] * float(fraction))))
    return -(-stop // max(1, int(every)))


def box_name():
    """The box this checkout builds (what a guest without ROOT needs)."""
    return Box().name


def job_failure(report, host, box_name):
    """One line for a job that reported an error (None when it did not): a guest without
    ROOT names the box and how to rebuild it; a read names the URL."""
    if not report or "error" not in report:
        return None
    if report.get("kind") == "no-root":
        return (f"{report.get('host', host)} has no ROOT in {c.E3_PYTHON} ({report['error']}): its box predates "
                f"the E3 venv's `root` wheel; run `testbed box build` (builds {box_name}) and bring the site "
                f"up again")
    return f"E3 job {report.get('label', '')} ({report.get('reader', '')}) failed: {report['error']}"


def parse_report(text):
    """The reader's JSON object from a job's stdout (the last line that parses), or None."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def parse_data_lines(text):
    """{(site, file): {bytes, sha256, events, branches}} from data_script's output."""
    out = {}
    for line in text.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out[(d["site"], d["file"])] = d
    return out


def check_reports(reports, expected_events, expected_digests=None):
    """Problems with the jobs' reports: a missing report, an error, a wrong event count,
    a checksum of the data read that differs from the reference reading of the same file."""
    problems = []
    for key, r in reports.items():
        if r is None:
            problems.append(f"{key}: no report")
            continue
        if "error" in r:
            problems.append(f"{key}: {r['error']}")
            continue
        if r["events"] != expected_events:
            problems.append(f"{key}: {r['events']} events, expected {expected_events}")
        want = (expected_digests or {}).get(r["url"].rsplit("/", 1)[-1])
        if want and r["digest"] != want:
            problems.append(f"{key}: digest {r['digest']} != {want} (wrong data)")
    return problems


def digest_disagreements(reports, seen):
    """Jobs (of any reader) that read the same URL with the same every-n and fraction must
    have read the same values: `seen` {(url, every, fraction): digest} is updated; returns
    the URLs whose digest differs from an earlier job's."""
    bad = []
    for r in reports:
        key = (r["url"], r.get("every", 1), r.get("fraction", 1.0))
        if seen.setdefault(key, r["digest"]) != r["digest"]:
            bad.append(f"{r['url']} ({r.get('reader')}: {r['digest']} != {seen[key]})")
    return bad


# --- figures -------------------------------------------------------------------------------
def reader_of_record(rec):
    """A record's reader (records of runs before the ROOT reader: uproot)."""
    return rec.get("params", {}).get("reader", "uproot")


def is_matrix_point(rec, cache_mb, reader):
    """A matrix cell's record at this cache size and reader, read with the default learning."""
    pr = rec.get("params", {})
    return float(pr.get("cache_mb", -1)) == float(cache_mb) and reader_of_record(rec) == reader and \
        float(pr.get("learn_entries", c.E3_ROOT_LEARN_ENTRIES)) == c.E3_ROOT_LEARN_ENTRIES


def cell_table(records, metric, sites, cache_mb, fmt="{:.0f}", reader="uproot"):
    """Text table storage (rows) x compute (columns) of the mean of `metric` at cache_mb."""
    vals = {}
    for r in records:
        pr = r.get("params", {})
        if r["name"] == metric and is_matrix_point(r, cache_mb, reader):
            vals.setdefault((pr["storage"], pr["compute"]), []).append(r["value"])
    head = "storage\\compute " + " ".join(f"{s:>7}" for s in sites)
    rows = [head]
    for y in sites:
        cellv = [statistics.mean(vals[(y, x)]) if (y, x) in vals else None for x in sites]
        rows.append(f"{y:>15} " + " ".join(f"{fmt.format(v):>7}" if v is not None else f"{'-':>7}" for v in cellv))
    return "\n".join(rows)


def off_over_diag(records, cache_mb, reader="uproot"):
    """{rtt: mean off-diagonal events/s / mean diagonal events/s} at cache_mb, one reader."""
    diag, off = [], {}
    for r in records:
        pr = r.get("params", {})
        if r["name"] != "e3.events_per_s" or not is_matrix_point(r, cache_mb, reader):
            continue
        if pr["storage"] == pr["compute"]:
            diag.append(r["value"])
        else:
            off.setdefault(float(pr["rtt_ms"]), []).append(r["value"])
    if not diag or statistics.mean(diag) <= 0:
        return {}
    d = statistics.mean(diag)
    return {rtt_label(rtt): statistics.mean(v) / d for rtt, v in sorted(off.items())}


def spread(values):
    """max / min events/s per job (1.0 = perfectly flat)."""
    values = [v for v in values if v is not None]
    if not values or min(values) <= 0:
        return None
    return max(values) / min(values)


def tcp_rtt_script(probes, count=9):
    """Python (guest) that times TCP connects from each source address to (dtn, port) and
    prints one JSON line {src, port, ms} with the fastest (the emulator only adds delay: a
    median of 5 still read 6.7 ms for a 0 ms cell whose base was 1.9 ms)."""
    return ("python3 - <<'PY'\nimport json, socket, time\n"
            f"probes = {json.dumps(probes)}\n"
            "for src, dst, port in probes:\n"
            "    t = []\n"
            f"    for _ in range({count}):\n"
            "        s = socket.socket(); s.bind((src, 0)); s.settimeout(5)\n"
            "        t0 = time.perf_counter(); s.connect((dst, port)); t.append((time.perf_counter() - t0) * 1000); s.close()\n"
            "        time.sleep(0.05)\n"
            "    print(json.dumps({'src': src, 'port': port, 'ms': min(t)}))\nPY\n")


class FaxExperiment:
    """Runs E3's commands on the site: federation and data on the DTN, users and policy
    routing on the worker, jobs through the submit host's schedd."""

    def __init__(self, topo, ssh, params):
        self.topo, self.ssh, self.p = topo, ssh, params
        self.sites = site_names(params["sites"])
        self.matrix = rtt_matrix(self.sites, params["rtts"])
        self.dtn = topo.role_host("dtn")
        self.worker = topo.with_role("worker")[0]
        self.submit = topo.role_host("submit")

    @property
    def worker_machine(self):
        return f"{self.worker.name}.{self.topo.trust_domain}"

    def redirector_url(self, site, filename):
        return f"root://{self.dtn.name}:{c.E3_REDIRECTOR_PORT}/{global_name(site, filename)}"

    def redirect_rtt(self, compute):
        """The RTT (ms) compute site `compute`'s opens pay at the redirector (e3_site.redirect_rtt)."""
        return redirect_rtt(self.matrix, self.sites, compute)

    def push_tool(self):
        """The guest tool's files (provision/guest) into E3_TOOL_DIR on the DTN and the worker."""
        files = {name: (PROJECT_ROOT / "provision" / "guest" / name).read_bytes() for name in c.E3_TOOL_FILES}
        for h in {self.dtn.name, self.worker.name}:
            for name, data in files.items():
                path = f"{c.E3_TOOL_DIR}/{name}"
                self.ssh.run(h, f"install -d {c.E3_TOOL_DIR} && cat > {path} && chmod 0755 {path}", input_bytes=data)

    def start_federation(self):
        self.ssh.run(self.dtn.name, federation_script(self.sites, render_federation(self.dtn, self.sites)),
                     timeout=180)

    def write_data(self):
        out = self.ssh.run(self.dtn.name, data_script(self.sites, self.p), timeout=1800).stdout
        return parse_data_lines(out)

    def prepare_worker(self):
        cmds = worker_setup_commands(self.sites, self.matrix, self.topo.site_net, self.dtn.site_ip, "@DEV@")
        self.ssh.run(self.worker.name, users_script(self.sites) + script(cmds, self.worker.site_ip), timeout=120)
        conf = condor_users_conf(self.sites)
        self.ssh.run(self.submit.name, users_script(self.sites) +
                     f"cat > {c.E3_CONDOR_CONF} <<'E3CONF'\n{conf}E3CONF\n{reconfig_command()}\n"
                     f"install -d -m 0755 {c.E3_LOCAL_DIR}", timeout=120)

    def restore(self):
        """Everything the suite added, removed (each step tolerant); the caller re-applies the WAN."""
        cmds = worker_teardown_commands(self.sites, self.topo.site_net, "@DEV@")
        res = self.ssh.run_many({
            self.worker.name: script(cmds, self.worker.site_ip) + users_script(self.sites, add=False) +
            f"umount {c.E3_SHM_DIR} 2>/dev/null || true; rm -rf {c.E3_LOCAL_DIR} {c.E3_SHM_DIR} /usr/local/lib/tb-e3",
            self.submit.name: f"rm -f {c.E3_CONDOR_CONF}; {reconfig_command()} 2>&1 || true\n"
                              f"rm -rf {c.E3_LOCAL_DIR}\n" + users_script(self.sites, add=False),
            self.dtn.name: federation_teardown_script(self.sites) + "rm -rf /usr/local/lib/tb-e3",
        }, timeout=180)
        return {h: r.ok for h, r in res.items()}

    def measure_cell_rtts(self):
        """({(compute, storage): fastest TCP connect ms}, {compute: ms to the redirector's
        port}) from each site's source address."""
        net = self.topo.site_net
        ports = {y: server_port(self.sites, y) for y in self.sites}
        probes = [[site_address(net, self.sites, x), self.dtn.site_ip, ports[y]] for x, y, _ in cells(self.matrix)]
        probes += [[site_address(net, self.sites, x), self.dtn.site_ip, c.E3_REDIRECTOR_PORT] for x in self.sites]
        out = self.ssh.run(self.worker.name, tcp_rtt_script(probes), timeout=300).stdout
        by = {(d["src"], d["port"]): d["ms"] for d in map(json.loads, filter(None, out.splitlines()))}
        return ({(x, y): by.get((site_address(net, self.sites, x), ports[y])) for x, y, _ in cells(self.matrix)},
                {x: by.get((site_address(net, self.sites, x), c.E3_REDIRECTOR_PORT)) for x in self.sites})

    def worker_vcpu_wait(self, action):
        """(what `action()` returns, the largest share of its wall time one of the worker's
        vCPU threads waited for a core of this host; None where the worker is not a VM of
        this machine)."""
        before, t0 = hostload.vcpu_schedstat(self.topo, self.worker.name), time.monotonic()
        result = action()
        after = hostload.vcpu_schedstat(self.topo, self.worker.name)
        return result, hostload.vcpu_wait_share(before, after, time.monotonic() - t0)

    def run_jobs(self, compute, urls, cache_mb, fraction=1.0, label="cell", reader="uproot", every=1,
                 learn_entries=c.E3_ROOT_LEARN_ENTRIES):
        """Submit one job per URL as compute site `compute`'s user, wait, return [report].
        A job that reported an error (no ROOT on the guest, a URL that does not open) is a
        RemoteError with its one line and the end of its stderr."""
        user = site_user(compute)
        d = f"{c.E3_LOCAL_DIR}/{label}-{compute}-{int(time.time() * 1000)}"
        desc = job_description(urls, self.p, cache_mb, self.worker_machine, fraction, label, reader, every,
                               learn_entries)
        schedd = Schedd(self.ssh, self.submit.name)
        schedd.submit_as(user, d, desc)
        out = self.ssh.run(self.submit.name, f"cd {d} && {Schedd.wait_log_command('job.log', self.p['job_timeout_s'])}"
                           f"; rc=$?; for f in out.*; do echo \"#$f\"; cat $f; "
                           f"[ -s err.${{f#out.}} ] && tail -n 3 err.${{f#out.}} | sed 's/^/#err /'; done; "
                           f"exit $rc", check=False, timeout=self.p["job_timeout_s"] + 60)
        if not out.ok:
            self.ssh.run(self.submit.name, f"cd {d} && " + Schedd.rm_quiet_command('E3Role =?= "e3"', user),
                         check=False)
            raise RemoteError(f"E3 jobs of site {compute} not done in {self.p['job_timeout_s']} s ({label})")
        chunks = out.stdout.split("\n#out.")
        reports = [parse_report(ch) for ch in chunks if ch.strip()]
        errors = [line[5:] for line in out.stdout.splitlines() if line.startswith("#err ")]
        tail = ("; its stderr ends: " + " | ".join(errors[-3:])) if errors else ""
        for r in reports:
            failed = job_failure(r, self.worker.name, box_name())
            if failed:
                raise RemoteError(failed + (tail if r.get("kind") != "no-root" else ""))
        if any(r is None for r in reports) and errors:
            raise RemoteError(f"E3 job of site {compute} ({label}) reported nothing{tail}")
        return reports

    def worker_memory_available_mb(self):
        return int(self.ssh.run(self.worker.name, c.MEM_AVAILABLE_CMD, timeout=60).stdout.strip() or 0)

    def stage_local(self, site, filename):
        """Baselines: a copy of one file on the worker's disk and one in a tmpfs (not /dev/shm:
        HTCondor gives each job a private one),
        readable by the compute site's user; the page cache is dropped for the disk copy."""
        url = self.redirector_url(site, filename)
        disk, shm = f"{c.E3_LOCAL_DIR}/{filename}", f"{c.E3_SHM_DIR}/{filename}"
        self.ssh.run(self.worker.name, f"set -e; install -d -m 0755 {c.E3_LOCAL_DIR} {c.E3_SHM_DIR}; "
                     f"mountpoint -q {c.E3_SHM_DIR} || mount -t tmpfs -o size=50%,mode=0755 tmpfs {c.E3_SHM_DIR}; "
                     f"{xrdcp_command(url, disk)}; cp {disk} {shm}; chmod 0644 {disk} {shm}; sync; "
                     f"echo 1 > /proc/sys/vm/drop_caches", timeout=300)
        return disk, shm


def render_summary(records):
    """The benchmark's text: cell tables per reader and cache size, ratios per RTT, the
    learning rows, spread, baselines."""
    cells = [r for r in records if r["name"] == "e3.events_per_s"]
    sites = sorted({r["params"][k] for r in cells for k in ("storage", "compute")})
    caches = sorted({float(r["params"]["cache_mb"]) for r in cells})
    out = []
    for reader in sorted({reader_of_record(r) for r in cells}):
        for cache in caches:
            out += [f"events/s, {reader}, cache {cache:g} MB",
                    cell_table(records, "e3.events_per_s", sites, cache, reader=reader),
                    f"CPU efficiency [%], {reader}, cache {cache:g} MB",
                    cell_table([dict(r, value=r["value"] * 100) for r in records if r["name"] == "e3.cpu_eff"],
                               "e3.cpu_eff", sites, cache, reader=reader)]
            ratios = off_over_diag(records, cache, reader)
            out.append("off-diagonal / diagonal: " + (", ".join(f"{rtt:g} ms {v:.2f}" for rtt, v in ratios.items())
                                                      or "no cells"))
    for r in records:
        pr = r.get("params", {})
        if r["name"] == "e3.read_calls" and "learn_entries" in pr:
            out.append(f"read calls {pr.get('compute')}<-{pr.get('storage')} ({pr.get('reader')}, "
                       f"{pr.get('cache_mb')} MB, learning {pr['learn_entries']}): {r['value']:.0f}")
    conc = {}
    for r in records:
        if r["name"] == "e3.concurrency_events_per_s":
            conc.setdefault(int(r["params"]["jobs"]), []).append(r["value"])
    for n, v in sorted(conc.items()):
        out.append(f"concurrency {n:>3} jobs: mean {statistics.mean(v):.0f} ev/s per job "
                   f"(min {min(v):.0f}, max {max(v):.0f})")
    s = spread([x for v in conc.values() for x in v])
    out.append(f"concurrency spread max/min events/s per job: {s:.2f}" if s else "concurrency spread: no data")
    for r in records:
        if r["name"] == "e3.baseline_events_per_s":
            out.append(f"baseline {r['params']['source']}: {r['value']:.0f} ev/s")
    if not records:
        out.append("no E3 metrics in this run")
    return "\n".join(out)
