"""How a load phase's measured requests went out: what the phase's health judges its
sends by (harness/loadgen/health.py), filled by the engine (harness/loadgen/engine.py).

Closed loop, each send's lag is taken as it goes (one float per request); open loop, the
lags and spans are read from the records once the phase is over, with numpy, so a
scheduled send costs nothing extra while the phase runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.loadgen.records import RequestRecord


@dataclass
class Sends:
    """How a phase's measured requests went out, filled by run_phase_async for the
    phase's health. `lags`: closed loop, send - the moment its slot freed (at --rate inf,
    the moment it got a slot); open loop, send - its scheduled time (s). Open loop with a
    schedule only: `capped` sends found every slot busy when due; `scheduled_span` /
    `sent_span` are the last send's due and real time (s after the measured start), so
    sends / span is the target and the achieved rate."""

    lags: list[float] = field(default_factory=list)
    open_loop: bool = False
    capped: int = 0
    scheduled_span: float | None = None
    sent_span: float | None = None


def open_sends(sends: Sends, records: Sequence[RequestRecord], start: float,
                capped: int) -> None:
    """Open loop: each measured send against its schedule, from the records (`start`:
    the measured start, s after t0), with numpy once rather than per request."""
    went = [r for r in records if not r.warmup and r.sent is not None]
    sends.open_loop, sends.capped = True, capped
    if not went:
        return
    sent = np.fromiter((r.sent or 0.0 for r in went), dtype=np.float64, count=len(went))
    due = np.fromiter((r.scheduled for r in went), dtype=np.float64, count=len(went))
    sends.lags.extend(np.maximum(sent - due, 0.0).tolist())
    sends.scheduled_span = float(due.max()) - start
    sends.sent_span = float(sent.max()) - start
