"""What the planner is given: one layout's shape, workload and SLA, tier by tier.

Every figure carries where it came from (`source`: "SLA", "--prefill-tok-s", "G2 run 3
TP8-c16", ...) because a plan is only as good as its inputs and the reader must see which
ones were measured and which were assumed. Validation of what a user typed happens where
the flag or config key is known (harness.plan.site); here a bad value is a bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.plan.shape import ModelShape

GB = 1e9  # storage units are decimal: fio's MB/s, the seed's GB/s


@dataclass(frozen=True)
class Context:
    """One prompt length of the mix (tokens) and its share of the requests."""

    tokens: int
    share: float


@dataclass(frozen=True)
class Sourced:
    """A figure and where it came from; `value` None: not known."""

    value: float | None
    source: str = ""


@dataclass(frozen=True)
class TierInput:
    """What may differ from one concurrency tier to the next."""

    concurrency: int  # requests in flight over the whole layout
    ttft_p50_s: Sourced  # the TTFT p50 target
    throughput_tps: Sourced  # output tokens / s of the whole layout (target)
    retention_docs: int  # documents whose KV must stay resident in the cold tier
    prefill_tok_s: Sourced  # one instance's prefill speed at this tier


@dataclass(frozen=True)
class PlanInput:
    """One layout (TP x instances) of one model under one workload and SLA."""

    shape: ModelShape
    layout: str
    tp: int
    instances: int
    instances_per_host: int  # the most instances one host runs (they share its volume)
    contexts: tuple[Context, ...]
    suffix_tokens: int  # computed on every request (the question after the document)
    output_tokens: int
    prefix_sharing: float  # share of each prefix common to every request (stays hot)
    gds: bool  # GPUDirect Storage: reads land in GPU memory without a host copy
    bounce_bytes_s: float  # host -> GPU copy bandwidth of one GPU where GDS is absent
    tiers: tuple[TierInput, ...]

    def __post_init__(self) -> None:
        if self.tp <= 0 or self.instances <= 0 or not 0 < self.instances_per_host <= \
                self.instances:
            raise ValueError(f"bad layout: tp {self.tp}, instances {self.instances} "
                             f"({self.instances_per_host} a host)")
        if self.shape.kv_heads % self.tp:
            raise ValueError(f"tp {self.tp} does not divide {self.shape.kv_heads} KV heads")
        if not self.contexts or not math.isclose(sum(c.share for c in self.contexts), 1.0,
                                                 abs_tol=1e-6):
            raise ValueError(f"context shares must sum to 1: {self.contexts}")
        if any(c.tokens <= self.suffix_tokens or c.share <= 0 for c in self.contexts):
            raise ValueError(f"every context is longer than the suffix: {self.contexts}")
        if self.output_tokens <= 0 or self.suffix_tokens < 0:
            raise ValueError("output tokens > 0 and suffix tokens >= 0")
        if not 0 <= self.prefix_sharing < 1 or self.bounce_bytes_s <= 0:
            raise ValueError("prefix sharing in [0, 1) and a positive bounce bandwidth")
        for t in self.tiers:
            if t.concurrency <= 0 or t.retention_docs <= 0:
                raise ValueError(f"bad tier {t}")
            for fig in (t.ttft_p50_s, t.throughput_tps, t.prefill_tok_s):
                if fig.value is not None and not fig.value > 0:
                    raise ValueError(f"targets and speeds are positive: {t}")
