"""G3 main gate suite.

The runner asks this package what the suite must produce for a config (its plan), which
settings weaken its verdict and whether the config can run G3 at all; the campaign
workflow asks it to stop the engines a killed run left running. All four are defined
beside the cells and engines in harness.g3 (docs/gates.md lists the hooks).
"""

from harness.g3.plan import expected_checks, validate, weakened
from harness.serving.engines import release_engines as release

__all__ = ["expected_checks", "release", "validate", "weakened"]
