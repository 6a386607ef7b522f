"""E2's generated rows (the registry entry in e2_site names them): the uncached reads, one
row per client count of the full scale; the RAID writes with the emulated spindles and with
their limits lifted, per row profile; the cached reads and the read/write competition per
row profile, and the cached reads with the array slower than the network by the paper's
ratio. The speed-up summaries between the writes and the cached reads stay
hand-written in the suite, so the block of writes ends before them. Every row is one
`Measure Point` (SiteInABoxLibrary.point_*, e2_points).
"""

POINTS = {"uncached": {"n": "clients"}, "raid-write": {"profile": "profile"},
          "raid-write-unlimited": {"profile": "profile"}, "cached": {"profile": "profile"},
          "read-write": {"profile": "profile"}, "array-bound": {"profile": "profile"}}
from testbed.harness.points import POINT_TEMPLATE
from testbed.harness.rows import Axis, Block, Case, Rows

PROFILE = Axis("profile", profiles=True)

ROWS = (
    Block("reads-and-writes", Rows(
        Case("uncached-{n}-clients", POINT_TEMPLATE, args=("uncached", "n={n}"), tags=("uncached", "clients:{n}"),
             doc={"uncached-1-clients": "n clients each xrdcp random files of the origin through the DTN's\n"
                                        "pass-through proxy to /dev/null; aggregate and per-client throughput."}),
        axes=(Axis("n", param="clients"),)), Rows(
        Case("raid-write-{profile}", POINT_TEMPLATE, args=("raid-write", "profile={profile}"), tags=("raid", "profile:{profile}"),
             doc={"raid-write-default": "10 parallel dd writers with conv=fdatasync on the RAID6 under a profile\n"
                                        "(stripe_cache_size 256).",
                  "raid-write-raid-stripe-32768": "The same writers with stripe_cache_size 32768."}),
        Case("raid-write-{profile}-unlimited", POINT_TEMPLATE, args=("raid-write-unlimited", "profile={profile}"),
             tags=("raid", "profile:{profile}", "unlimited"),
             doc={"raid-write-default-unlimited": "The same writers at stripe_cache_size 256 with every "
                                                  "member's limits\nlifted (the host's disk as it is), then the "
                                                  "run's limits back."}),
        axes=(PROFILE,))),
    Block("cache-and-competition", Rows(
        Case("cached-reads-{profile}", POINT_TEMPLATE, args=("cached", "profile={profile}"), tags=("cached", "profile:{profile}"),
             doc={"cached-reads-default": "The largest client count through the caching proxy: first reads are\n"
                                          "misses that write the cache on RAID6, repeated reads are hits; judged "
                                          "from the\ncache's own records. Stripe cache 256.",
                  "cached-reads-raid-stripe-32768": "The same with stripe cache 32768."}),
        Case("raid-read-write-{profile}", POINT_TEMPLATE, args=("read-write", "profile={profile}"),
             tags=("raid", "competition", "profile:{profile}"),
             doc={"raid-read-write-default": "Reads and writes compete on RAID6: direct readers alone, the "
                                             "writers\nalone, then both at once for as long (fio on the array's "
                                             "filesystem); the rate of\neach side together over alone. Stripe "
                                             "cache 256.",
                  "raid-read-write-raid-stripe-32768": "The same at stripe cache 32768, the paper's setting when "
                                                       "its cached\nreads stopped at ~700 MB/s while the cache was "
                                                       "being written."}),
        Case("cached-reads-array-bound-{profile}", POINT_TEMPLATE, args=("array-bound", "profile={profile}"),
             tags=("cached", "array-bound", "profile:{profile}"),
             doc={"cached-reads-array-bound-default": "The cache when the array, not the network, is the slow "
                                                      "part: the members'\nMB/s limit calibrated (two RAID "
                                                      "writes) so that the array writes at the\npaper's 60 of "
                                                      "1300 MB/s of the network measured in the row, then first\n"
                                                      "reads through the emptied cache. Stripe cache 256.",
                  "cached-reads-array-bound-raid-stripe-32768": "The same at stripe cache 32768, against the "
                                                                "paper's 700 of 1300 MB/s."}),
        axes=(PROFILE,))),
)
