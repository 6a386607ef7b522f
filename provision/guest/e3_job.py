#!/usr/bin/env python3
"""E3 (FAX) guest-side tool: write ATLAS-like ROOT files, and read them as an analysis job.

Runs in the box's E3 venv (/opt/tb-e3/bin/python: CERN's `root` wheel and uproot, over
Debian's python3-xrootd and python3-numpy). Two subcommands:

  write DIR... --files N --events E --branches B [--basket-events K] [--cluster-events C]
            [--writer root|uproot] [--seed S]
      In each DIR (the i-th seeded S + i; its name is the storage site's) N files
      DIR/<prefix>NNN.root, each a TTree "events" of B 4-byte branches (float32
      and int32, physics-like and partly compressible) in baskets of K events, ZLIB;
      ROOT's writer (the default) closes a cluster every C events (0: one cluster).
      Prints one JSON line per file {site, file, bytes, sha256, events, branches, writer,
      baskets_per_branch, basket_events, clusters, ...}.

  read URL --reader root|uproot --branches B [--fraction F] [--every N] --cache-mb M
           [--learn-entries L] [--label X]
      One analysis job (e3_ttree.read or e3_uproot.read): the first B branches, every
      N-th event of the first F of the tree, a read-ahead cache of M MB (ROOT: a
      TTreeCache with a learning phase of L entries, 0 = none). Prints one JSON object:
      events/s of the event loop, start-up seconds beside it (interpreter, imports and
      dictionaries, file open: not in events/s), CPU efficiency, MB/s of useful data,
      read calls and bytes read (ROOT), the cache's statistics, the share of the loop's
      wall time its thread spent runnable but waiting for a CPU (cpu_wait), and a
      checksum of the values read that both readers compute alike. On failure: one JSON object with
      `error` (and `kind`: no-root, read), exit status 3.
"""
import argparse
import hashlib
import json
import os
import resource
import sys
import time

STARTED = time.monotonic()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
READERS = ("root", "uproot")


