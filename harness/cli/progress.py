"""What a running gate prints on stderr: one line per check as it is stored, and live
progress (G3 and G2 serving: gate, layout, tier, arm, pair, phase, requests; G2 fio: job
i of N; G1: hosts probed of N and the tool running; elapsed and ETA).

On a terminal the progress is one line redrawn in place as requests finish (at most
REDRAW_HZ times a second, and each second for the clock); check lines and headers are
printed above it. Elsewhere (a log, a pipe, cron) nothing is redrawn: one line when a
load phase starts, one per finished step (a fio job, a host probed), and a `…` line after
`quiet_s` of silence (30 s), as a log reader needs.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

from harness.cli.common import stderr_console
from harness.cli.wrap import say, width_of, wrap

if TYPE_CHECKING:  # the runner imports pytest: `gate run --help` must not
    from harness.runner import Progress, RunOutcome

COLOURS = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta"}
REDRAW_HZ = 4.0


MESSAGE_CHARS = 240  # a check line's message, unless -v
CHECK_INDENT = 15  # a check line's continuation: under its name, past "  STOP-LOSS "
STEP_INDENT = 4  # a progress line's continuation in a log
NBSP = "\u00a0"  # holds a progress line's part together while it is wrapped


def _head(text: str, limit: int) -> str:
    """The start of `text` in at most `limit` characters, cut between words (inside a
    word only when the text has no space in the last two thirds of the room)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return (text[:cut] if cut > limit // 3 else text[:limit]).rstrip()


def shorten(message: str, limit: int = MESSAGE_CHARS) -> str:
    """`message` within `limit` characters, keeping what it says to do (the part after its
    last " -> ") whole: the end of the cause goes, never the fix; cut between words."""
    if len(message) <= limit:
        return message
    cause, arrow, fix = message.rpartition(" -> ")
    if arrow and len(fix) < limit // 2:
        return f"{_head(cause, limit - len(fix) - 8)} ... -> {fix}"
    return _head(message, limit - 4) + " ..."


def check_printer(live: LiveLines | None = None, verbose: bool = False) -> Progress:
    """One line per stored check; through `live` (above its progress line) when given.
    A message is shown when the check did not PASS (shortened, its fix kept: `shorten`);
    `verbose` (-v) shows every check's message, whole. A cause said by an earlier check
    is said once: later checks it hit name that check instead (an unreachable host fails
    every check on it with the same words). A line longer than the terminal wraps on
    words, under the check's name (harness.cli.wrap)."""
    first: dict[str, str] = {}  # message -> the check that said it first

    def line(markup: str) -> None:
        if live is not None:
            live.print(markup, indent=CHECK_INDENT)
        else:
            say(stderr_console(), markup, CHECK_INDENT)

    def show(name: str, host: str | None, verdict: str, message: str) -> None:
        from rich.markup import escape

        word = str(getattr(verdict, "value", verdict))
        where = f" [{host}]" if host else ""  # square brackets: escaped, not markup
        tail = ""
        if message and (verbose or word != "PASS"):
            said = first.setdefault(message, name + where)
            tail = (f" - {message if verbose else shorten(message)}"
                    if said == name + where or word == "PASS"
                    else f" - the same cause as {said}")
        line(f"  [{COLOURS.get(word, 'white')}]{word:>12}[/] {escape(name + where + tail)}")

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


def _int(d: dict[str, object], key: str) -> int:
    return int(str(d[key]))


def progress_line(d: dict[str, object], elapsed: float, in_phases: float | None = None,
                  phase_elapsed: float | None = None) -> str:
    """`G3 · TP8 · c=16 · accelerated · pair 2 · measured: 40/64 requests · 1:12 elapsed ·
    ETA 3:05` from a harness.loadgen.phase_progress record (`measured: 64 requests` while
    none has finished: a log's one line a phase, which "0/64" misread as stuck). The ETA:
    what is left of this phase at the pace its finished requests set (`phase_elapsed`,
    default the record's), plus the phases left of the plan (the minimum repetitions and
    the pairs added so far to undecided cells), each as long as a phase took so far
    (`in_phases`: since the first phase began, so the preflight's engine starts are not
    counted; default `elapsed`)."""
    done, total = _int(d, "done"), max(1, _int(d, "total"))
    phase_no, planned = _int(d, "phase_no"), _int(d, "phases_planned")
    spent = elapsed if in_phases is None else in_phases
    here = float(str(d.get("phase_elapsed", 0.0))) if phase_elapsed is None else phase_elapsed
    before = (spent - here) / (phase_no - 1) if phase_no > 1 else None  # a whole phase
    this = here * total / done if done else before  # this phase's length at its pace
    per = before if before is not None else this
    if phase_no > planned:
        eta = " · past the minimum pairs: the gate adds pairs while a cell is undecided"
    elif this is None or per is None:
        eta = ""
    else:
        eta = f" · ETA {_clock(max(0.0, this - here) + (planned - phase_no) * per)}"
    return (f"{d['gate']} · {d['layout']} · c={d['tier']} · {d['arm']} · "
            f"{d.get('unit', 'rep')} {_int(d, 'repetition') + 1}"
            f"{' (added)' if d.get('added') else ''} · "
            f"{d['phase']}: {f'{done}/' if done else ''}{total} requests · "
            f"{_clock(elapsed)} elapsed{eta}")


def step_line(d: dict[str, object], elapsed: float, in_step: float,
              took: list[float]) -> str:
    """`G2 · fio · gpu1 local-disk · seq-read 3/8 · 0:12 elapsed · ETA 0:20` from a
    harness.progress_log step: the ETA is what is left of this step and the steps after
    it, each as long as the finished ones took (`took`), else as the step expects; none
    for steps that overlap (G1's hosts)."""
    parts = [str(p) for p in d["parts"]] if isinstance(d["parts"], list) else []
    if d.get("state") == "end" and d.get("sequential") and d.get("took") is not None:
        parts.append(f"done in {_clock(float(str(d['took'])))}")
    line = " · ".join([str(d["gate"]), *parts, f"{_clock(elapsed)} elapsed"])
    expected = d.get("expected_s")
    per = statistics.fmean(took) if took else \
        float(str(expected)) if expected is not None else None
    if not d.get("sequential") or per is None:
        return line
    if d.get("state") == "end":
        left = (_int(d, "total") - _int(d, "index")) * per
    else:
        left = max(0.0, per - in_step) + (_int(d, "total") - _int(d, "index")) * per
    return f"{line} · ETA {_clock(left)}"


def fit(text: str, width: int) -> str:
    """`text` in `width` cells for a line redrawn in place (a wrapped line cannot be
    erased): first without the words a reader can spare, so the ETA at its end stays;
    else cut after the last whole word that fits."""
    short = text.replace(" requests", "").replace(" elapsed", "")
    for candidate in (text, short, short.replace(" · ", " ")):
        if len(candidate) <= width:
            return candidate
    return _head(short.replace(" · ", " "), width - 2) + " …"


class LiveLines:
    """The progress on stderr while a gate runs (see the module's docstring). Fed by the
    `harness.progress` logger's records; `print` puts a line above the progress line."""

    def __init__(self, console: Any, quiet_s: float, redraw: bool) -> None:
        import logging
        import threading

        self.console = console
        self.quiet_s = quiet_s
        self.redraw = redraw  # a terminal: one line redrawn in place
        self.started = time.monotonic()
        self.printed = self.started  # the last line printed (or redrawn)
        self.drawn = ""  # the progress line on screen now ("" none)
        self.latest: dict[str, object] | None = None
        self.first_phase: float | None = None
        self.phase_began = 0.0
        self.step_began = 0.0
        self.took: list[float] = []  # seconds of each finished sequential step
        self.key: tuple[object, ...] | None = None
        self.saved = (0, True)  # the logger's level and propagate, restored at the end
        self.lock = threading.RLock()
        self.done = threading.Event()
        self.handler = logging.Handler()
        self.handler.emit = self._record  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self._tick, name="progress", daemon=True)

    # --- output ------------------------------------------------------------------------

    def _erase(self) -> None:
        if self.drawn:
            self.console.file.write("\r\x1b[2K")
            self.drawn = ""

    def _draw(self, text: str) -> None:
        """The progress line, in place, cut to the terminal's width (never wrapped: a
        wrapped line cannot be erased)."""
        shown = fit(text, max(10, self.console.width - 1))
        self.console.file.write(f"\r\x1b[2K\x1b[2m{shown}\x1b[0m")
        self.console.file.flush()
        self.drawn = shown
        self.printed = time.monotonic()

    def print(self, markup: str, indent: int = 0) -> None:
        """A line (rich markup) above the progress line, which is drawn again under it;
        wrapped on words to the terminal's width, continuation lines `indent` cells in."""
        with self.lock:
            redraw = bool(self.drawn)
            self._erase()
            say(self.console, markup, indent)
            self.printed = time.monotonic()
            if redraw and self.latest is not None:
                self._draw(self._line(self.latest))

    def clear(self) -> None:
        """Erase the progress line now (before another writer's output)."""
        with self.lock:
            self._erase()
            self.console.file.flush()

    def _say(self, text: str) -> None:
        """A progress line: redrawn on a terminal; in a log printed, wrapped between its
        " · " parts ("ETA 0:09" stays on one line)."""
        if self.redraw:
            self._draw(text)
        else:
            from rich.markup import escape

            kept = " · ".join(part.replace(" ", NBSP) for part in text.split(" · "))
            width = width_of(self.console)
            for line in wrap(kept, width - 2, STEP_INDENT - 2) if width else [kept]:
                self.console.print(f"  [dim]{escape(line.replace(NBSP, ' '))}[/]",
                                   highlight=False, soft_wrap=True)
            self.printed = time.monotonic()

    # --- records -----------------------------------------------------------------------

    def _record(self, record: Any) -> None:
        from harness.loadgen.phase_progress import KEY
        from harness.progress_log import STEP_KEY

        phase, step = getattr(record, KEY, None), getattr(record, STEP_KEY, None)
        with self.lock:
            now = time.monotonic()
            if isinstance(phase, dict):
                self._phase(phase, now)
            elif isinstance(step, dict):
                self._step(step, now)

    def _phase(self, d: dict[str, object], now: float) -> None:
        key = tuple(d[k] for k in ("gate", "layout", "tier", "arm", "repetition", "phase"))
        self.latest = {**d, "kind": "phase"}
        if key != self.key:
            self.key = key
            self.phase_began = now - float(str(d.get("phase_elapsed", 0.0)))
            if self.first_phase is None:
                self.first_phase = self.phase_began
            self._say(self._line(self.latest))
        elif self.redraw and now - self.printed >= 1 / REDRAW_HZ:
            self._draw(self._line(self.latest))

    def _step(self, d: dict[str, object], now: float) -> None:
        self.key = None
        self.latest = {**d, "kind": "step"}
        if d.get("state") == "start":
            self.step_began = now
            if self.redraw and now - self.printed >= 1 / REDRAW_HZ:
                self._draw(self._line(self.latest))  # G1 starts tools by the hundred
            return
        if d.get("sequential") and d.get("took") is not None:
            self.took.append(float(str(d["took"])))
        self._say(self._line(self.latest))  # a finished step: a line in a log too

    def _line(self, d: dict[str, object]) -> str:
        now = time.monotonic()
        if d.get("kind") == "step":
            return step_line(d, now - self.started, now - self.step_began, self.took)
        first = self.first_phase if self.first_phase is not None else now
        return progress_line(d, now - self.started, now - first, now - self.phase_began)

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if self.redraw and self.drawn and self.latest is not None:
                    self._draw(self._line(self.latest))  # the clock moves
                    continue
                if now - self.printed < self.quiet_s:
                    continue
                if self.latest is not None:
                    self._say("… " + self._line(self.latest))
                else:
                    self._say(f"… still working, {_clock(now - self.started)} elapsed")

    def __enter__(self) -> LiveLines:
        import logging

        from harness.progress_log import LOGGER

        logger = logging.getLogger(LOGGER)
        self.saved = (logger.level, logger.propagate)
        logger.addHandler(self.handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import logging

        from harness.progress_log import LOGGER

        self.done.set()
        self.thread.join(2)
        logger = logging.getLogger(LOGGER)
        logger.removeHandler(self.handler)
        logger.setLevel(self.saved[0])
        logger.propagate = self.saved[1]
        self.clear()
        self.console.file.close()


def live_progress() -> LiveLines:
    """LiveLines on stderr, at the pace its reader needs. The lines go to a duplicate of
    file descriptor 2 taken now: pytest captures fd 2 while a check runs, and the load
    phases run inside checks."""
    import os

    from rich.console import Console

    stream = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    console = Console(file=stream)
    terminal = bool(console.is_terminal)
    return LiveLines(console, 10.0 if terminal else 30.0, redraw=terminal)
