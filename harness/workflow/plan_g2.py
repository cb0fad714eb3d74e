"""What G2 measured that `gate plan` holds its requirements against, read from the store.

Why so thin: the reading of G2's figures (its host-fact keys, MB/s and GiB/s into bytes /
s, the serving baseline's medians) lives in harness.plan.g2, pure, because the G3
report's plan section reads them too and may not import the workflow. Here is only the
store read, through harness.store.lookups, never SQL.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.config.models import SiteConfig
from harness.plan.g2 import GATE, G2Measured, fact_keys, from_facts
from harness.store import Store
from harness.store.lookups import campaign_facts


def read_g2(store: Store, config: SiteConfig, tiers: Sequence[int]) -> G2Measured:
    """The latest figures each host has from a G2 run of the config's campaign."""
    facts = campaign_facts(store, f"{config.site.name}/{config.campaign.name}", GATE,
                           fact_keys(config, tiers))
    return from_facts(config, facts, tiers)
