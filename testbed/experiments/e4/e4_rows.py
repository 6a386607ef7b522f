"""E4's generated rows (the registry entry in hpc.py names them): the two layouts of the
paper's Table 2 and, beyond the paper, the co-located layout with the event service
back-filling the tail (skipped where the scale sets no back-fill). Each row is one
`Measure Point    production` (HpcLibrary.point_production, e4_points.production).
"""
from testbed.harness.points import POINT_TEMPLATE
from testbed.harness.rows import Axis, Block, Case, Rows

ROWS = (
    Block("layouts", Rows(
        Case("{layout}", POINT_TEMPLATE, args=("production", "layout={layout}", "backfill=${FALSE}"),
             tags=("layout:{layout}", "efficiency"),
             doc={"colocated": "The DB on every node, next to its tasks (the paper's KNL 1-node rows).",
                  "dedicated": "One node dedicated to the DB serving the task nodes over the site network\n"
                               "(the paper's 11 nodes, 1 dedicated). Its nodes allocated exceed the nodes "
                               "running tasks."}),
        axes=(Axis("layout", values=("colocated", "dedicated")),)), Rows(
        Case("colocated-backfill", POINT_TEMPLATE, args=("production", "layout=colocated", "backfill=${TRUE}"),
             tags=("layout:colocated", "backfill"),
             doc="Beyond the paper: the co-located layout with the event service back-filling\n"
                 "idle task slots in the tail."))),
)
