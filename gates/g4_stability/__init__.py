"""G4 72 h stability suite (a skeleton until the soak is built: issue 26).

Its plan and config checks live in harness.g4.plan; HOOKS is what generic code may ask
this suite (harness/suite_hooks.py, docs/gates.md). `gate demo` leaves G4 out until the
soak can be shortened to the demo's minutes.
"""

from harness.g4.plan import expected_checks, validate, weakened
from harness.serving.cells import unserved
from harness.suite_hooks import SuiteHooks

HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   unconfigured=unserved, in_demo=False)

__all__ = ["HOOKS"]
