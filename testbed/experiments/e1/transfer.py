"""E1: limits of the HTCondor transfer system (seed 000).

Jobs "compute" (sleep) for T seconds and then leave S MB of output that the
schedd's own file transfer brings back to the submit host. From the paper:

    W(n, l, s) = n jobs x output size / job length      (equation 1)
    CPU efficiency lost = wall time a job holds its slot for transfers
                          (input + output) / wall time it computes

Scaling to the testbed: the paper's 4000 x 250 MB / 30 min (W = 555 MB/s on a
10 Gb/s NIC) becomes "every planned slot x S / T" with S chosen so that W is
a multiple of the raw TCP rate measured between the same VMs in the same run
(saturation; the output size is capped by the scale). The latency sweep runs
at W = sweep_load x the rate HTCondor achieved in the saturation test, and 2W:
the paper's W (55 MB/s) was likewise a fraction of what its schedd could do.

Under TCG that keeps the paper's loads but not its windows: Table 4's 4 MB send window
over 80 ms carries ~50 MB/s per stream, far above what HTCondor moves here. The scaled
rows (`table4-default-scaled`, `table4-updated-scaled`) are a scale model of the paper's
site: every bandwidth-like quantity, the two columns' socket buffer limits and the
sweep's W, times k = this run's saturation rate / the paper's 555 MB/s (e1_scale.py,
docs/scaling.md).
"""
import json
import re
import time
from collections import namedtuple

from testbed.experiments.e1 import e1_capacity, e1_figures, e1_scale
from testbed.experiments.e1.e1_capacity import SHADOWS_PER_TCG_CPU
from testbed.experiments.e1.jobs import PAPER, output_bytes, rate_label
from testbed.harness.points import POINT_TEMPLATE
from testbed.harness.registry import DAY_S, MAX_JOBS, MAX_RTT_MS, Experiment, Param, ReleaseFinding
from testbed.harness.rows import Axis, Block, Case, Rows
from testbed.network.sampler import Sampler, active_mean, in_window
from testbed.services.condor import JOB_AD_ATTRS, submit_description
from testbed.model import profiles, scaled_profiles
from testbed.model.constants import SUBMIT_HOME, JobStatus
from testbed.model.errors import RemoteError
from testbed.results.intervals import mean

# Table 4's two columns, then the same scaled to this site
TABLE4 = ("table4-default", "table4-updated")
PAPER_PROFILES = TABLE4 + tuple(scaled_profiles.scaled_name(p) for p in TABLE4)


def scale_table(columns):
    """compare's E1 table: R of the scale model, the paper's beside this site's (e1_scale.py)."""
    return e1_scale.tables_text(columns)


