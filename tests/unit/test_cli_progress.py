"""Progress that moves (issue 16): a phase's line counts its requests as they finish with
an ETA from the finished share; G1 (hosts probed, the tool running) and G2's fio jobs
have lines of their own; a terminal gets one line redrawn in place, a log one line per
finished step."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from rich.console import Console

from harness.cli.progress import LiveLines, check_printer, fit, progress_line, step_line
from harness.g2.fio import step
from harness.g2.plan import FioCell
from harness.loadgen.phase_progress import Where, counted
from harness.loadgen.records import RequestRecord
from harness.progress_log import LOGGER, HostProbes, Timed

PHASE = {"gate": "G3", "layout": "TP8", "tier": 16, "arm": "accelerated", "repetition": 1,
         "phase": "measured", "total": 64, "phase_no": 4, "phases_planned": 12, "unit": "pair"}


def test_a_phase_line_counts_requests_and_takes_its_eta_from_the_finished_share() -> None:
    # 3 phases took 60 s (20 s each); this one is 10 s in with half its requests done:
    # 10 s left of it and 8 phases of 20 s after it
    assert progress_line({**PHASE, "done": 32}, 70.0, phase_elapsed=10.0) == (
        "G3 · TP8 · c=16 · accelerated · pair 2 · measured: 32/64 requests · 1:10 elapsed "
        "· ETA 2:50")
    # the same moment with a quarter done: this phase will take 40 s, 30 s of it left
    assert progress_line({**PHASE, "done": 16}, 70.0, phase_elapsed=10.0).endswith(
        "16/64 requests · 1:10 elapsed · ETA 3:10")
    first = {**PHASE, "phase_no": 1, "done": 0}
    assert progress_line(first, 5.0, phase_elapsed=2.0).endswith(" 64 requests · 0:05 elapsed")
    assert progress_line({**first, "done": 16}, 5.0, phase_elapsed=2.0).endswith(
        "ETA 1:34")  # 8 s a phase at this pace: 6 s left of it + 11 phases
    # a pair added to an undecided cell is named so, and the plan grew by its 4 phases
    added = {**PHASE, "phase_no": 13, "phases_planned": 16, "added": True, "done": 32}
    assert progress_line(added, 250.0, phase_elapsed=10.0) == (
        "G3 · TP8 · c=16 · accelerated · pair 2 (added) · measured: 32/64 requests · 4:10 "
        "elapsed · ETA 1:10")  # 20 s a phase: 10 s + 3 phases


def test_a_fio_step_names_host_target_job_and_its_place() -> None:
    from harness.config.models import FioTarget

    disk = FioTarget(name="local-disk", path="/data", runtime_s=8)
    cells = [FioCell("gpu1", disk, job) for job in ("seq-read", "seq-write", "rand-read")]
    s = step(cells[1], cells)
    d = {"gate": s.gate, "parts": list(s.parts), "index": s.index, "total": s.total,
         "expected_s": s.expected_s, "sequential": True, "state": "start"}
    # nothing finished yet: the job's runtime is the guess; 3 s into job 2 of 3
    assert step_line(d, 12.0, 3.0, []) == \
        "G2 · fio · gpu1 local-disk · seq-write 2/3 · 0:12 elapsed · ETA 0:13"
    # a finished job took 10 s: that is the pace from now on
    assert step_line(d, 12.0, 3.0, [10.0]).endswith("ETA 0:17")
    assert step_line({**d, "state": "end", "took": 10.0}, 20.0, 0.0, [10.0]) == \
        "G2 · fio · gpu1 local-disk · seq-write 2/3 · done in 0:10 · 0:20 elapsed · ETA 0:10"
    assert "ETA" not in step_line({**d, "sequential": False}, 12.0, 3.0, [10.0])


@pytest.fixture()
def out() -> Iterator[io.StringIO]:
    yield io.StringIO()


def _lines(out: io.StringIO, terminal: bool) -> LiveLines:
    console = Console(file=out, force_terminal=terminal, width=120, color_system=None)
    return LiveLines(console, quiet_s=3600.0, redraw=terminal)


def test_in_a_log_a_line_per_phase_and_per_finished_step(out: io.StringIO) -> None:
    live = _lines(out, terminal=False)
    live.console.file.close = lambda: None  # type: ignore[method-assign]  # read it after
    with live:
        where = Where(gate="G3", layout="TP8", tier=4, arm="baseline", repetition=0,
                      phase="warm", total=8, phase_no=1, phases_planned=12, unit="pair")
        on_batch = counted(where, None)
        on_batch([])  # requests finishing: no new line in a log
        probes = HostProbes("G1", 2)
        probes.probing("gpu1", "nvidia-smi")  # a tool starting: no line in a log
        probes.probed("gpu1")
        with Timed(step(*_cells())):
            pass
        check_printer(live)("G2 · fio", "gpu1", "PASS", "")
    text = out.getvalue()
    assert "\r" not in text
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0].startswith("G3 · TP8 · c=4 · baseline · pair 1 · warm: 8 requests ·")
    assert lines[1].startswith("G1 · probe · gpu1 · 1/2 hosts probed · ")
    assert lines[2].startswith("G2 · fio · gpu1 local-disk · seq-read 1/2 · done in 0:00 · ")
    assert lines[3] == "PASS G2 · fio [gpu1]"
    assert len(lines) == 4


def _cells() -> tuple[FioCell, list[FioCell]]:
    from harness.config.models import FioTarget

    disk = FioTarget(name="local-disk", path="/data", runtime_s=8)
    cells = [FioCell("gpu1", disk, "seq-read"), FioCell("gpu1", disk, "seq-write")]
    return cells[0], cells


def test_on_a_terminal_one_line_is_redrawn_and_checks_print_above_it(
        out: io.StringIO) -> None:
    live = _lines(out, terminal=True)
    live.console.file.close = lambda: None  # type: ignore[method-assign]
    with live:
        where = Where(gate="G3", layout="TP8", tier=4, arm="baseline", repetition=0,
                      phase="measured", total=8, phase_no=1, phases_planned=12)
        counted(where, None)([RequestRecord(idx=i, instance=0, doc_id=i, warmup=False,
                                            scheduled=0.0) for i in range(3)])
        check_printer(live)("G3 · TP8 · c=4", None, "PASS", "")
        HostProbes("G1", 3).probed("gpu2")  # a finished step is drawn at once
    text = out.getvalue()
    erase = "\r\x1b[2K"
    frames = [f for f in text.split(erase) if f]
    assert "warm" not in text and frames[0].startswith("\x1b[2mG3 · TP8 · c=4 · baseline")
    assert "measured: 8 requests" in frames[0]
    # the check line went above the progress line, which was drawn again under it
    at = next(i for i, f in enumerate(frames) if "PASS G3 · TP8 · c=4" in f)
    assert "3/8 requests" in frames[at + 1]
    assert "G1 · probe · gpu2 · 1/3 hosts probed" in frames[at + 2]
    assert text.endswith(erase)  # nothing left half-drawn at the end


def test_a_step_is_two_records_on_the_progress_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Timed(step(*_cells())):
        pass
    assert [r.getMessage() for r in caplog.records] == [
        "G2 fio gpu1 local-disk seq-read 1/2 start", "G2 fio gpu1 local-disk seq-read 1/2 end"]


def test_a_redrawn_line_sheds_words_before_its_eta() -> None:
    line = ("G3 · TP8 · c=16 · accelerated · pair 8 (added) · measured: 40/64 requests · "
            "7:15 elapsed · ETA 2:10")
    assert fit(line, 120) == line
    assert fit(line, 90) == ("G3 · TP8 · c=16 · accelerated · pair 8 (added) · measured: "
                             "40/64 · 7:15 · ETA 2:10")
    assert fit(line, 79) == "G3 TP8 c=16 accelerated pair 8 (added) measured: 40/64 7:15 ETA 2:10"
    assert fit(line, 40) == "G3 TP8 c=16 accelerated pair 8 (added) …"


def test_a_cause_is_said_once_and_a_long_message_keeps_its_fix() -> None:
    from harness.cli.progress import shorten

    lines: list[str] = []

    class Lines:  # what check_printer asks of LiveLines
        @staticmethod
        def print(markup: str, indent: int = 0) -> None:
            lines.append(markup)

    show = check_printer(Lines())  # type: ignore[arg-type]
    down = "cannot connect to 10.0.0.5:22: no answer in 10 s -> check the address"
    show("test_gpus", "gpu1", "ERROR", down)
    show("test_nvme", "gpu1", "ERROR", down)
    show("test_nics", "gpu2", "STOP-LOSS", "2 NICs, 8 ordered")
    lines = [line.replace("\\[", "[") for line in lines]  # rich markup's escapes
    assert down in lines[0]
    assert lines[1].endswith("test_nvme [gpu1] - the same cause as test_gpus [gpu1]")
    assert lines[2].endswith("test_nics [gpu2] - 2 NICs, 8 ordered")
    long = "x" * 400 + " -> run `gate hosts trust gpu1`"
    short = shorten(long)
    assert len(short) <= 240 and short.endswith(" ... -> run `gate hosts trust gpu1`")
    assert shorten("y" * 300).endswith("...") and len(shorten("y" * 300)) == 240


def test_at_80_columns_a_check_line_wraps_between_words_and_keeps_its_fix_whole(
        out: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27 item 4: a long check line wraps at the terminal's width under the check's
    name, never inside a word, and what it says to do (after its last " -> ") stays on
    one line; a log's progress line wraps between its " · " parts. (COLUMNS: the width a
    log is wrapped to; a pipe without it keeps each line whole, the test below.)"""
    monkeypatch.setenv("COLUMNS", "80")
    console = Console(file=out, width=80, color_system=None)
    live = LiveLines(console, quiet_s=3600.0, redraw=False)
    fix = "gate hosts trust gpu1 gpu2 storage-node-01"
    message = ("no SSH host key on record for gpu1, gpu2 and storage-node-01 in "
               "/srv/site/known_hosts, so nothing was connected -> " + fix)
    check_printer(live)("G1 · gpu1-gpu · item", "gpu1", "ERROR", message)
    live._say("G2 · fio · gpu1 local-disk · seq-read 1/8 · done in 0:01 · 0:04 elapsed · "
              "ETA 0:09")
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    at = next(i for i, line in enumerate(lines) if line.startswith("  G2 · fio"))
    check, progress = lines[:at], lines[at:]
    assert check[0].startswith("         ERROR G1 · gpu1-gpu · item [gpu1] - no SSH")
    assert len(check) > 1 and all(line.startswith(" " * 15) and line[15] != " "
                                  for line in check[1:]), check
    said = " ".join(" ".join(check).split())
    assert said.endswith(f"[gpu1] - {message}")  # every word whole, in order
    assert any(line.endswith(f"-> {fix}") for line in check), check  # the fix on one line
    assert progress == ["  G2 · fio · gpu1 local-disk · seq-read 1/8 · done in 0:01 · 0:04 "
                        "elapsed ·", "    ETA 0:09"], progress


def test_wrap_keeps_the_fix_on_one_line_and_a_long_word_whole() -> None:
    from harness.cli.wrap import wrap

    text = "a" * 20 + " bb -> gate hosts trust gpu1"
    assert wrap(text, 30) == ["a" * 20 + " bb", "-> gate hosts trust gpu1"]  # not "bb ->"
    assert wrap("x" * 50 + " y z", 20, indent=2) == ["x" * 50, "  y z"]  # overflows, uncut
    assert wrap("  PASS lead kept", 10, indent=4) == ["  PASS", "    lead", "    kept"]


def test_a_pipe_without_columns_keeps_each_line_whole(out: io.StringIO,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a terminal and no COLUMNS (a CI log, `| grep`): a logical line stays one line,
    so a reason is found whole."""
    monkeypatch.delenv("COLUMNS", raising=False)
    console = Console(file=out, width=80, color_system=None)
    live = LiveLines(console, quiet_s=3600.0, redraw=False)
    message = "x " * 60 + "-> gate hosts trust gpu1"
    check_printer(live)("G1 · gpu1-gpu · item", "gpu1", "ERROR", message)
    (line,) = out.getvalue().splitlines()
    assert line.endswith("-> gate hosts trust gpu1") and len(line) > 80
