"""G3 main gate suite.

The runner asks this package what the suite must produce for a config (its plan), which
settings weaken its verdict, whether the config can run G3 at all and what a dry run
would take; the campaign workflow asks it to stop the engines a killed run left running.
HOOKS holds those answers (harness/suite_hooks.py, docs/gates.md); they are defined
beside the cells and engines in harness.g3 and harness.serving.
"""

from harness.config.decision import deviations
from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.g3.plan import config_summary, dry_run, expected_checks, validate, weakened
from harness.serving.cells import unserved
from harness.serving.engines import release_engines
from harness.suite_hooks import Needs, SuiteHooks, UrlNeed


def needs(config: SiteConfig, inventory: Inventory) -> Needs:
    """sudo where the page cache is dropped before each measured phase, the KV stores
    whose /metrics G3 scrapes (it never starts them), the load agent on a client host."""
    checks = tuple(expected_checks(config, inventory))
    g3 = config.gates.g3
    sudo = sorted({h.name for group in g3.drop_caches_on if group in inventory.groups
                   for h in inventory.group(group)})
    urls = tuple(UrlNeed(f"{url}/metrics", f"gates.g3.evidence.store_metrics[{i}]", checks)
                 for i, url in enumerate(g3.evidence.store_metrics))
    return Needs(urls=urls, sudo_hosts=tuple(sudo),
                 load_agent=checks if config.load.placement == "client" else ())


HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   release=release_engines, dry_run=dry_run, unconfigured=unserved,
                   deviations=deviations, config_summary=config_summary, needs=needs)

__all__ = ["HOOKS"]
