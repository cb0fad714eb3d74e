"""G1 arrival acceptance suite: the delivered hardware is what was ordered, host by host.

The plan (one check per host x BOM item and per host x health check, plus the clocks),
the config checks and the unverifiable items live in harness.g1.plan; HOOKS is what
generic code may ask this suite (harness/suite_hooks.py, docs/gates.md).
"""

from harness.g1.plan import expected_checks, optional_checks, unconfigured, validate, weakened
from harness.suite_hooks import SuiteHooks

HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   optional_checks=optional_checks, unconfigured=unconfigured)

__all__ = ["HOOKS"]
