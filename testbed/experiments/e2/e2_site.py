"""E2: site in a box (seed 001) - XRootD reads through the DTN with and without
its caching proxy, RAID6 writes vs md's stripe cache, HTCondor-C job routing.

Scaling to the testbed: the paper's 100 remote files are the origin's files
(the topology sets how many and how big); clients run on the worker VMs and
read through the DTN to /dev/null; the RAID6 write test keeps the paper's 10
parallel writers with a size per writer set by the scale.

The RAID members are disks of their own (testbed/machines/disks.py): each has
the topology's MB/s and IOPS limits (or the run's `--set member_mb_per_s=... member_iops=...`;
0 lifts a limit), checked with read-only fio on one member; the RAID writes run with
those limits and, in the same run, with the limits lifted, so the stripe cache's speed-up
is measured with and without emulated spindles.
"""
import json
import re
import shlex

from testbed.experiments.e2 import cache as e2_cache, e2_capacity, e2_figures, e2_rows
from testbed.experiments.e2.reads import assign_reads, client_script, parallel_clients_script, parse_client_lines
from testbed.harness.registry import DAY_S, MAX_RTT_MS, Experiment, Param, ReleaseFinding
from testbed.machines import disks
from testbed.model.constants import (CACHE_DIR, CACHE_UNIT, RAID_MOUNT, RAID_TEST_DIR, ROUTE_GROUP, SUBMIT_HOME,
                                     SUBMIT_USER, XROOTD_CACHE_PORT, XROOTD_DIRECT_PORT)
from testbed.network.sampler import Sampler
from testbed.services.storage import XrootdUnits
from testbed.results import compare
from testbed.results.intervals import mean

UNLIMITED = disks.Limits(0, 0)  # every RAID member's limits lifted: the host's disk as it is
from testbed.model.errors import RemoteError