EXPERIMENT = Experiment(
    name="e1", title="Limits of the HTCondor transfer system", seed="000_0d45099a021f325e",
    suite="robot/suites/e1_transfer_limits.robot", headline=True,
    params={
        # iperf3 -t 0 would run until stopped
        "tcp_seconds": Param("int", "iperf3 duration of the raw TCP measurement", minimum=1, maximum=DAY_S),
        "saturation_jobs": Param("int", "jobs in the saturation test (0: every worker slot)",
                                 minimum=0, maximum=MAX_JOBS),
        # a job's length divides its output size (equation 1): never 0
        "saturation_compute_s": Param("int", "seconds each saturation job computes", minimum=1, maximum=DAY_S),
        "saturation_load": Param("float", "saturation W as a multiple of raw TCP", minimum=0.01, maximum=100),
        "sweep_jobs": Param("int", "jobs per latency point", minimum=1, maximum=MAX_JOBS),
        "sweep_compute_s": Param("int", "seconds each sweep job computes", minimum=1, maximum=DAY_S),
        "sweep_load": Param("float", "sweep W as a multiple of HTCondor's saturation rate", minimum=0.01, maximum=100),
        "rtts": Param("numbers", "RTTs submit <-> workers, ms", rows=True, minimum=0, maximum=MAX_RTT_MS),
        "rate_factors": Param("ints", "rates of the sweep as multiples of W", rows=True, minimum=1, maximum=100),
        # files on the submit host's disk (constants.HOST_DISK_GB), one per job
        "input_mb": Param("int", "input file per job, MB", minimum=0, maximum=1024),
        "max_output_mb": Param("int", "cap on a job's output, MB", minimum=1, maximum=1024),
        # MB/s: up to ten times the paper's 10 Gb/s NIC (constants.E1_LINK_MB_S)
        "sizing_rate_mb_s": Param("float", "HTCondor's saturation rate (MB/s) the unscaled points' output "
                                           "is sized from (unset: trial 1's saturation test; an earlier "
                                           "run's e1.sustained_rx_rate gives its sizes)",
                                  optional=True, minimum=0.001, maximum=12500),
        "scale_rate_mb_s": Param("float", "HTCondor's achieved rate (MB/s) the scale model's k is taken "
                                          "from (unset: trial 1's saturation test; an earlier run's "
                                          "e1.achieved_rate gives its k)", optional=True, minimum=0.001,
                                 maximum=12500),
    },
    scales={
        # CI: 6 minutes per suite on the small site under TCG (10-50x slower than native): the
        # two ends of the paper's latency range, 2W only, 4 short jobs per point.
        "ci": {"tcp_seconds": 5, "saturation_jobs": 8, "saturation_compute_s": 10, "saturation_load": 1.5,
               "sweep_jobs": 4, "sweep_compute_s": 5, "sweep_load": 0.25, "rtts": [0, 80],
               "rate_factors": [2], "input_mb": 1, "max_output_mb": 4,
               "sizing_rate_mb_s": None, "scale_rate_mb_s": None},
        # a user's first run: minutes on the small site
        "quick": {"tcp_seconds": 10, "saturation_jobs": 32, "saturation_compute_s": 20, "saturation_load": 1.5,
                  "sweep_jobs": 8, "sweep_compute_s": 20, "sweep_load": 0.25, "rtts": [0, 80],
                  "rate_factors": [1, 2], "input_mb": 1, "max_output_mb": 16,
                  "sizing_rate_mb_s": None, "scale_rate_mb_s": None},
        # the paper's latency points, more jobs, longer compute
        "full": {"tcp_seconds": 10, "saturation_jobs": 0, "saturation_compute_s": 60, "saturation_load": 2.0,
                 "sweep_jobs": 32, "sweep_compute_s": 60, "sweep_load": 0.25, "rtts": [0, 10, 20, 40, 80],
                 "rate_factors": [1, 2], "input_mb": 5, "max_output_mb": 256,
                 "sizing_rate_mb_s": None, "scale_rate_mb_s": None},
    },
    # the paper's two columns of Table 4 on an HTCondor 8.6-like site (profiles/table4-*.yaml),
    # as they are and scaled to this site (model/scaled_profiles.py, k from the saturation test);
    # default / wan-tuned / transfer-plain are this site's own (HTCondor 23.9 encrypts transfers)
    profiles=PAPER_PROFILES,
    # the demo: Table 4's two columns as measured (the scaled pair doubles the points and the
    # demo's half hour on a fresh machine would not hold them); `./tb run e1` runs all four
    demo_profiles=TABLE4,
    # CI: Table 4's two columns as well; the scaled pair's k comes from the same saturation
    # test, and their model is unit-tested (`./tb run e1 --scale ci` runs all four)
    ci_profiles=TABLE4,
    # the demo's half hour holds the 2W points (Figure 2's red line, the latency claim) and
    # leaves out W's half, where the tuning claim reads (the paper's tuned line is at W only)
    demo_sets={"rate_factors": [2]},
    row_profiles=PAPER_PROFILES + ("default", "wan-tuned", "transfer-plain"),
    metrics=("e1.tcp_rate", "e1.expected_rate", "e1.achieved_rate", "e1.sustained_rx_rate",
             "e1.achieved_over_expected", "e1.htcondor_over_tcp", "e1.cpu_efficiency", "e1.submit_rx_rate",
             "e1.efficiency_lost", "e1.slot_setup_teardown_over_execution", "e1.job_output_mb", "e1.job_transfer_rate",
             "e1.loss_80ms_over_0ms", "e1.tuning_gain_at_max_rtt", "e1.scale_k", "e1.sweep_demand",
             "e1.window_capacity_over_demand"),
    x_params=("t", "rtt_ms", "jobs", "size_mb"),
    paper=PAPER,
    # raw TCP between two guests: the host's emulated network, which no middleware release
    # changes; apart between two releases' columns, it says the host differed, not the release
    release_findings=(ReleaseFinding("e1.tcp_rate", "raw TCP from a worker to the submit host (iperf3): "
                                                    "the host's network, the same on every release"),),
    tables=scale_table,
    doc_figures=e1_figures.DOC_FIGURES,   # Figure 2's sweep on its docs page
    sized=lambda scale, accelerator, topo: size_for_site(scale, accelerator, topo),
    # Figure 2's points: one row per profile x RTT x rate of the full scale, each a
    # `Measure Point    latency` (TransferLibrary.point_latency); `testbed suites --write`
    # writes them into the suite
    rows=(Block("points", Rows(
        Case("rtt{rtt}-{rate}-{profile}", POINT_TEMPLATE, args=("latency", "profile={profile}", "rtt={rtt}",
                                                                "factor={factor}"),
             tags=("RTT{rtt}", "{rate}", "profile:{profile}")),
        axes=(Axis("profile", profiles=True), Axis("rtt", param="rtts"),
              Axis("factor", param="rate_factors", derived={"rate": lambda f: rate_label(f)})))),),
    points={"latency": {"profile": "profile", "rtt": "rtts", "factor": "rate_factors"}},
    # Job output goes worker -> submit; the CMs' negotiator matches the jobs and the schedd
    # reaches each startd only through the CCB servers. The DTN and the origin take no part:
    # the DTN's daemons report to its own collector (a pool of its own), so pausing it or the
    # origin disturbs nothing E1 talks to (the runner still keeps a guest running while the
    # pool's collectors list an ad of it, e.g. a flocked DTN schedd's submitter ad).
    uses=("submit", "cm", "ccb", "worker"),
    measured=("submit", "worker"),   # --pin: the receiver and the senders on host CPUs of their own
    capacity=e1_capacity.site_for,   # testbed plan: the hosts its parameters need
)


