#!/usr/bin/env python3
"""E3 (FAX) guest-side tool: write ATLAS-like ROOT files, and read them as an analysis job.

Runs in the box's E3 venv (/opt/tb-e3/bin/python: uproot from PyPI on top of Debian's
python3-xrootd and python3-numpy); no ROOT. Two subcommands:

  write DIR --files N --events E --branches B [--seed S] [--basket-events K]
      N files DIR/<prefix>NNN.root, each a TTree "events" of B branches (float32 and
      int32, physics-like and partly compressible), written in baskets of K events with
      ZLIB; prints one JSON line per file {file, bytes, sha256, events, branches}.

  read URL --branches B --fraction F --cache-mb M [--label L]
      Opens URL (root://... through XRootD's Python bindings: uproot's XRootDSource, whose
      requests are vectored reads of coalesced byte ranges; or a local path), reads the
      first B branches for the first F of the events in steps of M MB (the read-ahead
      cache: one step's baskets are fetched together before any is used), decompresses
      and touches every selected event; prints one JSON object with events/s, MB/s of
      useful (uncompressed) data, CPU efficiency (process CPU / wall) and the checksum of
      what it read, so the suite can check every job read the right data.
"""
import argparse
import hashlib
import json
import os
import resource
import sys
import time


def write(args):
    import numpy as np
    import uproot
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    names = [f"b{i:04d}" for i in range(args.branches)]
    kinds = {n: (np.int32 if i % 5 == 4 else np.float32) for i, n in enumerate(names)}
    for f in range(args.files):
        path = os.path.join(args.dir, f"{args.prefix}{f:03d}.root")
        tmp = path + ".tmp"
        with uproot.recreate(tmp, compression=uproot.ZLIB(args.level)) as out:
            tree = out.mktree("events", {n: kinds[n] for n in names})
            done = 0
            while done < args.events:
                k = min(args.basket_events, args.events - done)
                chunk = {}
                for i, n in enumerate(names):
                    if kinds[n] is np.int32:
                        chunk[n] = rng.poisson(3 + i % 7, k).astype(np.int32)
                    else:  # momenta-like, rounded so that baskets compress as real ones do
                        chunk[n] = np.round(rng.exponential(20.0 + i % 11, k), 2).astype(np.float32)
                tree.extend(chunk)
                done += k
        os.replace(tmp, path)
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        print(json.dumps({"file": os.path.basename(path), "bytes": os.path.getsize(path),
                          "sha256": digest.hexdigest(), "events": args.events, "branches": args.branches}),
              flush=True)
    return 0


def read(args):
    wall0, cpu0 = time.monotonic(), time.process_time()
    import numpy as np
    import uproot
    imported = time.monotonic() - wall0
    opts = {}
    if args.url.startswith("root://"):
        opts = {"handler": uproot.source.xrootd.XRootDSource, "timeout": args.timeout}
    t0, c0 = time.monotonic(), time.process_time()
    with uproot.open(args.url, **opts) as f:
        tree = f["events"]
        branches = list(tree.keys())[:args.branches]
        total = tree.num_entries
        stop = max(1, int(round(total * args.fraction)))
        events, useful, steps = 0, 0, 0
        check = hashlib.sha256()
        for arrays in tree.iterate(branches, entry_stop=stop, step_size=f"{args.cache_mb} MB", library="np"):
            steps += 1
            n = len(arrays[branches[0]])
            for b in branches:  # touch every selected event of every branch
                a = arrays[b]
                check.update(np.asarray(a.sum(dtype=np.float64)).tobytes())
                useful += a.nbytes
            events += n
        compressed = sum(tree[b].compressed_bytes for b in branches) * stop / total
        all_bytes = sum(tree[b].compressed_bytes for b in tree.keys())
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    print(json.dumps({
        "label": args.label, "url": args.url, "events": events, "entries": total, "steps": steps,
        "branches": len(branches), "branches_total": len(tree.keys()), "cache_mb": args.cache_mb,
        "fraction": args.fraction, "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
        "import_s": round(imported, 3), "events_per_s": events / wall if wall > 0 else 0.0,
        "useful_mb": useful / 1e6, "mb_per_s": useful / 1e6 / wall if wall > 0 else 0.0,
        "read_compressed_mb": compressed / 1e6, "selected_byte_fraction": compressed / all_bytes * total / stop
        if all_bytes else 0.0, "cpu_eff": cpu / wall if wall > 0 else 0.0, "digest": check.hexdigest()[:16],
        "host": os.uname().nodename, "uid": os.getuid(),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir")
    w.add_argument("--files", type=int, default=2)
    w.add_argument("--events", type=int, default=2000)
    w.add_argument("--branches", type=int, default=300)
    w.add_argument("--basket-events", type=int, default=500)
    w.add_argument("--level", type=int, default=4)
    w.add_argument("--seed", type=int, default=2)
    w.add_argument("--prefix", default="data")
    r = sub.add_parser("read")
    r.add_argument("url")
    r.add_argument("--branches", type=int, default=40)
    r.add_argument("--fraction", type=float, default=1.0)
    r.add_argument("--cache-mb", type=float, default=10)
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("--label", default="")
    args = p.parse_args(argv)
    return write(args) if args.cmd == "write" else read(args)


if __name__ == "__main__":
    sys.exit(main())
