"""G4's plan and config checks. Pure: no I/O.

The soak drives the accelerated arm through harness.serving (the arms, cells and phases
G3 measured), so what G4 needs from the config is what that arm needs, and its own section
(gates.g4: the soak's length, windows, load and criteria)."""

from __future__ import annotations

import difflib

from harness.config.decision import g4_weakened
from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.errors import UsageError
from harness.g4.criteria import CRITERIA, Criteria

# The checks a G4 run produces: the soak ran to its end, and each criterion over its windows.
CHECKS = ("test_soak", *(f"test_criterion[{c}]" for c in CRITERIA))


def expected_checks(config: SiteConfig, inventory: Inventory | None = None) -> list[str]:
    """A PASS needs each of these stored and passed (harness/runner.py compares)."""
    return list(CHECKS)


def validate(config: SiteConfig, inventory: Inventory) -> None:
    """G4 soaks the accelerated arm of a declared layout: without them nothing can run."""
    if config.arms is None:
        raise UsageError("G4 needs `arms:` with the accelerated arm it soaks", key="arms")
    if not config.layouts:
        raise UsageError("G4 needs at least one layout", key="layouts")
    wanted = config.gates.g4.layout
    names = [layout.name for layout in config.layouts]
    if wanted is not None and wanted not in names:
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.6)
        raise UsageError(f"{wanted!r} names no layout", key="gates.g4.layout",
                         hint=f"did you mean `{close[0]}`?" if close else
                         f"layouts: {', '.join(names)}")


def weakened(config: SiteConfig) -> list[str]:
    """G4's settings weaker than their defaults (a soak shorter than 72 h, a criterion
    looser than the one a reviewer signs): a PASS then needs a sign-off."""
    return [d.line() for d in g4_weakened(config.model_dump(mode="json"))]


def criteria(config: SiteConfig) -> Criteria:
    """gates.g4's criteria as the judgement takes them (harness/g4/criteria.py)."""
    g4 = config.gates.g4
    c = g4.criteria
    return Criteria(max_error_rate=c.max_error_rate,
                    max_ttft_drift_per_24h=c.max_ttft_drift_per_24h,
                    max_throughput_drift_per_24h=c.max_throughput_drift_per_24h,
                    max_memory_growth_per_24h=c.max_memory_growth_per_24h,
                    max_restarts=c.max_restarts, min_engaged_share=c.min_engaged_share,
                    min_device_share=c.min_device_share, baseline_h=g4.baseline / 3600.0,
                    confidence=c.confidence, duration_h=g4.duration / 3600.0)