def size_for_site(scale, accelerator, topo):
    """The saturation test sized to what the submit host can carry: under TCG at most
    SHADOWS_PER_TCG_CPU jobs per emulated CPU of the submit host; under KVM the scale as
    it is. Returns ({param: value}, [why])."""
    if accelerator != "tcg":
        return {}, []
    submit = topo.role_host("submit")
    cpus = submit.cpus if submit else 1
    carry = SHADOWS_PER_TCG_CPU * cpus
    wanted = EXPERIMENT.scales[scale]["saturation_jobs"]
    if wanted and wanted <= carry:
        return {}, []
    return {"saturation_jobs": carry}, [
        f"saturation_jobs {wanted or 'every worker slot'} -> {carry}: under TCG the submit host's "
        f"{cpus} emulated CPU{'s' if cpus > 1 else ''} run{'' if cpus > 1 else 's'} one encrypting shadow "
        f"per job; {SHADOWS_PER_TCG_CPU} per CPU already saturate its transfers, more only queue up on "
        f"the CPU (32 at once left the schedd not answering; --set saturation_jobs=N to override)"]
Batch = namedtuple("Batch", "cluster ads seconds sizes")
JOB_SCRIPT = """#!/bin/sh
# E1 job: "compute" for $1 seconds, then leave $2 MB of output (a sparse file:
# no CPU is spent making it, every byte still crosses the network).
sleep "$1"
truncate -s "$(awk -v mb="$2" 'BEGIN { printf "%d", mb * 1048576 }')" payload
"""
XFER_LINE = re.compile(r"(?P<dir>Download|Upload)\b.*?JobId: (?P<job>\d+\.\d+).*?bytes: (?P<bytes>\d+)"
                       r".*?seconds: (?P<secs>[0-9.]+)", re.IGNORECASE)


