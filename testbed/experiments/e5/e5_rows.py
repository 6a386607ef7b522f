"""E5's generated rows (the registry entry in e5_scale names them): the sleeper ramp per row
profile; the negotiation with idle requests no slot matches, per protocol and RTT of the
full scale (the batched rows keep the names they had before the protocol axis); the
negotiation with jobs that match, per RTT; the collector shapes (one tier, two) per row
profile; the collector ramp per tiers and RTT of the full scale; the CCB layouts (on the
child collectors, on hosts of their own) per worker configuration (shared port, a CCB
registration per daemon). The streams count, the negotiation summary, the CCB split and
the failovers stay hand-written in the suite, so the negotiation rows are a block of their
own, before the summary. Every generated row is one `Measure Point` (ScaleLibrary.point_* and
CollectorLibrary.point_*, e5_points).
"""
from testbed.experiments.e5.config import BATCHED
from testbed.harness.points import POINT_TEMPLATE
from testbed.harness.rows import Axis, Block, Case, Rows

PROFILE = Axis("profile", profiles=True)
NEGOTIATION_RTT = Axis("rtt", param="negotiation_rtts")
# The release's own protocol keeps the rows' names (negotiation-0ms), so runs and
# references before the protocol axis name the same rows; the other one is in the name.
NEGOTIATION_PROTOCOL = Axis("protocol", param="negotiation_protocols",
                            derived={"protocol_name": lambda p: "" if p == BATCHED else f"{p}-"})
# CcbLayouts.LAYOUTS and CONFIGS (collector.py), with the row's word for the layout
CCB_LAYOUTS = {"on-children": "on-child-collectors", "own-hosts": "on-own-hosts"}
CCB_CONFIGS = ("shared-port", "per-daemon")
POINTS = {"ramp": {"profile": "profile"},
          "negotiation": {"protocol": "negotiation_protocols", "rtt": "negotiation_rtts"},
          "matchable": {"rtt": "negotiation_rtts"}, "shape": {"shape": None, "profile": "profile"},
          "collector-ramp": {"rtt": "collector_ramp_rtts", "tiers": "collector_ramp_tiers"},
          "synthetic": {"rtt": "synthetic_rtts"}, "ccb": {"layout": None, "config": None}}

