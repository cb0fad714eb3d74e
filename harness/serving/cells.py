"""The serving cells a campaign measures: its layouts (`gates.g3.layouts`, else every
layout) x its concurrency tiers, and the documents each phase asks. G3 defines them with
and without the accelerator, G2 baselines the same cells without it, G4 soaks one of them:
one definition, so the gates compare like with like. Pure: no I/O."""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.config.models import Layout, SiteConfig

ARMS = ("baseline", "accelerated")


@dataclass(frozen=True)
class Cell:
    layout: Layout
    tier: int

    @property
    def key(self) -> str:
        return f"{self.layout.name}-c{self.tier}"


def layouts(config: SiteConfig) -> list[Layout]:
    """The layouts the serving gates measure: `gates.g3.layouts`, else every layout."""
    wanted = config.gates.g3.layouts or [layout.name for layout in config.layouts]
    return [config.layout(name) for name in wanted]


def cells(config: SiteConfig) -> list[Cell]:
    return [Cell(layout, tier) for layout in layouts(config) for tier in config.gates.g3.tiers]


def docs_for(tier: int, docs_per_concurrency: int, min_docs: int = 0) -> int:
    """Documents per phase: every one is asked exactly once, so every request is cold.
    4 x c by default, but at least `min_docs` (64): with 16 requests a phase, c=4 cells
    reach only ~45 % power in 8 pairs (docs/g3-statistics.md)."""
    return max(docs_per_concurrency * tier, min_docs)


def doc_seed(workload_seed: int, repetition: int) -> int:
    """Both arms of a pair get the same documents; each repetition gets fresh ones. Cells
    of one repetition share a document set (tier c asks its first 4 x c documents), so it
    is generated and calibrated once: the arms never share a tier, so this cannot leak KV
    from one arm to the other."""
    return random.Random(f"{workload_seed}:{repetition}").randrange(2**31)


def unserved(config: SiteConfig) -> str | None:
    """Why a serving gate has nothing to drive in this config, or None."""
    if config.arms is None or not config.layouts:
        return "not configured (no arms / layouts)"
    return None
