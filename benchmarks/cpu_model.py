"""Benchmark: the guests' CPU model under TCG, old (plain qemu64) vs new (qemu64 + the AES-NI,
PCLMULQDQ, SSSE3 and SSE4.1/4.2 features QEMU emulates), measured side by side in one run on
the running site: the submit host and the workers are switched to each model in turn and
power-cycled; then OpenSSL AES-128-GCM on 4 KB blocks in a worker, raw TCP worker -> submit
(iperf3), and HTCondor output transfer worker -> submit (jobs writing output, rates from the
submit host's XferStatsLog and the job ads) as a fraction of raw TCP. Ends with the plan's
model back in force.

    .venv/bin/python benchmarks/cpu_model.py [-t small] [--jobs 4] [--output-mb 32]
"""
import argparse
import sys
import tempfile
from pathlib import Path

from testbed.experiments.e1 import transfer
from testbed.machines import accel, cpumodel, lifecycle
from testbed.model import tables, topology
from testbed.services import health
from testbed.remote.site import Site
from testbed.services.condor import Pool, job_stats

MODELS = (("old: qemu64", accel.TCG_CPU_MODEL, ()),
          ("new: qemu64+" + ",".join(accel.TCG_CPU_FEATURES), accel.TCG_CPU_MODEL, accel.TCG_CPU_FEATURES))


def measure(topo, ssh, pool, jobs, output_mb, tag):
    exp = transfer.TransferExperiment(topo, ssh, pool)
    worker = exp.workers[0].name
    flags = cpumodel.cpu_flags(ssh.run(worker, "cat /proc/cpuinfo").stdout)
    gcm = cpumodel.openssl_rate(ssh.run(worker, "openssl speed -evp aes-128-gcm -bytes 4096 -seconds 3 2>/dev/null",
                               timeout=120).stdout)
    tcp = exp.iperf(worker, exp.submit.name, seconds=10)
    batch = exp.run_batch(jobs, 1, output_mb, 1, f"cpu-model-{tag}", timeout=1800)
    # the shadow downloads output: "download" lines of the submit host's XferStatsLog
    xfers = [x for x in exp.xfer_stats(batch.cluster) if x[0] == "download" and x[3] > 0]
    per_transfer = transfer.mean([b / s / 1e6 for _d, _j, b, s in xfers])
    first, last = exp.output_window(batch.ads)
    total = sum(job_stats(a)["bytes_out"] for a in batch.ads) / 1e6
    return {"flags": " ".join(f for f in ("aes", "pclmulqdq", "ssse3", "sse4_1", "sse4_2") if f in flags) or "-",
            "gcm": gcm, "tcp": tcp, "per_transfer": per_transfer, "aggregate": total / max(1.0, last - first),
            "completed": len(batch.ads), "jobs": jobs}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-t", "--topology", default=None)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--output-mb", type=int, default=32)
    args = p.parse_args()
    site = Site(topology.load(args.topology or lifecycle.active_topology() or "small"))
    topo, ssh = site.topo, site.ssh(timeout=120)
    pool = Pool(topo, ssh)
    hosts = [topo.role_host("submit").name] + [h.name for h in topo.with_role("worker")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, features in MODELS:
            print(f"== {label}: power-cycling {', '.join(hosts)}", flush=True)
            for host in hosts:
                cpumodel.switch(topo, host, model, features, Path(tmp))
            health.wait_healthy(topo, ssh, timeout=900)
            r = measure(topo, ssh, pool, args.jobs, args.output_mb, label.split(":")[0])
            print(f"   {r}", flush=True)
            rows.append([label, r["flags"], f"{r['gcm']:.1f}" if r["gcm"] else "?", f"{r['tcp']:.1f}",
                         f"{r['per_transfer']:.2f}" if r["per_transfer"] else "?", f"{r['aggregate']:.2f}",
                         f"{r['aggregate'] / r['tcp']:.3f}", f"{r['completed']}/{r['jobs']}"])
    print(f"guest CPU model on {topo.name} under TCG ({args.jobs} jobs x {args.output_mb} MB output, worker -> submit)")
    print(tables.render(["model", "guest flags", "AES-128-GCM 4 KB MB/s", "raw TCP MB/s",
                         "HTCondor MB/s per transfer", "HTCondor MB/s aggregate", "aggregate / TCP", "jobs"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
