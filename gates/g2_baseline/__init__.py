"""G2 single-node baselines suite: fio on the configured targets, GPU health, GDS.

The plan and the config checks live in harness.g2.plan (docs/gates.md lists the hooks).
"""

from harness.g2.plan import expected_checks, validate, weakened

__all__ = ["expected_checks", "validate", "weakened"]
