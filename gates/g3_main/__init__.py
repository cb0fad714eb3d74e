"""G3 main gate suite.

The runner asks this package what the suite must produce for a config (its plan) and
which settings weaken its verdict; both are defined beside the cells in harness.g3.plan.
"""

from harness.g3.plan import expected_checks, weakened

__all__ = ["expected_checks", "weakened"]
