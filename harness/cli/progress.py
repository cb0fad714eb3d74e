"""What a running gate prints on stderr: one line per check as it is stored, and live
progress lines (gate, layout, tier, arm, pair, phase, requests, elapsed, ETA)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harness.cli.common import stderr_console

if TYPE_CHECKING:  # the runner imports pytest: `gate run --help` must not
    from harness.runner import Progress, RunOutcome

COLOURS = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta"}


def check_printer() -> Progress:
    console = stderr_console()

    def show(name: str, host: str | None, verdict: str, message: str) -> None:
        from rich.markup import escape

        word = str(getattr(verdict, "value", verdict))
        where = f" [{host}]" if host else ""  # square brackets: escaped, not markup
        tail = f" - {message[:240]}" if message and word != "PASS" else ""
        console.print(f"  [{COLOURS.get(word, 'white')}]{word:>12}[/] "
                      f"{escape(name + where + tail)}", highlight=False, markup=True)

    return show


def outcome_line(gate: str, outcome: RunOutcome) -> str:
    """`G3 run 7: PASS` with its marks and reason, the line every gate run ends with."""
    marks = []
    if outcome.partial:
        marks.append("PARTIAL")
    if outcome.status == "ABORTED":
        marks.append("ABORTED")
    mark = f" ({', '.join(marks)})" if marks else ""
    reason = f": {outcome.reason}" if outcome.reason else ""
    return f"{gate} run {outcome.run_id}: {outcome.verdict.value}{mark}{reason}"


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_line(d: dict[str, object], elapsed: float,
                  in_phases: float | None = None) -> str:
    """`G3 · TP8 · c=16 · accelerated · pair 2 · measured: 40/64 requests · 1:12 elapsed ·
    ETA 3:05` from a harness.loadgen.phase_progress record; the ETA is the time per phase
    measured so far (`in_phases`: since the first phase began, so the preflight's engine
    starts do not count as phases; default `elapsed`) times the phases left at the
    minimum repetitions."""
    done, total = int(str(d["done"])), max(1, int(str(d["total"])))
    phases_done = int(str(d["phase_no"])) - 1 + done / total
    planned = int(str(d["phases_planned"]))
    spent = elapsed if in_phases is None else in_phases
    left = planned - phases_done
    eta = ("" if phases_done < 1 else
           f" · ETA {_clock(spent / phases_done * left)}" if left > 0 else
           " · past the minimum pairs: the gate adds pairs while a cell is undecided")
    return (f"{d['gate']} · {d['layout']} · c={d['tier']} · {d['arm']} · "
            f"{'pair' if d['gate'] == 'G3' else 'rep'} {int(str(d['repetition'])) + 1} · "
            f"{d['phase']}: {done}/{total} requests · "
            f"{_clock(elapsed)} elapsed{eta}")


class LiveLines:
    """Progress lines on stderr while a gate runs: one when a load phase starts, and
    whenever nothing was printed for `quiet_s` (10 s on a terminal, 30 s in a log), the
    latest state with elapsed time and ETA, so a run is never silent for minutes."""

    def __init__(self, console: Any, quiet_s: float) -> None:
        import logging
        import threading

        self.console = console
        self.quiet_s = quiet_s
        self.started = time.monotonic()
        self.printed = self.started
        self.latest: dict[str, object] | None = None
        self.first_phase: float | None = None
        self.key: tuple[object, ...] | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.handler = logging.Handler()
        self.handler.emit = self._record  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self._tick, name="progress", daemon=True)

    def _say(self, text: str) -> None:
        self.console.print(f"  [dim]{text}[/]", highlight=False, soft_wrap=True)
        self.printed = time.monotonic()

    def _record(self, record: Any) -> None:
        from harness.loadgen.phase_progress import KEY

        d = getattr(record, KEY, None)
        if not isinstance(d, dict):
            return
        key = tuple(d[k] for k in ("layout", "tier", "arm", "repetition", "phase"))
        with self.lock:
            self.latest = d
            if key != self.key:
                self.key = key
                self._say(self._line(d))

    def _line(self, d: dict[str, object]) -> str:
        now = time.monotonic()
        if self.first_phase is None:
            self.first_phase = now
        return progress_line(d, now - self.started, now - self.first_phase)

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if now - self.printed < self.quiet_s:
                    continue
                if self.latest is not None:
                    self._say("… " + self._line(self.latest))
                else:
                    self._say(f"… still working, {_clock(now - self.started)} elapsed")

    def __enter__(self) -> LiveLines:
        import logging

        from harness.loadgen.phase_progress import LOGGER

        logger = logging.getLogger(LOGGER)
        logger.addHandler(self.handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import logging

        from harness.loadgen.phase_progress import LOGGER

        self.done.set()
        self.thread.join(2)
        logging.getLogger(LOGGER).removeHandler(self.handler)
        self.console.file.close()


def live_progress() -> LiveLines:
    """LiveLines on stderr, at the pace its reader needs. The lines go to a duplicate of
    file descriptor 2 taken now: pytest captures fd 2 while a check runs, and the load
    phases run inside checks."""
    import os

    from rich.console import Console

    stream = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    console = Console(file=stream)
    return LiveLines(console, 10.0 if console.is_terminal else 30.0)
