"""Each arm's predicted TTFT p50 per layout and tier, from the plan's inputs and what G2
measured, ready to be set beside what G3 measured (pure).

Why its own step: `gate plan` predicts before G3 and the G3 report compares after it;
both must predict from the same inputs the same way, so the choice of read bandwidth (G2's
fio sequential read of the accelerator's volume, else gdsio's GPU-direct read) is made
here once. The relative error is predicted / measured - 1: positive where the model
expected a slower TTFT than the engine showed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.plan.formulas import TierPlan, plan
from harness.plan.g2 import G2Measured, measured_for
from harness.plan.inputs import Sourced
from harness.plan.predict import predicted_ttft_p50
from harness.plan.site import Planned


@dataclass(frozen=True)
class Prediction:
    """One tier of one layout: each arm's TTFT p50 in seconds (None: an input missing)."""

    layout: str
    concurrency: int
    baseline_s: float | None
    accelerated_s: float | None
    prefill: Sourced  # one instance's tokens / s
    read: Sourced  # one host's read bandwidth, bytes / s
    tier: TierPlan


def read_bandwidth(hosts: tuple[str, ...], g2: G2Measured) -> Sourced:
    """One host's read bandwidth for the accelerated arm: fio's sequential read of the
    volume, else gdsio's GPU-direct read, else unknown."""
    measured = measured_for(hosts, g2)
    return measured.seq_read if measured.seq_read.value is not None else measured.gds_read


def predictions(planned: Planned, g2: G2Measured,
                reads: Mapping[str, Sourced] | None = None) -> tuple[Prediction, ...]:
    """Every layout and tier of `planned`, in order. `reads` (layout -> one host's read
    bandwidth) replaces G2's figures where they measured something else than the KV tier
    (a simulated run: fio read this machine's disk, the tier is modelled); a layout it
    does not name then has no accelerated prediction, rather than one from the wrong
    device."""
    out = []
    for inputs, hosts in zip(planned.inputs, planned.hosts, strict=True):
        read = (read_bandwidth(hosts, g2) if reads is None
                else reads.get(inputs.layout, Sourced(None)))
        for tier in plan(inputs):
            acc = (predicted_ttft_p50(tier, read.value, "accelerated")
                   if read.value is not None else None)
            out.append(Prediction(tier.layout, tier.concurrency,
                                  predicted_ttft_p50(tier, 1.0, "baseline"), acc,
                                  tier.prefill, read, tier))
    return tuple(out)


def relative_error(predicted: float, measured: float) -> float | None:
    """predicted / measured - 1; None where the measured value is no positive number."""
    if not measured > 0 or measured == float("inf"):
        return None
    return predicted / measured - 1
