"""`-v/--verbose` on the commands that run things (run, resume, campaign, demo, hosts).

Why: at a site the question after "which check failed" is "what did gate actually send to
that host"; pytest's own -v after `--` only changes pytest's lines, which the gate's
console does not print. Verbose adds, above the progress line: every command sent to a
host (`gpu1: run nvidia-smi -q -x`, sudo and secrets never shown), connects, reconnects
and retries (the transport's log), and each check's message when it PASSes too, whole.
Without -v the transport's warnings (a silent host being waited for) still reach the
console the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

TRANSPORT_LOGGER = "harness.transport"
VERBOSE_HELP = ("Also show on stderr each command sent to a host, each connect and retry, "
                "and in a gate run every check's whole message (PASS too). pytest's own -v "
                "goes after `--`.")


def verbose_option(f: F) -> F:
    return click.option("-v", "--verbose", is_flag=True, help=VERBOSE_HELP)(f)


class _Lines(logging.Handler):
    """One dim, indented line per transport record, through `say` (rich markup)."""

    def __init__(self, say: Callable[[str], None], level: int) -> None:
        super().__init__(level)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        from rich.markup import escape

        try:
            text = record.getMessage().replace("\n", "\\n")  # one line, as it was sent
            self.say(f"    [dim]{escape(text)}[/]")
        except Exception:  # a console line must never fail a check
            self.handleError(record)


@contextmanager
def transport_lines(say: Callable[[str], None], verbose: bool) -> Iterator[None]:
    """While the block runs, the transport's warnings (a host that is silent: what it has
    not done yet and how long it is waited for) as lines through `say`; with `verbose`,
    its DEBUG and INFO records too (each command run, connects, retries). Without this a
    warning raised inside a check would stay in pytest's capture, off the console."""
    logger = logging.getLogger(TRANSPORT_LOGGER)
    handler = _Lines(say, logging.DEBUG if verbose else logging.WARNING)
    level = logger.level
    logger.addHandler(handler)
    if verbose:
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
