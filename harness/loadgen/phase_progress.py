"""Where a gate is, for whoever shows it: one log record per load phase started and per
batch of requests finished, on the `harness.progress` logger.

Why logging: the phases run deep inside a pytest session (G3's session -> executor), and
the command line that shows progress sits four layers above; a logger is the one channel
both already share, with no callback threaded through the suite. The command line
(harness.cli.progress) renders the records and fills silences; without a handler they
cost nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

from harness.loadgen.engine import OnBatch
from harness.loadgen.records import RequestRecord
from harness.progress_log import LOGGER

__all__ = ["KEY", "LOGGER", "Where", "counted"]
KEY = "gate_progress"  # the record attribute holding the Where as a dict


@dataclass(frozen=True)
class Where:
    """One load phase's place in its gate (what a progress line names)."""

    gate: str
    layout: str
    tier: int
    arm: str
    repetition: int
    phase: str
    total: int  # requests in the phase
    phase_no: int  # 1-based count of phases the gate has started
    phases_planned: int  # at the minimum repetitions, plus the pairs added so far
    added: bool = False  # a pair past the minimum: the cell's looks could not decide
    unit: str = "rep"  # what the gate calls one repetition ("pair": an A/B gate's two arms)


def _emit(where: Where, done: int, started: float) -> None:
    logging.getLogger(LOGGER).info(
        "%s %s c=%d %s rep %d %s %d/%d", where.gate, where.layout, where.tier, where.arm,
        where.repetition + 1, where.phase, done, where.total,
        extra={KEY: {**asdict(where), "done": done, "phase_elapsed": time.monotonic() - started}})


def counted(where: Where, sink: OnBatch | None) -> OnBatch:
    """`sink` (may be None) wrapped to report each batch of finished requests; announces
    the phase at once."""
    started = time.monotonic()
    done = 0
    _emit(where, 0, started)

    def on_batch(records: list[RequestRecord]) -> None:
        nonlocal done
        if sink is not None:
            sink(records)
        done += len(records)
        _emit(where, done, started)

    return on_batch
