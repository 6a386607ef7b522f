"""E3 (FAX) guest side, the ROOT reader and writer (PyROOT from the `root` wheel in the
box's E3 venv). The event loop and the writer are C++ (e3_ttree.C beside this file),
compiled by ROOT's interpreter at start-up: a Python loop over TTree::GetEntry costs
microseconds per call natively and tens of them under the emulated CPU, which would
measure the interpreter rather than the reads; RDataFrame would JIT a larger graph at
every start and hides the per-entry GetEntry the TTreeCache is built for.

read(args, clock): TFile::Open(URL) (root:// through TNetXNGFile and the XRootD client
ROOT bundles), TTree "events" with only the selected branches switched on, a TTreeCache
of --cache-mb MB (TTree::SetCacheSize) whose learning phase is --learn-entries entries
(TTreeCache::SetLearnEntries; 0 = no learning: the job registers its branches with
AddBranchToCache and stops the learning phase before the first entry), then every
--every-th entry of the first --fraction of the tree. Returns the raw measurement that
e3_job turns into the job's report.
"""
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP_SOURCE = os.path.join(HERE, "e3_ttree.C")


class NoRoot(Exception):
    """ROOT cannot be imported: the box predates the E3 venv's `root` wheel."""


class ReadFailed(Exception):
    """The file could not be opened or read; the message says which URL and why."""


_ROOT = []


def import_root():
    """ROOT with the E3 C++ declared (once per process); NoRoot when the wheel is missing."""
    if _ROOT:
        return _ROOT[0]
    try:
        import warnings
        warnings.simplefilter("ignore")  # the wheel's "alpha stage" notice on every import
        import ROOT
    except ImportError as exc:
        raise NoRoot(f"{type(exc).__name__}: {exc}") from exc
    ROOT.gROOT.SetBatch(True)
    with open(LOOP_SOURCE) as fh:
        if not ROOT.gInterpreter.Declare(fh.read()):
            raise NoRoot(f"ROOT's interpreter could not compile {LOOP_SOURCE}")
    _ROOT.append(ROOT)
    return ROOT


def selection(names, count):
    """The first `count` branch names: the analysis's branches."""
    return list(names)[:max(1, int(count))]


def entry_plan(total, fraction, every):
    """(stop, every, events): entries [0, stop) read every `every`-th, and how many that is."""
    stop = max(1, int(round(total * float(fraction))))
    every = max(1, int(every))
    return stop, every, (stop + every - 1) // every


def configure_cache(ROOT, tree, names, cache_mb, learn_entries):
    """Only `names` switched on; a TTreeCache of cache_mb MB with its learning phase."""
    tree.SetBranchStatus("*", 0)
    for n in names:
        tree.SetBranchStatus(n, 1)
    ROOT.TTreeCache.SetLearnEntries(max(1, int(learn_entries)))
    tree.SetCacheSize(int(float(cache_mb) * 2 ** 20))
    if int(learn_entries) == 0:
        for n in names:
            tree.AddBranchToCache(n, True)
        tree.StopCacheLearningPhase()


def read(args, clock, loop):
    # XRootD's client reads its settings from the environment when ROOT first loads it;
    # --timeout bounds each request as it does uproot's
    os.environ.setdefault("XRD_REQUESTTIMEOUT", str(int(args.timeout)))
    t0 = time.monotonic()
    ROOT = import_root()
    clock["import_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    try:
        f = ROOT.TFile.Open(args.url)
    except OSError as exc:  # PyROOT raises where TFile::Open returns nullptr
        raise ReadFailed(f"TFile::Open({args.url}) failed: {exc} (ROOT's reason is on the job's stderr)") from exc
    if not f or f.IsZombie():
        raise ReadFailed(f"TFile::Open({args.url}) failed (ROOT's reason is on the job's stderr)")
    tree = f.Get("events")
    if not tree:
        raise ReadFailed(f"{args.url} has no TTree 'events'")
    all_names = [b.GetName() for b in tree.GetListOfBranches()]
    names = selection(all_names, args.branches)
    total = int(tree.GetEntries())
    stop, every, _ = entry_plan(total, args.fraction, args.every)
    configure_cache(ROOT, tree, names, args.cache_mb, args.learn_entries)
    wanted = ROOT.std.vector["std::string"]()
    for n in names:
        wanted.push_back(n)
    calls0, bytes0 = f.GetReadCalls(), f.GetBytesRead()
    clock["open_s"] = time.monotonic() - t0
    with loop:
        res = ROOT.tbe3.loop(tree, wanted, stop, every)
    if res.error:
        raise ReadFailed(f"{args.url}: {res.error}")
    cache = f.GetCacheRead(tree)
    zipped = sum(tree.GetBranch(n).GetZipBytes() for n in names)
    return {
        "events": int(res.events), "entries": total, "stop": stop, "every": every,
        "branches": len(names), "branches_total": len(all_names),
        "useful_bytes": int(res.events) * 4 * len(names), "sums": [int(s) for s in res.sums],
        "wall_s": loop.wall_s, "cpu_s": loop.cpu_s, "run_delay_s": loop.run_delay_s,
        "read_calls": int(f.GetReadCalls() - calls0), "bytes_read": int(f.GetBytesRead() - bytes0),
        "open_read_calls": int(calls0), "selected_zip_bytes": int(zipped * stop / total) if total else 0,
        "all_zip_bytes": int(tree.GetZipBytes()),
        "cache": cache_stats(cache),
        "root_version": str(ROOT.gROOT.GetVersion()),
    }


def cache_stats(cache):
    """What the TTreeCache says about itself (None when the tree had no cache)."""
    if not cache:
        return None
    return {"fills": int(cache.GetReadCalls()), "uncached_reads": int(cache.GetNoCacheReadCalls()),
            "uncached_bytes": int(cache.GetNoCacheBytesRead()), "efficiency": float(cache.GetEfficiency()),
            "efficiency_rel": float(cache.GetEfficiencyRel()), "learn_entries": int(cache.GetLearnEntries()),
            "size_bytes": int(cache.GetBufferSize())}


def write(args):
    """The files, written by ROOT itself; yields (path, {basket and cluster facts})."""
    ROOT = import_root()
    os.makedirs(args.dir, exist_ok=True)
    for i in range(args.files):
        path = os.path.join(args.dir, f"{args.prefix}{i:03d}.root")
        tmp = path + ".tmp"
        err = ROOT.tbe3.write(tmp, args.branches, args.events, args.basket_events,
                              args.cluster_events or args.events, args.seed * 1000 + i, args.level)
        if err:
            raise ReadFailed(str(err))
        os.replace(tmp, path)
        yield path, layout(ROOT, path)


def layout(ROOT, path):
    """Baskets and clusters of a written file, as ROOT reads them back."""
    f = ROOT.TFile.Open(path)
    tree = f.Get("events")
    b = tree.GetBranch("b0000")
    n = b.GetWriteBasket()
    entries = [int(b.GetBasketEntry()[k]) for k in range(n)] + [int(tree.GetEntries())]
    it, clusters = tree.GetClusterIterator(0), []
    start = it()
    while start < tree.GetEntries():
        clusters.append(int(start))
        start = it()
    out = {"baskets_per_branch": n, "basket_events": max(b - a for a, b in zip(entries, entries[1:])),
           "basket_zip_bytes": int(b.GetZipBytes() / n) if n else 0, "clusters": len(clusters),
           "zip_bytes": int(tree.GetZipBytes()), "tot_bytes": int(tree.GetTotBytes())}
    f.Close()
    return out