EXPERIMENT = Experiment(
    name="e2", title="Site in a box", seed="001_a7ff0cb7e5a8d9a4",
    suite="robot/suites/e2_site_in_a_box.robot",
    params={
        "clients": Param("ints", "parallel xrdcp clients per read round", rows=True, minimum=1, maximum=100),
        "reads_per_client": Param("int", "random origin files each client reads", minimum=1, maximum=1000),
        "writers": Param("int", "parallel dd writers on the RAID6", minimum=1, maximum=100),
        # the writers' files are on the RAID (`testbed plan --for e2:SCALE` sizes its members)
        "write_mb": Param("int", "MB each writer writes", minimum=1, maximum=1024),
        "origin_rtt_ms": Param("float", "RTT DTN <-> origin, ms", minimum=0, maximum=MAX_RTT_MS),
        # the topology's own bounds of disks.mb_per_s and disks.iops (model/topology.py)
        "member_mb_per_s": Param("float", "each RAID member's MB/s limit for the run (0: none; "
                                          "unset: the topology's disks.mb_per_s)", optional=True,
                                 minimum=0, maximum=100000),
        "member_iops": Param("int", "each RAID member's IOPS limit for the run (0: none; "
                                    "unset: the topology's disks.iops)", optional=True, minimum=0, maximum=10**6),
        "unlimited_rows": Param("int", "1: also run the RAID writes with the member limits lifted "
                                       "(the speed-up without emulated spindles); 0: not", minimum=0, maximum=1),
        # fio's --runtime=0 is no time limit at all
        "fio_seconds": Param("int", "seconds of each read-only fio check of one member", minimum=1, maximum=DAY_S),
        "rw_readers": Param("int", "readers of the RAID read/write competition (direct 1 MiB reads)",
                            minimum=1, maximum=100),
        "rw_seconds": Param("int", "seconds of each phase of the read/write competition (reads alone, "
                                   "writes alone, both at once)", minimum=1, maximum=DAY_S),
        "latency_rows": Param("int", "1: also time one read each way (pass-through, cache miss) with the "
                                     "origin at 0 ms and at origin_rtt_ms: the round trips per MB each path "
                                     "waits for; 0: not", minimum=0, maximum=1),
        "client_pgread": Param("int", "0: the clients read with kXR_read, as the paper's XRootD 4 did; "
                                      "1: with kXR_pgread, XRootD 5's default (through the pass-through "
                                      "proxy an XrdCl before 5.9.2 re-reads pages, one origin round trip each)",
                               minimum=0, maximum=1),
        "array_bound_rows": Param("int", "1: also read through the cache with the members limited so that the "
                                         "array writes slower than this run's network by the paper's ratio "
                                         "(60 or 700 MB/s against 1300); 0: not", minimum=0, maximum=1),
        # with one file a client the DTN's page cache takes the whole fill and the first reads
        # run at the network's rate; with more, the later files wait on the array
        "bound_reads_per_client": Param("int", "origin files each client reads in the array-bound rows (the "
                                               "cache fills at the array's rate, so few)", minimum=1, maximum=100),
        "bound_write_seconds": Param("int", "seconds each calibrating RAID write of the array-bound rows aims "
                                            "at (its MB follow from the target rate)", minimum=5, maximum=DAY_S),
    },
    scales={
        # CI: minutes on the small site under TCG: two clients reading one file each,
        # the paper's 10 writers with 32 MB each (at 8 MB, process start-up under TCG was much of the wall time)
        # the member limits are the topology's unless --set; fio runs a few seconds per check
        "ci": {"clients": [2], "reads_per_client": 1, "writers": 10, "write_mb": 32, "origin_rtt_ms": 20,
               "member_mb_per_s": None, "member_iops": None, "unlimited_rows": 1, "fio_seconds": 3,
               "rw_readers": 4, "rw_seconds": 8, "latency_rows": 0, "client_pgread": 0,
               "array_bound_rows": 0, "bound_reads_per_client": 1, "bound_write_seconds": 20},
        "quick": {"clients": [1, 2, 4], "reads_per_client": 2, "writers": 10, "write_mb": 64,
                  "origin_rtt_ms": 20, "member_mb_per_s": None, "member_iops": None, "unlimited_rows": 1,
                  "fio_seconds": 5, "rw_readers": 4, "rw_seconds": 15, "latency_rows": 1,
                  "client_pgread": 0, "array_bound_rows": 1, "bound_reads_per_client": 2,
                  "bound_write_seconds": 20},
        "full": {"clients": [1, 2, 4, 10], "reads_per_client": 5, "writers": 10, "write_mb": 128,
                 "origin_rtt_ms": 20, "member_mb_per_s": None, "member_iops": None, "unlimited_rows": 1,
                 "fio_seconds": 10, "rw_readers": 10, "rw_seconds": 30, "latency_rows": 1,
                 "client_pgread": 0, "array_bound_rows": 1, "bound_reads_per_client": 3,
                 "bound_write_seconds": 30},
    },
    profiles=("default", "raid-stripe-32768"), row_profiles=("default", "raid-stripe-32768"),
    metrics=("e2.uncached_rate", "e2.uncached_per_client_rate", "e2.dtn_tx_rate", "e2.first_read_rate",
             "e2.first_read_per_client_rate", "e2.repeat_read_rate", "e2.repeat_read_per_client_rate",
             "e2.raid_read_rate_during", "e2.raid_write_rate_during", "e2.raid_write_rate",
             "e2.raid_write_rate_over_time", "e2.dtn_local_read_rate", "e2.hit_over_local_read",
             "e2.cached_over_uncached", "e2.raid_write_speedup", "e2.single_read_seconds",
             "e2.round_trips_per_mb", "e2.submit_to_start",
             "e2.member_seq_mb_per_s", "e2.member_rand_iops", "e2.member_seq_over_limit",
             "e2.member_iops_over_limit", "e2.raid_rw_read_rate", "e2.raid_rw_write_rate",
             "e2.raid_read_under_writes", "e2.raid_write_under_reads", "e2.array_bound_network_rate",
             "e2.array_over_network"),
    x_params=("t", "clients", "writers"),
    paper="results/paper/e2.yaml",
    doc_figures=e2_figures.DOC_FIGURES,   # the RAID writes and the cache's reads on its docs page
    # the pass-through proxy's round trips per MB, with and without the client's pgread: an
    # XrdCl defect fixed in 5.9.2 and 6.0.0
    release_findings=(ReleaseFinding("e2.round_trips_per_mb", "round trips per MB read at a 20 ms origin",
                                     where={"origin_rtt_ms": "20.0"}, page="upstream/xrootd-pgread-pass-through.md"),),
    rows=e2_rows.ROWS, points=e2_rows.POINTS,
    # Every role: clients on the workers read the origin's files through the DTN; jobs go from
    # the submit host to the DTN's schedd (HTCondor-C) and flock on to the CMs' pool via CCB.
    uses=("submit", "cm", "ccb", "worker", "dtn", "origin"),
    measured=("dtn", "worker"),      # --pin: the RAID and caching proxy apart from the readers
    capacity=e2_capacity.site_for,   # testbed plan: the hosts its parameters need
)
# fio's two checks of one member: sequential 1 MiB reads (MB/s) and random 4 KiB reads (IOPS)
FIO_CHECKS = {"seq": ("read", "1M", 4), "rand": ("randread", "4k", 16)}