ROWS = (
    Block("ramp", Rows(
        Case("ramp-{profile}", POINT_TEMPLATE, args=("ramp", "profile={profile}"), tags=("ramp", "profile:{profile}"),
             doc={"ramp-default": "Sleepers ramped in doubling steps to the first limit under `default`.",
                  "ramp-collector-tuned": "The same ramp under `collector-tuned` (section 4.1: larger UDP "
                                          "buffers,\nstartd updates every 10 minutes)."}),
        axes=(PROFILE,))),
    Block("negotiation", Rows(
        Case("negotiation-{protocol_name}{rtt}ms", POINT_TEMPLATE, args=("negotiation", "protocol={protocol}", "rtt={rtt}"),
             tags=("negotiation", "protocol:{protocol}", "rtt:{rtt}"),
             doc={"negotiation-0ms": "Idle jobs no slot can match, each its own resource request: the\n"
                                     "negotiator's own cycle duration with the schedd on the CM's LAN, in the\n"
                                     "release's batched protocol (lists of requests per round trip).",
                  "negotiation-100ms": "The same with 100 ms RTT between the schedd and the central managers.",
                  "negotiation-per-request-0ms": "The same jobs with the negotiator fetching one request per round "
                                                 "trip\n(USE_RESOURCE_REQUEST_COUNTS = False on every CM: the "
                                                 "paper's schedds\nbefore batching), the schedd on the CMs' LAN.",
                  "negotiation-per-request-100ms": "One request per round trip with 100 ms RTT between the schedd "
                                                   "and the\ncentral managers (paper: 1000 requests, 1153 s)."}),
        axes=(NEGOTIATION_PROTOCOL, NEGOTIATION_RTT))),
    Block("matchable-collectors-ccb", Rows(
        Case("negotiation-matchable-{rtt}ms", POINT_TEMPLATE, args=("matchable", "rtt={rtt}"),
             tags=("negotiation", "matchable", "rtt:{rtt}"),
             doc={"negotiation-matchable-0ms": "Idle jobs that every free slot matches, each its own resource "
                                               "request:\nthe cycle that considered them all, with the schedd on "
                                               "the CMs' LAN.",
                  "negotiation-matchable-100ms": "The same with 100 ms RTT between the schedd and the central "
                                                 "managers."}),
        axes=(NEGOTIATION_RTT,)), Rows(
        Case("collectors-{shape}-{profile}", POINT_TEMPLATE, args=("shape", "shape={shape}", "profile={profile}"),
             tags=("collectors", "profile:{profile}"),
             doc={"collectors-flat-default": "One collector tier: the startds update the CMs' collectors "
                                             "directly.\nTime until every slot is visible after the workers "
                                             "restart, updates lost per\ncollector with every slot busy, the "
                                             "negotiator's cycle.",
                  "collectors-tree-default": "Two tiers (section 4.1, GlideinWMS): child collectors receive "
                                             "the startds'\nupdates and forward them to the CMs' collectors, "
                                             "each child to one CM; the same\nfigures, and every CM must hear "
                                             "the startds."}),
        axes=(PROFILE, Axis("shape", values=("flat", "tree")))), Rows(
        Case("collector-ramp-{rtt}ms-{tiers_name}", POINT_TEMPLATE, args=("collector-ramp", "rtt={rtt}", "tiers={tiers}"),
             tags=("collector-ramp", "rtt:{rtt}", "tiers:{tiers}"),
             doc={"collector-ramp-0ms-1tier": "Startds per worker in doubling steps, every one reporting to "
                                              "the CMs'\ncollectors on their LAN, until updates are lost or "
                                              "startds fail to join.",
                  "collector-ramp-100ms-1tier": "The same with the workers 100 ms from every central host "
                                                "(paper: 200\nstartds per collector over the WAN, 2,000 on the "
                                                "LAN).",
                  "collector-ramp-0ms-2tiers": "Two tiers on the LAN: child collectors on the CCB hosts "
                                               "receive the\nstartds' updates and forward them to the CMs' "
                                               "collectors.",
                  "collector-ramp-100ms-2tiers": "Two tiers with the workers 100 ms away: the children take "
                                                 "the WAN's\nround trips, the parents get the updates over the "
                                                 "LAN (paper: 1,000 startds per\nchild collector after 8.3's "
                                                 "fixes)."}),
        axes=(Axis("tiers", param="collector_ramp_tiers",
                   derived={"tiers_name": lambda n: f"{n}tier" if n == 1 else f"{n}tiers"}),
              Axis("rtt", param="collector_ramp_rtts"))), Rows(
        Case("collector-synthetic-{rtt}ms", POINT_TEMPLATE, args=("synthetic", "rtt={rtt}"),
             tags=("collector-synthetic", "rtt:{rtt}"),
             doc={"collector-synthetic-0ms": "Synthetic startds per worker in doubling steps, each joining with a "
                                             "security\nhandshake of its own and then updating every "
                                             "synthetic_update_s, until a CM's\ncollector loses updates, misses "
                                             "ads, refuses joins or is busy all the time.",
                  "collector-synthetic-100ms": "The same with the workers 100 ms from every central host: each "
                                               "join's\nhandshake pays its round trips over the WAN (paper: 200 "
                                               "startds per collector\nover the WAN, 2,000 on the LAN, before "
                                               "non-blocking authentication)."}),
        axes=(Axis("rtt", param="synthetic_rtts"),)), Rows(
        Case("ccb-{layout_name}-{config}", POINT_TEMPLATE, args=("ccb", "layout={layout}", "config={config}"),
             tags=("ccb", "layout:{layout}", "config:{config}"),
             doc={"ccb-on-child-collectors-shared-port": "Child collectors on the CMs that are also the "
                                                         "workers' CCB servers\n(GlideinWMS's default); shared "
                                                         "port on the workers: connections on the CMs.",
                  "ccb-on-own-hosts-shared-port": "The same children without CCB, which stays on the CCB hosts.",
                  "ccb-on-child-collectors-per-daemon": "CCB on the children with the paper's execute nodes: no "
                                                        "shared port on\nthe workers, every daemon registering "
                                                        "with CCB itself.",
                  "ccb-on-own-hosts-per-daemon": "CCB on its own hosts with the paper's execute nodes."}),
        axes=(Axis("config", values=CCB_CONFIGS),
              Axis("layout", values=tuple(CCB_LAYOUTS), derived={"layout_name": CCB_LAYOUTS.get})))),
)