def process_age_s(stat_text=None, uptime_text=None, ticks=None):
    """Seconds since this process was started (exec of the interpreter), from /proc; 0.0
    where /proc is not readable."""
    try:
        if stat_text is None:
            with open("/proc/self/stat") as fh:
                stat_text = fh.read()
        if uptime_text is None:
            with open("/proc/uptime") as fh:
                uptime_text = fh.read()
        ticks = ticks or os.sysconf("SC_CLK_TCK")
        fields = stat_text.rsplit(")", 1)[1].split()
        started = int(fields[19]) / ticks   # field 22, starttime (the list starts at field 3)
        return max(0.0, float(uptime_text.split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


def run_delay_s(text=None):
    """Seconds this process's main thread has spent runnable but waiting for a CPU (the
    second field of /proc/self/schedstat, in ns); None where the kernel keeps no such
    count. Concurrent jobs on fewer cores than jobs wait here, jobs waiting on I/O do not."""
    try:
        if text is None:
            with open("/proc/self/schedstat") as fh:
                text = fh.read()
        return int(text.split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class LoopClock:
    """Times a reader's event loop (`with loop: ...`): wall and CPU seconds and the run delay
    within it, so start-up stays out of all three."""

    def __init__(self, delay=run_delay_s):
        self._delay = delay
        self.wall_s = self.cpu_s = 0.0
        self.run_delay_s = None

    def __enter__(self):
        self._w0, self._c0, self._d0 = time.monotonic(), time.process_time(), self._delay()
        return self

    def __exit__(self, *exc):
        self.wall_s, self.cpu_s = time.monotonic() - self._w0, time.process_time() - self._c0
        d1 = self._delay()
        self.run_delay_s = d1 - self._d0 if d1 is not None and self._d0 is not None else None
        return False


def private_mb(text=None):
    """The process's anonymous (private, not file-backed) memory in MB from
    /proc/self/smaps_rollup; ROOT's libraries are file pages that concurrent jobs share."""
    try:
        if text is None:
            with open("/proc/self/smaps_rollup") as fh:
                text = fh.read()
        kb = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("Anonymous:"))
        return round(kb / 1024, 1)
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def digest(sums):
    """The checksum of a read: sha256 of the per-branch sums of the values' 32-bit
    patterns (what both readers compute), 16 hex digits."""
    return hashlib.sha256(",".join(str(int(s)) for s in sums).encode()).hexdigest()[:16]


def report(args, raw, clock):
    """The job's JSON report from a reader's raw measurement and the start-up clock."""
    wall, cpu, delay = raw["wall_s"], raw["cpu_s"], raw.get("run_delay_s")
    startup = clock.get("interp_s", 0.0) + clock.get("import_s", 0.0) + clock.get("open_s", 0.0)
    cache = raw.get("cache") or {}
    return {
        "label": args.label, "url": args.url, "reader": args.reader, "events": raw["events"],
        "entries": raw["entries"], "branches": raw["branches"], "branches_total": raw["branches_total"],
        "cache_mb": args.cache_mb, "learn_entries": args.learn_entries if args.reader == "root" else None,
        "fraction": args.fraction, "every": raw["every"], "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
        "events_per_s": raw["events"] / wall if wall > 0 else 0.0,
        "useful_mb": raw["useful_bytes"] / 1e6, "mb_per_s": raw["useful_bytes"] / 1e6 / wall if wall > 0 else 0.0,
        "cpu_eff": cpu / wall if wall > 0 else 0.0,
        "run_delay_s": None if delay is None else round(delay, 4),
        "cpu_wait": delay / wall if delay is not None and wall > 0 else None,
        "startup_s": round(startup, 3), "interp_s": round(clock.get("interp_s", 0.0), 3),
        "import_s": round(clock.get("import_s", 0.0), 3), "open_s": round(clock.get("open_s", 0.0), 3),
        "read_calls": raw.get("read_calls"), "bytes_read": raw.get("bytes_read"),
        "open_read_calls": raw.get("open_read_calls"), "steps": raw.get("steps"),
        "cache_fills": cache.get("fills"), "uncached_reads": cache.get("uncached_reads"),
        "cache_efficiency": cache.get("efficiency"), "cache_efficiency_rel": cache.get("efficiency_rel"),
        "read_compressed_mb": raw["selected_zip_bytes"] / 1e6,
        "selected_byte_fraction": raw["selected_zip_bytes"] / raw["all_zip_bytes"] * raw["entries"] / raw["stop"]
        if raw.get("all_zip_bytes") and raw.get("stop") else 0.0,
        "digest": digest(raw["sums"]), "root_version": raw.get("root_version"),
        "host": os.uname().nodename, "uid": os.getuid(),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "private_mb": private_mb()}


def failure(args, kind, message):
    return {"error": message, "kind": kind, "url": args.url, "label": args.label, "reader": args.reader,
            "host": os.uname().nodename}


def reader_module(name):
    if name == "root":
        import e3_ttree as mod
    else:
        import e3_uproot as mod
    return mod


def read(args, out=sys.stdout):
    clock = {"interp_s": process_age_s() - (time.monotonic() - STARTED)}
    mod = reader_module(args.reader)
    try:
        raw = mod.read(args, clock, LoopClock())
    except Exception as exc:
        kind = "no-root" if type(exc).__name__ == "NoRoot" else "read"
        if type(exc).__name__ not in ("NoRoot", "ReadFailed"):
            exc = f"{args.url}: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        print(json.dumps(failure(args, kind, str(exc))), file=out, flush=True)
        return 3
    print(json.dumps(report(args, raw, clock)), file=out, flush=True)
    return 0


def write(args, out=sys.stdout):
    mod = reader_module(args.writer)
    seed = args.seed
    try:
        for i, d in enumerate(args.dirs):
            args.dir, args.seed = d, seed + i
            for path, layout in mod.write(args):
                line = {"site": os.path.basename(os.path.normpath(d)), "file": os.path.basename(path),
                        "bytes": os.path.getsize(path), "sha256": sha256(path), "events": args.events,
                        "branches": args.branches, "writer": args.writer}
                line.update(layout)
                print(json.dumps(line), file=out, flush=True)
    except Exception as exc:
        print(json.dumps({"error": f"{args.dir}: {type(exc).__name__}: {exc}", "writer": args.writer}),
              file=out, flush=True)
        return 3
    return 0


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def positive(kind):
    def parse(text):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is negative")
        return value
    parse.__name__ = kind.__name__
    return parse


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dirs", nargs="+", metavar="dir")
    w.add_argument("--files", type=int, default=2)
    w.add_argument("--events", type=int, default=2000)
    w.add_argument("--branches", type=int, default=300)
    w.add_argument("--basket-events", type=int, default=500)
    w.add_argument("--cluster-events", type=positive(int), default=0)
    w.add_argument("--writer", choices=READERS, default="root")
    w.add_argument("--level", type=int, default=4)
    w.add_argument("--seed", type=int, default=2)
    w.add_argument("--prefix", default="data")
    r = sub.add_parser("read")
    r.add_argument("url")
    r.add_argument("--reader", choices=READERS, default="root")
    r.add_argument("--branches", type=int, default=40)
    r.add_argument("--fraction", type=float, default=1.0)
    r.add_argument("--every", type=positive(int), default=1)
    r.add_argument("--cache-mb", type=positive(float), default=10.0)
    r.add_argument("--learn-entries", type=positive(int), default=100)
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("--label", default="job")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    return write(args) if args.cmd == "write" else read(args)


if __name__ == "__main__":
    sys.exit(main())