def parse_xfer_stats(text, cluster):
    """Sub-second transfers of one cluster from XferStatsLog: [(direction, job, bytes, seconds)]."""
    out = []
    for line in text.splitlines():
        m = XFER_LINE.search(line)
        if m and m.group("job").split(".")[0] == str(cluster):
            out.append((m.group("dir").lower(), m.group("job"), int(m.group("bytes")), float(m.group("secs"))))
    return out


def transfer_over_compute(stats, xfers):
    """The paper's CPU efficiency lost, per job then averaged: seconds spent in input and
    output transfers (XferStatsLog, sub-second) / seconds computing (job ad)."""
    seconds = {}
    for _direction, job, _bytes, secs in xfers:
        seconds[job] = seconds.get(job, 0.0) + secs
    ratios = [seconds[s["job"]] / s["execution_s"] for s in stats
              if s["job"] in seconds and s["execution_s"] > 0]
    return mean(ratios)


def parse_output_sizes(text):
    """{proc: bytes} from `stat -c '%n %s' payload.*` in the batch's output folder."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^payload\.(\d+) (\d+)$", line.strip())
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def bad_outputs(n_jobs, size_mb, sizes):
    """Jobs (proc ids) whose output did not arrive with the expected size."""
    want = output_bytes(size_mb)
    return [proc for proc in range(n_jobs) if sizes.get(proc) != want]


POINT_NAME = re.compile(r"^rtt(\d+(?:\.\d+)?)-(\d*(?:\.\d+)?)W-([a-z0-9][a-z0-9-]*)$")


def parse_point(name):
    """A sweep row's name -> (rtt_ms, rate factor, profile): 'rtt80-2W-default' -> (80.0, 2.0,
    'default'); ValueError for a name that is not one."""
    m = POINT_NAME.match(str(name))
    if not m:
        raise ValueError(f"{name!r} is not an E1 sweep row (like rtt80-2W-default)")
    return float(m.group(1)), float(m.group(2) or 1), m.group(3)


def loss_ratios(records, low, high):
    """[(efficiency lost at `high` ms / at `low` ms, {rate, profile})] from the run's
    e1.efficiency_lost records, per profile and rate that has both."""
    loss = _sweep(records)
    out = []
    for prof, rate in sorted({(k[0], k[1]) for k in loss}):
        a, b = loss.get((prof, rate, float(low))), loss.get((prof, rate, float(high)))
        if a and b is not None:
            out.append((b / a, {"rate": rate, "profile": prof}))
    return out


def tuning_gains(records, rtt, baseline_of=None):
    """[(the baseline's loss / a tuned profile's loss at `rtt` ms, {rate, rtt_ms, profile})]:
    a tuned profile's baseline is the profile it `extends` (wan-tuned -> default,
    table4-updated -> table4-default), when the run measured both."""
    baseline_of = baseline_of or _parent_profile
    loss = _sweep(records)
    profs = sorted({k[0] for k in loss})
    out = []
    for tuned in profs:
        base = baseline_of(tuned)
        if base not in profs:
            continue
        for rate in sorted({k[1] for k in loss}):
            d, t = loss.get((base, rate, float(rtt))), loss.get((tuned, rate, float(rtt)))
            if d is not None and t:
                out.append((d / t, {"rate": rate, "rtt_ms": float(rtt), "profile": tuned}))
    return out


def _parent_profile(name):
    """The profile `name` extends; a scaled profile's baseline is its base's parent, scaled
    (table4-updated-scaled -> table4-default-scaled)."""
    base = scaled_profiles.base_name(name)
    chain = profiles.load(base or name).chain
    parent = chain[1] if len(chain) > 1 else None
    return scaled_profiles.scaled_name(parent) if base and parent else parent


def _sweep(records):
    """(profile, rate, rtt) -> efficiency lost (the last record of each point)."""
    out = {}
    for r in records:
        if r["name"] == "e1.efficiency_lost":
            p = r.get("params", {})
            out[(p.get("profile", "default"), p.get("rate"), float(p.get("rtt_ms", 0)))] = r["value"]
    return out


class TransferExperiment:
    def __init__(self, topo, ssh, pool):
        self.topo, self.ssh, self.pool = topo, ssh, pool
        self.submit = topo.role_host("submit")
        self.workers = topo.with_role("worker")

    # --- raw TCP ------------------------------------------------------------------------
    def iperf(self, sender, receiver, seconds=10, streams=1):
        """Raw TCP from sender to receiver (MB/s), iperf3 in the same VMs."""
        rx = self.topo.hosts[receiver]
        self.ssh.run(receiver, "pkill -x iperf3; iperf3 -s -1 -D && sleep 1")
        out = self.ssh.run(sender, f"iperf3 -J -c {rx.site_ip} -t {seconds} -P {streams}",
                           timeout=seconds + 60).stdout
        data = json.loads(out)
        return data["end"]["sum_received"]["bits_per_second"] / 8e6

    # --- jobs ---------------------------------------------------------------------------
    def run_batch(self, n_jobs, compute_s, output_mb, input_mb, tag, timeout=1800, progress=None):
        """Submit n jobs, wait for them all; returns a Batch: cluster, completed jobs' ads,
        seconds, and the size of each job's output as it arrived on the submit host."""
        workdir = f"{SUBMIT_HOME}/e1/{tag}"
        desc = submit_description("e1job.sh", f"{compute_s} {output_mb}", count=n_jobs,
                                  requirements="(IsDTN =!= True)",
                                  extra={"transfer_input_files": "input.dat",
                                         "transfer_output_files": "payload",
                                         "transfer_output_remaps": '"payload = out/payload.$(Process)"'})
        started = time.monotonic()
        cluster = self.pool.submit(desc, workdir, files={"e1job.sh": (JOB_SCRIPT, "0755")},
                                   setup=[f"truncate -s {input_mb}M input.dat", "mkdir -p out"])
        self.pool.wait(cluster, n_jobs, timeout=timeout, progress=progress)
        seconds = time.monotonic() - started
        ads = self.pool.jobs(cluster, JOB_AD_ATTRS)
        listing = self.ssh.run(self.submit.name, f"cd {workdir}/out && stat -c '%n %s' payload.* 2>/dev/null",
                               check=False).stdout
        self.ssh.run(self.submit.name, f"rm -rf {workdir}/out", check=False)
        done = [a for a in ads if a.get("JobStatus") == JobStatus.COMPLETED]
        return Batch(cluster, done, seconds, parse_output_sizes(listing))

    def sampled_batch(self, n_jobs, compute_s, output_mb, input_mb, tag="saturation", progress=None):
        """`run_batch` with the submit host's receive rate sampled every second. Returns
        (batch, rx series, first output transfer start, last finish, sustained rx MB/s over
        the output transfers only)."""
        sampler = Sampler(self.ssh, self.submit, "net", f"e1-{tag}").start()
        try:
            batch = self.run_batch(n_jobs, compute_s, output_mb, input_mb, tag, progress=progress)
        finally:
            series = sampler.stop()
        first, last = self.output_window(batch.ads)
        window = in_window(series, sampler.started_at, first, last)  # the output transfers only
        return batch, series, first, last, active_mean(window, 1)

    def xfer_stats(self, cluster):
        text = self.ssh.run(self.submit.name, "cat /var/log/condor/XferStatsLog 2>/dev/null", check=False).stdout
        return parse_xfer_stats(text, cluster)

    def output_window(self, ads):
        """(first output transfer start, last finish) over a batch, epoch seconds."""
        starts = [a["TransferOutStarted"] for a in ads if a.get("TransferOutStarted")]
        ends = [a["TransferOutFinished"] for a in ads if a.get("TransferOutFinished")]
        if not starts or not ends:
            raise RemoteError("no output-transfer timestamps in the job ads")
        return min(starts), max(ends)

