"""E3 (FAX) guest side, the uproot reader and writer (uproot from PyPI in the box's E3
venv, over Debian's python3-xrootd and python3-numpy; no ROOT).

read(args, clock): opens the URL (root://... through XRootD's Python bindings: uproot's
XRootDSource, whose requests are vectored reads of coalesced byte ranges; or a local
path) and reads the selected branches of the first --fraction of the events in steps of
--cache-mb MB (one step's baskets are fetched together before any is used: uproot's
read-ahead, not a TTreeCache, and it has no learning phase), keeping every --every-th
entry. Returns the raw measurement that e3_job turns into the job's report, with the
same per-branch checksums as the ROOT reader.

write(args): the files written by uproot: one basket per branch per `extend` of
--basket-events events, one cluster for the whole tree (ROOT sees no cluster boundaries
in them, so its TTreeCache fetches them a basket row at a time whatever its size).
"""
import os
import time


class ReadFailed(Exception):
    """The file could not be opened or read; the message says which URL and why."""


def keep_every(start, n, every):
    """The slice of a chunk of n entries starting at entry `start` that holds the entries
    whose number is a multiple of `every`."""
    return slice((-start) % every, n, every)


def read(args, clock, loop):
    t0 = time.monotonic()
    import numpy as np
    import uproot
    clock["import_s"] = time.monotonic() - t0
    opts = {}
    if args.url.startswith("root://"):
        opts = {"handler": uproot.source.xrootd.XRootDSource, "timeout": args.timeout}
    t0 = time.monotonic()
    try:
        f = uproot.open(args.url, **opts)
        tree = f["events"]
    except Exception as exc:  # uproot raises OSError, KeyError, XRootD errors ... each with its own text
        raise ReadFailed(f"cannot open {args.url}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from exc
    with f:
        all_names = list(tree.keys())
        names = all_names[:max(1, int(args.branches))]
        total = tree.num_entries
        stop = max(1, int(round(total * args.fraction)))
        every = max(1, int(args.every))
        clock["open_s"] = time.monotonic() - t0
        sums = [0] * len(names)
        events, steps, start = 0, 0, 0
        with loop:
            for arrays in tree.iterate(names, entry_stop=stop, step_size=f"{args.cache_mb} MB", library="np"):
                steps += 1
                n = len(arrays[names[0]])
                pick = keep_every(start, n, every)
                for i, b in enumerate(names):
                    a = np.ascontiguousarray(arrays[b][pick])
                    sums[i] = (sums[i] + int(a.view(np.uint32).sum(dtype=np.uint64))) % 2 ** 64
                events += len(range(*pick.indices(n)))
                start += n
        zipped = sum(tree[b].compressed_bytes for b in names)
        all_zipped = sum(tree[b].compressed_bytes for b in all_names)
    return {"events": events, "entries": total, "stop": stop, "every": every, "branches": len(names),
            "branches_total": len(all_names), "useful_bytes": events * 4 * len(names),
            "sums": sums, "wall_s": loop.wall_s, "cpu_s": loop.cpu_s, "run_delay_s": loop.run_delay_s, "steps": steps,
            "selected_zip_bytes": int(zipped * stop / total) if total else 0, "all_zip_bytes": int(all_zipped)}


def write(args):
    """Yields (path, {layout}) for each file written."""
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
        baskets = -(-args.events // args.basket_events)
        yield path, {"baskets_per_branch": baskets, "basket_events": min(args.basket_events, args.events),
                     "clusters": 1}

