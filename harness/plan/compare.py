"""Each requirement of the plan against what G2 measured: OK, AT RISK or SHORT.

Why a headroom: G2's fio figures are the volume's best case (one sequential stream of
1 MiB blocks at queue depth 32, nothing else running); the engine's reads come in KV
chunks while other requests write. A requirement met with less than `headroom` to spare
(20 % by default) is AT RISK, not OK. The plan is never a gate: nothing here decides a
verdict, it says where G3 is likely to fall short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.plan.formulas import TierPlan
from harness.plan.inputs import Sourced

Status = Literal["OK", "AT RISK", "SHORT"]
NONE = Sourced(None)


@dataclass(frozen=True)
class Measured:
    """What G2 measured for one layout, per host (the worst of the layout's hosts), in
    bytes / s; value None: not measured."""

    seq_read: Sourced = field(default_factory=lambda: NONE)  # fio seq-read of the volume
    seq_write: Sourced = field(default_factory=lambda: NONE)  # fio seq-write of the same
    gds_read: Sourced = field(default_factory=lambda: NONE)  # gdsio's GPU-direct read


@dataclass(frozen=True)
class Comparison:
    layout: str
    concurrency: int
    requirement: str  # read_peak, read_avg, write_peak
    needed: float | None  # bytes / s on one host; None: no bandwidth meets the target
    measured: float
    source: str
    status: Status
    margin: float | None  # measured / needed - 1


def judge(needed: float | None, measured: float, headroom: float) -> tuple[Status, float | None]:
    """SHORT below the need (or when no bandwidth meets it), AT RISK within `headroom`
    above it, OK beyond."""
    if needed is None:
        return "SHORT", None
    margin = measured / needed - 1
    if margin < 0:
        return "SHORT", margin
    return ("AT RISK" if margin < headroom - 1e-9 else "OK"), margin  # 12 / 10 - 1 < 0.2


def compare(tier: TierPlan, measured: Measured, headroom: float) -> tuple[Comparison, ...]:
    """The host-level requirements of `tier` that G2 measured something for: the peak
    read (TTFT) against fio's sequential read and, with GDS, gdsio's; the averaged read
    (throughput) against fio's read; the prefill write peak against fio's write."""
    rows: list[tuple[str, float | None, Sourced, bool]] = [
        ("read_peak", tier.read_peak_host_bytes_s, measured.seq_read,
         tier.ttft_target.value is not None),
        ("read_peak", tier.read_peak_host_bytes_s, measured.gds_read,
         tier.ttft_target.value is not None),
        ("read_avg", tier.read_avg_host_bytes_s, measured.seq_read,
         tier.read_avg_host_bytes_s is not None),
        ("write_peak", tier.write_peak_host_bytes_s, measured.seq_write,
         tier.write_peak_host_bytes_s is not None),
    ]
    out = []
    for name, needed, got, wanted in rows:
        if not wanted or got.value is None:
            continue
        status, margin = judge(needed, got.value, headroom)
        out.append(Comparison(tier.layout, tier.concurrency, name, needed, got.value,
                              got.source, status, margin))
    return tuple(out)
