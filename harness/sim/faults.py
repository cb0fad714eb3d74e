"""Fault draws: which request fails, how, and which one stalls. Seeded, so a faulty run
is reproducible request for request (in arrival order)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from harness.sim.spec import FaultSpec

FaultKind = Literal["none", "http_500", "cut"]


@dataclass(frozen=True)
class Fault:
    kind: FaultKind = "none"
    cut_after: int = 0  # tokens streamed before a cut
    stall_at: int | None = None  # token index after which the stream pauses


class FaultDraws:
    def __init__(self, spec: FaultSpec, seed: int) -> None:
        self.spec = spec
        self._rng = random.Random(f"gate-sim-faults-{seed}")

    def draw(self, max_tokens: int, *, stream: bool) -> Fault:
        spec = self.spec
        if spec.error_rate <= 0 and spec.stall_rate <= 0:
            return Fault()
        rng = self._rng
        kind: FaultKind = "none"
        cut_after = 0
        if spec.error_rate > 0 and rng.random() < spec.error_rate:
            if stream and max_tokens > 1 and rng.random() < 0.5:
                kind = "cut"
                cut_after = rng.randint(1, max_tokens - 1)
            else:
                kind = "http_500"
        stall_at = None
        if spec.stall_rate > 0 and max_tokens > 1 and rng.random() < spec.stall_rate:
            stall_at = rng.randint(1, max_tokens - 1)
        return Fault(kind=kind, cut_after=cut_after, stall_at=stall_at)
