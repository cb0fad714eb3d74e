"""A TTFT p50 predicted for both arms of G3 from the plan and a measured read bandwidth.

Why: before G3 runs for days, G2's fio figure of the accelerator's volume says what TTFT
the accelerated arm can reach at each tier, and the prefill speed what the baseline arm
will show; a predicted drop far from the threshold says early which way G3 will go.

This is the planner's model read backwards (docs/plan.md, "The predictor"), not the
simulator's: it imports nothing from harness.sim and knows no batch slowdown, jitter or
per-read latency. Every request of a tier is taken to start at once and share the
volume and the GPU with the others in flight (the first wave of G3's closed-loop
phase); it is unvalidated on GPU hardware until a site's G3 is compared with it.
"""

from __future__ import annotations

from typing import Literal

from harness.plan.formulas import TierPlan

Arm = Literal["baseline", "accelerated"]


def predicted_ttft_p50(tier: TierPlan, read_bytes_s: float, arm: Arm) -> float | None:
    """Seconds; None where the plan has no prefill speed and the arm needs one.

    baseline: the engine recomputes every token it does not share,
        per_instance x (prompt - shared) / prefill.
    accelerated: the suffix's prefill, the host copy without GDS, and the read of every
        in-flight request's cold KV through one host's volume,
        compute + bounce + per_host x cold_bytes / read_bytes_s.
    `read_bytes_s` is one host's read bandwidth (what G2's fio measures there)."""
    if not read_bytes_s > 0:
        raise ValueError(f"read bandwidth must be positive, not {read_bytes_s}")
    if arm == "baseline":
        speed = tier.prefill.value
        if speed is None:
            return None
        return tier.per_instance * (tier.prompt_tokens - tier.shared_tokens) / speed
    if tier.compute_s is None:
        return None
    return tier.compute_s + tier.bounce_s + tier.per_host * tier.cold_bytes / read_bytes_s
