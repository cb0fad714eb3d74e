"""The plan: each tier's storage requirements from the shape, the workload and the SLA.

Why these formulas (docs/plan.md derives each, with the seed's R1 worked through): a
cold-recovery request loads its document's KV from the cold tier and computes only its
suffix, so its TTFT is the suffix's prefill, plus the host copy where GDS is absent, plus
the read of its KV while every other request in flight reads too. The read bandwidth a
TTFT target needs is therefore a *peak*: the bytes in flight over the time the target
leaves after compute. The bandwidth averaged over the requests' whole lives (what a
storage counter shows over a phase) is lower, by the share of a life spent loading;
it is what a throughput target needs (Little's law).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.plan.inputs import PlanInput, Sourced, TierInput


@dataclass(frozen=True)
class TierPlan:
    """One tier's requirements. Rates in bytes / s, sizes in bytes, times in s; None
    where an input is missing (`notes` says which) or the target cannot be met."""

    layout: str
    concurrency: int
    per_instance: int  # requests in flight on the busiest instance
    per_host: int  # ... on the busiest host (its instances share its volume)
    kv_bytes_per_token: int
    kv_bytes_per_token_gpu: int
    prompt_tokens: float  # mean over the context mix
    cold_tokens: float  # loaded from the cold tier, per request (mean)
    cold_bytes: float
    shared_tokens: float  # the prefix every request shares: held once, hot
    ttft_target: Sourced
    throughput_target: Sourced
    prefill: Sourced  # one instance's tokens / s
    compute_s: float | None  # the suffixes' prefill; None: no prefill speed
    bounce_s: float  # the host -> GPU copy where GDS is absent (0 with GDS)
    time_left_s: float | None  # for the read: target - compute - bounce
    read_peak_bytes_s: float | None  # the whole layout, for the TTFT target
    read_peak_host_bytes_s: float | None
    read_avg_bytes_s: float | None  # the whole layout, for the throughput target
    read_avg_host_bytes_s: float | None
    request_life_s: float | None  # concurrency / completion rate (throughput target)
    write_peak_bytes_s: float | None  # the layout's prefills writing their new KV
    write_peak_host_bytes_s: float | None
    retention_docs: int
    capacity_bytes: float  # resident KV of the retained documents (cold tier)
    hot_bytes_instance: float  # KV of the sequences one instance decodes at once
    hot_bytes_gpu: float
    notes: tuple[str, ...]

    @property
    def unreachable(self) -> bool:
        """The target leaves no time to read, whatever the bandwidth."""
        return self.time_left_s is not None and self.time_left_s <= 0


def _tier(p: PlanInput, t: TierInput) -> TierPlan:
    kvb = p.shape.kv_bytes_per_token
    per_instance = math.ceil(t.concurrency / p.instances)
    per_host = per_instance * p.instances_per_host
    prompt = sum(c.tokens * c.share for c in p.contexts)
    prefix = prompt - p.suffix_tokens
    shared = p.prefix_sharing * prefix
    cold = prefix - shared
    cold_bytes = cold * kvb
    notes: list[str] = []
    speed = t.prefill_tok_s.value
    if p.suffix_tokens == 0:
        compute: float | None = 0.0
    elif speed is None:
        compute = None
        if t.ttft_p50_s.value is not None:
            notes.append("the suffix's prefill is not counted (no prefill speed): the peak "
                         "read is at least this")
    else:
        compute = per_instance * p.suffix_tokens / speed
    bounce = 0.0 if p.gds else per_instance * cold_bytes / (p.tp * p.bounce_bytes_s)
    target = t.ttft_p50_s.value
    left = None if target is None else target - (compute or 0.0) - bounce
    peak = peak_host = None
    if left is not None and left > 0:
        peak = t.concurrency * cold_bytes / left
        peak_host = per_host * cold_bytes / left
    elif left is not None:
        notes.append(f"the TTFT target {target:g} s leaves no time to read: compute and "
                     f"bounce take {(compute or 0.0) + bounce:.3g} s")
    avg = avg_host = life = None
    if t.throughput_tps.value is not None:
        rate = t.throughput_tps.value / p.output_tokens  # requests completed / s
        avg = rate * cold_bytes
        avg_host = avg * p.instances_per_host / p.instances
        life = t.concurrency / rate
        if target is not None and life < target:
            notes.append(f"at c={t.concurrency} the throughput target leaves a request "
                         f"{life:.3g} s from its arrival to its last token, less than the "
                         f"TTFT target {target:g} s: both cannot hold at this concurrency")
    write = write_host = None
    if speed is not None:
        write = p.instances * speed * kvb
        write_host = p.instances_per_host * speed * kvb
    hot = (per_instance * (cold + p.suffix_tokens + p.output_tokens) + shared) * kvb
    return TierPlan(
        layout=p.layout, concurrency=t.concurrency, per_instance=per_instance,
        per_host=per_host, kv_bytes_per_token=kvb,
        kv_bytes_per_token_gpu=p.shape.kv_bytes_per_token_gpu(p.tp), prompt_tokens=prompt,
        cold_tokens=cold, cold_bytes=cold_bytes, shared_tokens=shared,
        ttft_target=t.ttft_p50_s, throughput_target=t.throughput_tps,
        prefill=t.prefill_tok_s, compute_s=compute, bounce_s=bounce, time_left_s=left,
        read_peak_bytes_s=peak, read_peak_host_bytes_s=peak_host, read_avg_bytes_s=avg,
        read_avg_host_bytes_s=avg_host, request_life_s=life, write_peak_bytes_s=write,
        write_peak_host_bytes_s=write_host, retention_docs=t.retention_docs,
        capacity_bytes=(t.retention_docs * cold + shared) * kvb, hot_bytes_instance=hot,
        hot_bytes_gpu=hot / p.tp, notes=tuple(notes))


def plan(inputs: PlanInput) -> tuple[TierPlan, ...]:
    """Every tier of one layout, in the order given."""
    return tuple(_tier(inputs, t) for t in inputs.tiers)
