"""G3 statistics: the paired hierarchical bootstrap and the sequential cell decision.

Pure numpy, no I/O. docs/g3-statistics.md explains the design and its validity figures.
"""

from harness.stats.bootstrap import percentile
from harness.stats.decision import decide_cell, decide_looks
from harness.stats.model import CellDecision, Criteria, Estimate, RepSample
from harness.stats.spending import (
    LookPlan,
    Spending,
    boundaries,
    cumulative_alpha,
    look_plan,
    nominal_levels,
    planned_looks,
    spent_alpha,
)

__all__ = [
    "CellDecision",
    "Criteria",
    "Estimate",
    "LookPlan",
    "RepSample",
    "Spending",
    "boundaries",
    "cumulative_alpha",
    "decide_cell",
    "decide_looks",
    "look_plan",
    "nominal_levels",
    "percentile",
    "planned_looks",
    "spent_alpha",
]
