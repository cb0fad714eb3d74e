"""G4 72 h stability suite: a detached soak of the accelerated arm, judged window by
window (docs/g4.md).

Its plan and config checks live in harness.g4.plan, the soak and its viewer in
harness.g4; HOOKS is what generic code may ask this suite (harness/suite_hooks.py,
docs/gates.md): `gate runs abort` stops a soak the gate left running.
"""

from harness.config.decision import g4_deviations
from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.g4.detached import release_soak, soak_status
from harness.g4.plan import expected_checks, validate, weakened
from harness.serving.cells import unserved
from harness.suite_hooks import Needs, SuiteHooks


def needs(config: SiteConfig, inventory: Inventory) -> Needs:
    """The load agent, where the soak runs on the client host (load.placement: client)."""
    return Needs(load_agent=tuple(expected_checks(config, inventory))
                 if config.load.placement == "client" else ())


HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   unconfigured=unserved, release=release_soak, deviations=g4_deviations,
                   demo_shortened=True, detached=soak_status, needs=needs)

__all__ = ["HOOKS"]