def parse_dd(text):
    """Seconds and bytes of every `dd` summary line (GNU dd, LC_ALL=C)."""
    out = []
    for m in re.finditer(r"^(\d+) bytes .* copied, ([0-9.]+) s", text, re.MULTILINE):
        out.append((int(m.group(1)), float(m.group(2))))
    return out


def fio_command(device, check, seconds):
    """fio reading one RAID member directly (O_DIRECT, past the guest's page cache). Only
    reads: `--readonly` makes fio refuse any write, so this is safe while md has the member."""
    rw, bs, depth = FIO_CHECKS[check]
    return (f"fio --readonly --name=member-{check} --filename={shlex.quote(device)} --rw={rw} --bs={bs} "
            f"--iodepth={depth} --ioengine=libaio --direct=1 --time_based --runtime={int(seconds)} "
            f"--output-format=json")


def parse_fio(text):
    """{'mb_per_s', 'iops'} of the read side of fio's JSON (warnings before it are skipped)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("fio printed no JSON")
    job = json.loads(text[start:])["jobs"][0]["read"]
    return {"mb_per_s": float(job["bw_bytes"]) / 1e6, "iops": float(job["iops"])}


# The read/write competition on the array (the paper, after the stripe-cache fix: reads from
# the cache did not pass ~700 MB/s while the cache was being written): three phases of the same
# length on md0's filesystem, reads alone, writes alone, both at once.
RW_PHASES = {"read": (True, False), "write": (False, True), "both": (True, True)}


def rw_jobfile(directory, readers, writers, file_mb, seconds, phase):
    """A fio job file for one phase of the competition. Readers read files of their own with
    O_DIRECT (past the DTN's page cache, so every byte comes off the members); writers write
    files of their own through the page cache as the cache proxy and dd do, with an fdatasync
    every 8 MiB so the array, not memory, takes them. All jobs start together and run for
    `seconds`; the files are laid out before the clock starts."""
    do_read, do_write = RW_PHASES[phase]
    lines = ["[global]", f"directory={directory}", "bs=1M", f"size={int(file_mb)}M", "time_based",
             f"runtime={int(seconds)}", "ioengine=psync", "group_reporting=0", ""]
    if do_read:
        lines += ["[reader]", "rw=read", "direct=1", f"numjobs={int(readers)}", "filename_format=r.$jobnum", ""]
    if do_write:
        lines += ["[writer]", "rw=write", "direct=0", "fdatasync=8", f"numjobs={int(writers)}",
                  "filename_format=w.$jobnum", ""]
    return "\n".join(lines)


def parse_fio_mix(text):
    """{'read': MB/s, 'write': MB/s, 'errors': n} summed over every job of a fio JSON report."""
    start = text.find("{")
    if start < 0:
        raise ValueError("fio printed no JSON")
    jobs = json.loads(text[start:])["jobs"]
    return {"read": sum(float(j["read"]["bw_bytes"]) for j in jobs) / 1e6,
            "write": sum(float(j["write"]["bw_bytes"]) for j in jobs) / 1e6,
            "errors": sum(int(j.get("error", 0) or 0) for j in jobs)}


def competition(phases):
    """From {'read': {...}, 'write': {...}, 'both': {...}} (parse_fio_mix of each phase): the
    rates alone and together, and each side's rate together over alone (None where alone is 0)."""
    read_alone, write_alone = phases["read"]["read"], phases["write"]["write"]
    read_both, write_both = phases["both"]["read"], phases["both"]["write"]
    return {"read_alone": read_alone, "write_alone": write_alone, "read_both": read_both,
            "write_both": write_both,
            "read_ratio": read_both / read_alone if read_alone else None,
            "write_ratio": write_both / write_alone if write_alone else None,
            "errors": sum(p["errors"] for p in phases.values())}


def within_limit(measured, limit, slack=0.2):
    """A limit holds when the measurement is not above it by more than `slack` (QEMU's
    throttle lets a burst of a tenth of a second through); 0 is no limit."""
    return not limit or measured <= limit * (1 + slack)


def speedup(fast, slow):
    """The last fast rate over the last slow one, or None when either is missing or zero."""
    return fast[-1] / slow[-1] if fast and slow and slow[-1] else None


def paper_speedup():
    """The paper's stripe-cache speedup figure (e2.raid_write_speedup), or None."""
    return compare.paper_match(compare.load_paper(), "e2.raid_write_speedup", {})


# the conditions of the paper's write rates (Figures 4 and 5): 10 dd writers on its spindles,
# which the emulated members stand for; results/paper/e2.yaml keys the two figures by them
PAPER_WRITES = {"spindles": "emulated", "writers": 10}


def paper_array_over_network(stripe_cache_size, figures=None):
    """The paper's RAID6 write rate at this stripe cache over its network's read rate
    (60 / 1300 at 256 pages, 700 / 1300 at 32768), from results/paper/e2.yaml; None when
    the paper gives no write rate for this stripe cache."""
    figures = compare.load_paper() if figures is None else figures
    array = compare.paper_match(figures, "e2.raid_write_rate",
                                {"stripe_cache_size": int(stripe_cache_size), **PAPER_WRITES})
    network = compare.paper_match(figures, "e2.uncached_rate", {"clients": 10})
    return array["value"] / network["value"] if array and network else None


def first_member_limit(target_mb_per_s, data_disks):
    """A member MB/s limit to start from: the target array rate spread over the data members."""
    return target_mb_per_s / max(1, data_disks)


def bytes_limit(mb_per_s):
    """Member limits of MB/s only, operations lifted: at the array-bound rows' rates an IOPS
    limit in proportion would be below one operation a second, which libvirt cannot set."""
    return disks.Limits(mb_per_s, 0)


def calibrated_limit(limit, measured, target):
    """The member limit that moves the array's write rate from `measured` (at `limit`) to
    `target`: the members bound the writes, so the rate scales with their limit."""
    if measured <= 0:
        raise ValueError(f"the array wrote at {measured} MB/s at members of {limit} MB/s")
    return limit * target / measured


def calibrating_write_mb(target_mb_per_s, writers, seconds):
    """MB per writer so that `writers` writing at `target_mb_per_s` take about `seconds`."""
    return max(1, int(round(target_mb_per_s * seconds / max(1, writers))))


def read_port(cached):
    """The DTN's caching proxy port, or its pass-through proxy's."""
    return XROOTD_CACHE_PORT if cached else XROOTD_DIRECT_PORT


def disk_model_summary(records, manifests=(), paper_speedup=None):
    """Text: per-member fio vs configured, and the RAID write rates at stripe cache 256 and
    32768 with and without emulated spindles with their speed-up beside the paper's (the
    benchmark benchmarks/disk_model.py prints this from one or more E2 runs)."""
    lines = []
    for m in manifests:
        d = m.get("disks") or {}
        if d:
            lim = d.get("limits") or {}
            lines.append(f"run {m.get('label', '?')}: {d.get('count')} members RAID{d.get('raid_level')}, chunk "
                         f"{d.get('chunk_kb')} KiB, limits {lim.get('mb_per_s')} MB/s {lim.get('iops')} IOPS each "
                         f"(in force: {d.get('in_force')}), host cache {d.get('cache')}")
    lines.append("")
    lines.append(f"{'member (fio, read-only)':<26} {'configured':>10} {'measured':>10} {'ratio':>6}")
    for name, key, unit in (("e2.member_seq_mb_per_s", "configured_mb_per_s", "MB/s"),
                            ("e2.member_rand_iops", "configured_iops", "IOPS")):
        for r in (r for r in records if r["name"] == name):
            limit = r["params"].get(key) or 0
            ratio = f"{r['value'] / limit:.2f}" if limit else "-"
            label = "sequential 1 MiB" if "seq" in name else "random 4 KiB"
            lines.append(f"{label + ' ' + unit:<26} {limit or 'none':>10} {r['value']:>10.1f} {ratio:>6}")
    lines.append("")
    lines.append(f"{'RAID6 writes':<26} {'cache 256':>10} {'32768':>10} {'speed-up':>9}  paper")
    for spindles in ("emulated", "off"):
        rates = {size: [r["value"] for r in records if r["name"] == "e2.raid_write_rate"
                        and r["params"].get("spindles", "off" if spindles == "off" else None) == spindles
                        and int(r["params"].get("stripe_cache_size", 0)) == size] for size in (256, 32768)}
        if not rates[256] and not rates[32768]:
            continue
        slow, fast = mean(rates[256]), mean(rates[32768])
        ratio = f"{fast / slow:.2f}x" if slow and fast else "-"
        paper = f"{paper_speedup}x" if paper_speedup else "-"
        lines.append(f"{'spindles ' + spindles:<26} {slow or 0:>10.1f} {fast or 0:>10.1f} {ratio:>9}  {paper}"
                     f"   (MB/s, mean of {len(rates[256])} and {len(rates[32768])} points)")
    rw = [r for r in records if r["name"] in ("e2.raid_rw_read_rate", "e2.raid_rw_write_rate")]
    if rw:
        lines.append("")
        lines.append(f"{'reads vs writes on RAID6':<26} {'alone':>10} {'together':>10} {'ratio':>9}  paper")
        for size in sorted({int(r["params"].get("stripe_cache_size", 0)) for r in rw}):
            for name, side, busy in (("e2.raid_rw_read_rate", "reads", "with_writes"),
                                     ("e2.raid_rw_write_rate", "writes", "with_reads")):
                def rate(phase):
                    return mean([r["value"] for r in rw if r["name"] == name and r["params"].get("phase") == phase
                                  and int(r["params"].get("stripe_cache_size", 0)) == size])
                alone, both = rate("alone"), rate(busy)
                ratio = f"{both / alone:.2f}x" if alone and both is not None else "-"
                paper = "reads < 1 (~700 of 1300 MB/s)" if side == "reads" else "-"
                lines.append(f"{side + ', stripe cache ' + str(size):<26} {alone or 0:>10.1f} {both or 0:>10.1f} "
                             f"{ratio:>9}  {paper}")
    return "\n".join(lines)


def inflight_text(text):
    """'requests in flight (reads/writes): vdc 4/24' from `grep -H . /sys/block/*/inflight`
    lines, the busy devices only; 'no requests in flight' when none is busy."""
    busy = []
    for line in text.splitlines():
        m = re.match(r"/sys/block/([^/]+)/inflight:\s*(\d+)\s+(\d+)", line.strip())
        if m and (int(m.group(2)) or int(m.group(3))):
            busy.append(f"{m.group(1)} {m.group(2)}/{m.group(3)}")
    return f"requests in flight (reads/writes): {', '.join(busy)}" if busy else "no requests in flight"


def routed_job_description(schedd, dtn, tag, dtn_can_run):
    """The submit description of one HTCondor-C job to the DTN's schedd. Each route
    (`tag`) is a submitter of its own there (its accounting group): the schedd keeps a
    flock level per submitter and lowers it only when its own negotiator runs out of that
    submitter's jobs, so a job that flocked would otherwise leave the next job the DTN
    could run negotiated by the pool's central manager as well, and racing to a worker."""
    requirements = "True" if dtn_can_run else "(IsDTN =!= True)"
    return "\n".join([
        "universe = grid", f"grid_resource = condor {schedd} {dtn}:9618",
        "executable = route.sh", "output = out.txt", "error = err.txt", "log = job.log",
        "should_transfer_files = YES", "when_to_transfer_output = ON_EXIT",
        "+remote_jobuniverse = 5", f"+remote_requirements = {requirements}",
        f"+remote_AccountingGroup = \"{ROUTE_GROUP}_{tag}.{SUBMIT_USER}\"",
        "+remote_ShouldTransferFiles = \"YES\"", "+remote_WhenToTransferOutput = \"ON_EXIT\"",
        "request_memory = 32", "queue 1"]) + "\n"


class SiteInABox:
    def __init__(self, topo, ssh, storage, pool, pgread=False):
        self.topo, self.ssh, self.storage, self.pool = topo, ssh, storage, pool
        self.pgread = bool(pgread)   # the clients' read requests: kXR_pgread (True) or kXR_read
        self.dtn = topo.role_host("dtn")
        self.origin = topo.role_host("origin")
        self.workers = topo.with_role("worker")

    def member_limits(self, member_mb_per_s=None, member_iops=None):
        """The RAID members' limits: the given ones (--set), else the topology's."""
        return disks.Limits.of(self.dtn.disks, member_mb_per_s, member_iops)

    def apply_member_limits(self, limits, echo=print):
        """Every RAID member's libvirt iotune (None: the topology's); returns the `disks` record."""
        return disks.set_limits(self.topo, limits, echo=echo)

    def sampled_read_round(self, port, clients, reads_per_client, seed):
        """`read_round` with the DTN's network and RAID sampled: (reads, names, net, md series)."""
        net = Sampler(self.ssh, self.dtn, "net", "e2-net").start()
        md = Sampler(self.ssh, self.dtn, "md", "e2-md").start()
        try:
            reads, names = self.read_round(port, clients, reads_per_client, seed=seed)
        finally:
            net_series, md_series = net.stop(), md.stop()
        return reads, names, net_series, md_series

    def sampled_raid_write(self, writers, mb_each):
        """`raid_write` with the RAID sampled every second: (rate MB/s, seconds, md series)."""
        md = Sampler(self.ssh, self.dtn, "md", "e2-md-write").start()
        try:
            rate, wall = self.raid_write(writers, mb_each)
        finally:
            series = md.stop()
        return rate, wall, series

    def origin_files(self):
        """{file name: bytes} of the origin's test files."""
        out = self.ssh.run(self.origin.name, "cd /srv/origin/data && stat -c '%n %s' file-*").stdout
        return {name: int(size) for name, size in (line.split() for line in out.splitlines() if line.strip())}

    def read_round(self, port, clients, reads_per_client, seed):
        """`clients` parallel xrdcp clients spread over the workers, through the DTN (their
        read requests as `self.pgread` says)."""
        files = self.origin_files()
        plan = assign_reads(sorted(files), clients, reads_per_client, seed)
        per_host = {}
        for i, names in enumerate(plan):
            host = self.workers[i % len(self.workers)].name
            per_host.setdefault(host, []).append((f"c{i + 1}", names))
        endpoint = f"{self.dtn.name}:{port}"
        results = self.ssh.run_many({h: parallel_clients_script(endpoint, a, self.pgread)
                                     for h, a in per_host.items()},
                                    timeout=3600)
        reads = []
        for host, res in results.items():
            reads += parse_client_lines(res.stdout, files)
        if not reads:
            raise RemoteError(f"no client reads came back from {', '.join(per_host)}")
        return reads, sorted({n for names in plan for n in names})

    def timed_read(self, port, name, files, pgread=None):
        """(seconds, bytes) of one xrdcp of origin file `name` through the DTN's `port` by one
        client on the first worker; `files` is the origin's listing (`origin_files`);
        `pgread` None: as `self.pgread` says."""
        if name not in files:
            raise RemoteError(f"origin has no file {name} (it has {len(files)} file-* files)")
        pgread = self.pgread if pgread is None else pgread
        res = self.ssh.run(self.workers[0].name, client_script(f"{self.dtn.name}:{port}", "c1", [name], pgread),
                           timeout=600)
        reads = parse_client_lines(res.stdout, files)
        if not reads or reads[0][5] != 0:
            raise RemoteError(f"xrdcp of {name} through {self.dtn.name}:{port} failed: {res.stdout.strip()[-200:]}")
        _c, _n, size, start, end, _rc = reads[0]
        return end - start, size

    def clear_cache(self):
        XrootdUnits(self.ssh, self.dtn.name).restart_without(CACHE_UNIT, [f"{CACHE_DIR}/data"])

    def wait_cache_closed(self, names, timeout=e2_cache.CLOSE_TIMEOUT):
        """(records, names still open): once the proxy has closed every file (e2_cache)."""
        return e2_cache.wait_closed(self.ssh, self.dtn.name, names, timeout=timeout)

    def raid_write(self, writers, mb_each):
        """`writers` parallel dd writers on the RAID, each mb_each MB with fdatasync; MB/s overall."""
        d = RAID_TEST_DIR
        cmd = (f"rm -rf {d}; mkdir -p {d}; sync; echo 3 > /proc/sys/vm/drop_caches; s=$(date +%s.%N); "
               + " ".join(f"( LC_ALL=C dd if=/dev/zero of={d}/w{i} bs=1M count={mb_each} conv=fdatasync 2>&1 | "
                          f"tail -1 ) &" for i in range(writers))
               + f" wait; e=$(date +%s.%N); echo wall $s $e; rm -rf {d}")
        out = self.ssh.run(self.dtn.name, cmd, timeout=3600).stdout
        m = re.search(r"^wall ([0-9.]+) ([0-9.]+)$", out, re.MULTILINE)
        done = parse_dd(out)
        if not m or len(done) != writers:
            raise RemoteError(f"{self.dtn.name}: RAID write test: {len(done)} of {writers} writers reported")
        wall = float(m.group(2)) - float(m.group(1))
        return writers * mb_each * 1048576 / 1e6 / wall, wall

    def raid_read_write(self, readers, writers, file_mb, seconds):
        """The read/write competition on md0's filesystem: fio with `readers` direct readers
        alone, `writers` writers alone, then both at once, each phase `seconds` long.
        Returns {phase: parse_fio_mix} for 'read', 'write' and 'both'."""
        d = f"{RAID_MOUNT}/rwtest"
        out = {}
        try:
            for phase in RW_PHASES:
                job = rw_jobfile(d, readers, writers, file_mb, seconds, phase)
                cmd = (f"mkdir -p {d} && printf %s {shlex.quote(job)} > /tmp/tb-rw.fio && sync && "
                       f"echo 3 > /proc/sys/vm/drop_caches && fio --output-format=json /tmp/tb-rw.fio")
                res = self.ssh.run(self.dtn.name, cmd, timeout=600 + 4 * int(seconds), check=False)
                try:
                    out[phase] = parse_fio_mix(res.stdout)
                except (ValueError, KeyError, IndexError) as exc:
                    raise RemoteError(f"{self.dtn.name}: fio {phase} phase on {d}: {exc}; "
                                      f"{(res.stderr or res.stdout).strip()[-300:]}; {self.stuck_requests()}") from None
        finally:
            self.ssh.run(self.dtn.name, f"rm -rf {d} /tmp/tb-rw.fio", check=False)
        return out

    def stuck_requests(self):
        """What the DTN's block devices have in flight (`/sys/block/*/inflight`): a disk
        whose requests never complete has a lost completion, not a slow array."""
        res = self.ssh.run(self.dtn.name, "grep -H . /sys/block/vd*/inflight", check=False, timeout=60)
        return inflight_text(res.stdout)

    def member_fio(self, index, seconds):
        """Read-only fio on RAID member `index` (by serial): {'seq_mb_per_s', 'rand_iops', 'device'}."""
        from testbed.model.constants import DATA_DISK_BY_ID
        device = f"{DATA_DISK_BY_ID}{int(index)}"
        out = {"device": device}
        for check in ("seq", "rand"):
            res = self.ssh.run(self.dtn.name, fio_command(device, check, seconds), timeout=120 + 4 * seconds,
                               check=False)
            try:
                got = parse_fio(res.stdout)
            except (ValueError, KeyError, IndexError) as exc:
                raise RemoteError(f"{self.dtn.name}: fio {check} on {device}: {exc}; "
                                  f"{(res.stderr or res.stdout).strip()[-300:]}") from None
            out["seq_mb_per_s" if check == "seq" else "rand_iops"] = \
                got["mb_per_s"] if check == "seq" else got["iops"]
        return out

    def local_read_rate(self, names):
        """The DTN reading cached files from its own RAID (page cache dropped), MB/s."""
        paths = " ".join(shlex.quote(f"{CACHE_DIR}/data/{n}") for n in names)
        cmd = (f"sync; echo 3 > /proc/sys/vm/drop_caches; s=$(date +%s.%N); cat {paths} | wc -c; "
               f"e=$(date +%s.%N); echo wall $s $e")
        out = self.ssh.run(self.dtn.name, cmd, timeout=1800).stdout
        nbytes = int(out.split()[0])
        m = re.search(r"wall ([0-9.]+) ([0-9.]+)", out)
        return nbytes / 1e6 / (float(m.group(2)) - float(m.group(1)))

    # --- job routing ------------------------------------------------------------------
    def route_job(self, tag, dtn_can_run=True, timeout=900):
        """Submit one job by HTCondor-C to the DTN's schedd; it runs on the DTN's slots,
        or (requirements the DTN cannot meet) flocks to the worker pool. Returns
        (seconds from submit to start, host it ran on)."""
        workdir = f"{SUBMIT_HOME}/e2/{tag}"
        script = "#!/bin/sh\necho start $(date +%s.%N) $(hostname)\nsleep 1\n"
        desc = routed_job_description(f"{self.dtn.name}.{self.topo.trust_domain}", self.dtn.name, tag, dtn_can_run)
        jobs = self.pool.schedd.submit(desc, workdir, files={"route.sh": (script, "0755")}, stamp=True)
        submitted, cluster = jobs.submitted, jobs.cluster
        self.pool.wait(cluster, 1, timeout=timeout)
        text = self.ssh.run(self.pool.submit_host, f"cat {workdir}/out.txt", check=False).stdout
        m = re.search(r"start ([0-9.]+) (\S+)", text)
        if not m:
            raise RemoteError(f"routed job {cluster} left no start line in {workdir}/out.txt")
        ran_on = m.group(2).split(".")[0]
        # guests keep no time sync, so put the start on the submit host's clock
        offset = self.clock_offset(ran_on) if ran_on in self.topo.hosts else 0.0
        return float(m.group(1)) - offset - submitted, ran_on

    def clock_offset(self, host):
        """Seconds `host`'s clock is ahead of the submit host's (sampled at the same moment)."""
        submit = self.pool.submit_host
        diffs = []
        for _ in range(3):
            res = self.ssh.run_many({submit: "date +%s.%N", host: "date +%s.%N"}, timeout=30)
            try:
                diffs.append(float(res[host].stdout) - float(res[submit].stdout))
            except ValueError:
                continue
        return sorted(diffs)[len(diffs) // 2] if diffs else 0.0
