"""Where a gate is, on the `harness.progress` logger: the steps that are not load phases
(G1's probes of each host, G2's fio jobs) as records the command line renders beside
G3's phases (harness.loadgen.phase_progress), in the same style.

Why logging (as for the phases): the steps run inside the pytest session, four layers
below the command line that shows them; a logger is the channel both already share.
Without a handler the records cost nothing. A leaf: imports nothing of the harness.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass

LOGGER = "harness.progress"
STEP_KEY = "gate_step"  # the record attribute holding a step as a dict


@dataclass(frozen=True)
class Step:
    """One step of a gate: what its progress line names, e.g. ("fio", "gpu1 local-disk",
    "seq-read 3/8")."""

    gate: str
    parts: tuple[str, ...]
    index: int  # 1-based; the steps finished before it are index - 1 when sequential
    total: int
    expected_s: float | None = None  # how long it should take (fio: its runtime)
    sequential: bool = True  # False: steps overlap (G1's hosts), so no ETA from them


def _emit(step: Step, state: str, took: float | None = None) -> None:
    logging.getLogger(LOGGER).info(
        "%s %s %s", step.gate, " ".join(step.parts), state,
        extra={STEP_KEY: {**asdict(step), "parts": list(step.parts), "state": state,
                          "took": took}})


def finished(step: Step, took: float) -> None:
    """A step that ended elsewhere and is only now known (a detached soak's window)."""
    _emit(step, "end", took)


class Timed:
    """`with Timed(step):` announces the step and, at its end, how long it took."""

    def __init__(self, step: Step) -> None:
        self.step = step
        self.began = 0.0

    def __enter__(self) -> Timed:
        self.began = time.monotonic()
        _emit(self.step, "start")
        return self

    def __exit__(self, *exc: object) -> None:
        _emit(self.step, "end", time.monotonic() - self.began)


class HostProbes:
    """G1's hosts, probed at once from a pool of threads: each tool as a host starts it,
    and each host when its probes are done ("2/3 hosts probed")."""

    def __init__(self, gate: str, total: int) -> None:
        self.gate = gate
        self.total = total
        self.done = 0
        self.began = time.monotonic()
        self.lock = threading.Lock()

    def _step(self, host: str, *what: str) -> Step:
        return Step(self.gate, ("probe", host, *what,
                                f"{self.done}/{self.total} hosts probed"),
                    index=self.done + 1, total=self.total, sequential=False)

    def probing(self, host: str, tool: str) -> None:
        with self.lock:
            _emit(self._step(host, tool), "start")

    def probed(self, host: str) -> None:
        with self.lock:
            self.done += 1
            _emit(self._step(host), "end", time.monotonic() - self.began)
