"""An example gate suite (docs/gates.md): an arrival-style check of the GPU hosts.

A packaged suite's package declares its plan to the runner through HOOKS, a
SuiteHooks (harness/suite_hooks.py) that mypy checks: `expected_checks` always, the
others where the suite gives them.
"""

from __future__ import annotations

from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.suite_hooks import SuiteHooks

OPTIONAL_DEMO = "test_gds_is_ready"


def expected_checks(config: SiteConfig, inventory: Inventory) -> list[str]:
    """Every check id the suite must store for this site; any missing, extra or
    deselected one keeps the gate from PASS."""
    per_host = ["test_gpu_driver_is_on_record", "test_gpus_as_ordered"]
    gpus = [h.name for h in inventory.group("gpu")]
    return [f"{check}[{host}]" for check in per_host for host in gpus] + [
        "test_gds_is_ready", "test_volume_throughput_is_measurable"]


def weakened(config: SiteConfig) -> list[str]:
    """Settings looser than the contract; each makes a PASS need a reviewer's sign-off."""
    return []


def validate(config: SiteConfig, inventory: Inventory) -> None:
    """What the gate needs from the site before any host is touched (raise UsageError)."""
    inventory.require_groups(("gpu",))


HOOKS = SuiteHooks(expected_checks=expected_checks, weakened=weakened, validate=validate)
