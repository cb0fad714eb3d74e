"""G2 single-node baselines suite: fio on the configured targets, GPU health, GDS, and the
serving baseline of the baseline arm.

The plan and the config checks live in harness.g2.plan, the engines' release after a
killed run in harness.g2.serving_run; HOOKS is what generic code may ask this suite
(harness/suite_hooks.py, docs/gates.md).
"""

from harness.g2.plan import expected_checks, validate, weakened
from harness.g2.serving_run import release
from harness.suite_hooks import SuiteHooks

HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   release=release)

__all__ = ["HOOKS"]
