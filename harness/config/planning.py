"""The planner's section of the site config (`plan:`): the customer's SLA and what the
planner must assume where G2 has measured nothing (harness/plan, `gate plan`).

Why in gate.yaml: the SLA belongs to the site like its layouts and tiers, and `gate plan`
reads the model, layouts, tiers and workload from the same file. Nothing here changes
what a gate runs or decides: the plan is a risk, never a gate. Re-exported by
harness.config.models.
"""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from harness.config.base import Frozen


class PlanContext(Frozen):
    """One prompt length of the customer's mix and its share of the requests."""

    tokens: int = Field(gt=0)
    share: float = Field(gt=0, le=1)


class Plan(Frozen):
    # The customer's TTFT p50 target at every tier, s. null: G3's criterion on G2's
    # measured baseline ((1 - gates.g3.thresholds.ttft_p50_drop) x its TTFT p50).
    ttft_p50: float | None = Field(default=None, gt=0)
    # Output tokens / s a layout must deliver at every tier. null: G3's criterion on G2's
    # measured baseline ((1 + throughput_gain) x its throughput).
    throughput: float | None = Field(default=None, gt=0)
    # The prompt lengths of the customer's requests (tokens, share of the requests;
    # shares sum to 1). Empty: G3's workload, doc_tokens + question_tokens.
    contexts: list[PlanContext] = Field(default_factory=list)
    # Share of each document common to every request (a system prompt): kept hot once.
    prefix_sharing: float = Field(default=0.0, ge=0, lt=1)
    # Documents whose KV must stay resident on the cold tier. null: G3's documents at
    # each tier (workload.docs_per_concurrency x c, at least min_docs).
    retention: int | None = Field(default=None, gt=0)
    # One instance's prefill speed, tokens / s, where G2's serving baseline has not
    # measured the layout (the store's figure wins).
    prefill_tok_s: float | None = Field(default=None, gt=0)
    # Host -> GPU copy bandwidth of one GPU, GB/s, where GDS is absent (gates.g2.gds
    # false): every KV byte read crosses a CPU bounce buffer. 25: PCIe 4.0 x16 pinned.
    bounce_gbps: float = Field(default=25.0, gt=0)
    # The gates.g2.fio target that is the accelerator's volume. null: the target on
    # gates.g3.evidence.kv_volume's mount or device, else the only target.
    volume: str | None = Field(default=None, min_length=1)
    # A requirement met with less than this share to spare is AT RISK, not OK.
    headroom: float = Field(default=0.2, ge=0, le=10)

    @model_validator(mode="after")
    def _shares(self) -> Plan:
        total = sum(c.share for c in self.contexts)
        if self.contexts and not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"the contexts' shares must sum to 1, not {total:g}")
        return self


def volume_problem(plan: Plan, fio_targets: list[str]) -> str | None:
    """Why plan.volume names no G2 fio target, or None (`gate plan` refuses it; other
    commands do not, since a plan setting never stops a gate)."""
    if plan.volume is None or plan.volume in fio_targets:
        return None
    return (f"{plan.volume!r} is not a gates.g2.fio target ("
            + (", ".join(fio_targets) if fio_targets else "there are none") + ")")
