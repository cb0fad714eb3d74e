"""G3 main gate suite.

The runner asks this package what the suite must produce for a config (its plan), which
settings weaken its verdict, whether the config can run G3 at all and what a dry run
would take; the campaign workflow asks it to stop the engines a killed run left running.
HOOKS holds those answers (harness/suite_hooks.py, docs/gates.md); they are defined
beside the cells and engines in harness.g3 and harness.serving.
"""

from harness.config.decision import deviations
from harness.g3.plan import config_summary, dry_run, expected_checks, validate, weakened
from harness.serving.cells import unserved
from harness.serving.engines import release_engines
from harness.suite_hooks import SuiteHooks

HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   release=release_engines, dry_run=dry_run, unconfigured=unserved,
                   deviations=deviations, config_summary=config_summary)

__all__ = ["HOOKS"]
