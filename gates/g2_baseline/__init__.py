"""G2 single-node baselines suite: fio on the configured targets, GPU health, GDS, and the
serving baseline of the baseline arm.

The plan and the config checks live in harness.g2.plan, the engines' release after a
killed run in harness.g2.serving_run (docs/gates.md lists the hooks).
"""

from harness.g2.plan import expected_checks, validate, weakened
from harness.g2.serving_run import release

__all__ = ["expected_checks", "release", "validate", "weakened"]
