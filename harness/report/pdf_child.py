"""Write a report's PDF in a forked child that loads WeasyPrint while the parent builds.

Why: a one-gate Chinese PDF from `gate report` is held to 3 s on two cores (docs/report.md,
"Fonts and speed"). A quarter second of it is WeasyPrint's import and its first font
load, work that needs nothing the build makes. A child forked before the build does it
on the other core; the parent then hands it the HTML and waits for its answer.

Forked only where that is safe and useful: `os.fork` exists, more than one core, and the
parent runs one thread (a fork copies no other thread, and a lock one of them held would
stay locked in the child: `gate demo`'s progress and watch threads). Otherwise, or when
the child is lost, the PDF is written here as before. An error writing the PDF comes
back as the same kind of error (OSError with its errno and file; anything else a
GateError naming it); the child never outlives the call that made it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType

from harness.errors import GateError

# What the child answers: ("ok", ...), ("oserror", errno, strerror, filename) or
# ("error", "TypeName: message").
Answer = tuple[object, ...]


def _warm(fonts: str) -> None:
    """Import WeasyPrint and lay out a line in the report's fonts (fontconfig and pango
    load them once per process). `fonts` is a CSS font stack (Fonts.css_stack)."""
    from harness.report.render import safe_font_stack, write_pdf

    write_pdf(f"<html><head><style>body {{ font-family: {safe_font_stack(fonts)}; }}"
              "</style></head>"
              "<body><p>gate 报告 PASS</p></body></html>", Path(os.devnull))


def _serve(conn: Connection, fonts: str) -> None:
    """The child: warm up, then write the one PDF it is sent (or nothing: None)."""
    with contextlib.suppress(Exception):  # a failed warm-up shows again on the real PDF
        _warm(fonts)
    try:
        job = conn.recv()
    except EOFError:
        return
    if job is None:
        return
    html, path = job
    answer: Answer
    try:
        from harness.report.render import write_pdf

        write_pdf(html, Path(path))
        answer = ("ok",)
    except OSError as exc:
        answer = ("oserror", exc.errno, exc.strerror, exc.filename)
    except Exception as exc:  # sent to the parent, raised there
        answer = ("error", f"{type(exc).__name__}: {exc}")
    conn.send(answer)


class PdfChild:
    """One forked PDF writer. `start()` returns None where forking is not safe or useful
    (the caller then writes in-process)."""

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self._process = process
        self._conn = conn
        self._used = False

    @classmethod
    def start(cls, fonts: str) -> PdfChild | None:
        if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 \
                or threading.active_count() > 1:
            return None
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, fonts), name="gate-report-pdf",
                              daemon=True)
        try:
            process.start()
        except OSError:
            return None
        child.close()
        return cls(process, parent)

    def write(self, html: str, path: Path) -> bool:
        """Write the PDF through the child; False when the child was lost before it
        answered (the caller writes it in-process). Raises what writing it raised."""
        if self._used:
            return False
        self._used = True
        try:
            self._conn.send((html, str(path)))
            answer: Answer = self._conn.recv()
        except (EOFError, OSError):
            return False
        if answer[0] == "ok":
            return True
        if answer[0] == "oserror":
            _, errno, strerror, filename = answer
            raise OSError(errno, strerror, filename)
        raise GateError(f"writing the PDF {path} failed: {answer[1]}", stage="report")

    def close(self) -> None:
        """Tell an unused child to exit; wait for it (never leave one behind)."""
        with contextlib.suppress(OSError):
            if not self._used:
                self._conn.send(None)
            self._conn.close()
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=5)

    def __enter__(self) -> PdfChild:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
