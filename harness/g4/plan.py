"""G4's plan and config checks. Pure: no I/O.

The soak drives the accelerated arm through harness.serving (the arms, cells and phases
G3 measured), so what G4 needs from the config is what that arm needs."""

from __future__ import annotations

from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.errors import UsageError

# The checks a G4 run produces; the soak's windows replace the placeholder (issue 26).
CHECKS = ("test_soak",)


def expected_checks(config: SiteConfig, inventory: Inventory | None = None) -> list[str]:
    """A PASS needs each of these stored and passed (harness/runner.py compares)."""
    return list(CHECKS)


def validate(config: SiteConfig, inventory: Inventory) -> None:
    """G4 soaks the accelerated arm of a declared layout: without them nothing can run."""
    if config.arms is None:
        raise UsageError("G4 needs `arms:` with the accelerated arm it soaks", key="arms")
    if not config.layouts:
        raise UsageError("G4 needs at least one layout", key="layouts")


def weakened(config: SiteConfig) -> list[str]:
    """No setting of G4 weakens it yet: it has none but `optional`."""
    return []
