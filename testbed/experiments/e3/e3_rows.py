"""E3's generated rows (the registry entry in fax.py names them): the storage x compute
matrix, one cell per reader, cache size, compute site and storage site of the full scale
(readers outermost), then each reader's and cache size's diagonal-versus-RTT summary; the
learning rows, per cache size, for a short learning phase and none, in the local and the
remote cell (the default phase is the matrix's own); one concurrency row per job count of
the full scale. The RTT, connectivity and baseline tests and the concurrency spread stay
hand-written in the suite. Every generated row is one `Measure Point` (FaxLibrary.point_*,
e3_points).
"""
from testbed.experiments.e3.e3_site import site_names
from testbed.harness.points import POINT_TEMPLATE
from testbed.harness.rows import Axis, Block, Case, Rows

SITES = tuple(site_names(4))    # the full scale's sites (a unit test holds them to it)
READER = Axis("reader", param="readers")
CACHE = Axis("cache", param="cache_mbs")
# the learning rows' phases besides ROOT's default: a name for the row, words for its documentation
LEARN = {1: ("short", "1 entry"), 0: ("off", "none (the job registers its branches)")}
POINTS = {"cell": {"compute": None, "storage": None, "cache": "cache_mbs", "reader": "readers"},
          "diagonal": {"cache": "cache_mbs", "reader": "readers"},
          "learning": {"learn": "learn_entries", "where": None, "cache": "cache_mbs"},
          "concurrency": {"jobs": "concurrency"}}
WHERE = {"local": "the compute site of\nthe farthest cell reading its own file",
         "remote": "the cell with the\nlargest RTT"}

ROWS = (
    Block("points", Rows(
        Case("cell-{compute}-reads-{storage}-{cache}mb-{reader}", POINT_TEMPLATE,
             args=("cell", "compute={compute}", "storage={storage}", "cache={cache}", "reader={reader}"),
             tags=("matrix", "compute:{compute}", "storage:{storage}", "cache:{cache}", "reader:{reader}")),
        axes=(READER, CACHE, Axis("compute", values=SITES), Axis("storage", values=SITES))), Rows(
        Case("diagonal-vs-rtt-{cache}mb-{reader}", POINT_TEMPLATE, args=("diagonal", "cache={cache}", "reader={reader}"),
             tags=("matrix", "summary", "cache:{cache}", "reader:{reader}"),
             doc="Off-diagonal over diagonal events/s per RTT from this run's {reader} cells; the\n"
                 "diagonal may not be slower than the farthest cell beyond 25% (TCG noise); not judged\n"
                 "where the reader counts its reads (ROOT) and they could spend at most 25% of the\n"
                 "diagonal's event loop in round trips (one job per cell cannot tell that from noise)."),
        axes=(READER, CACHE)), Rows(
        Case("learning-{phase}-{where}-{cache}mb", POINT_TEMPLATE,
             args=("learning", "learn={learn}", "where={where}", "cache={cache}"),
             tags=("learning", "learn:{learn}", "{where}", "cache:{cache}"),
             doc="ROOT, {cache} MB TTreeCache, learning phase {phase_words}; {where_words}. Its "
                 "default-learning twin is the matrix cell."),
        axes=(CACHE, Axis("learn", values=tuple(LEARN), derived={"phase": lambda n: LEARN[n][0],
                                                                 "phase_words": lambda n: LEARN[n][1]}),
              Axis("where", values=tuple(WHERE), derived={"where_words": WHERE.get}))), Rows(
        Case("concurrency-{jobs}", POINT_TEMPLATE, args=("concurrency", "jobs={jobs}"), tags=("concurrency", "jobs:{jobs}")),
        axes=(Axis("jobs", param="concurrency"),))),
)
