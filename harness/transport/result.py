"""What running a command returns, and the capped buffer its output is collected in.

Why a cap: a runaway command (a log cat, a debug flag) must not take the harness's memory
with it; the first `cap` bytes are kept and a marker says how much was dropped.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import TransportError

DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024
TAIL_CHARS = 800


def describe(argv: Sequence[str], *, sudo: bool = False, limit: int = 300) -> str:
    """The command as a user would type it (quoted), shortened for messages."""
    text = ("sudo " if sudo else "") + shlex.join(argv)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tail(text: str, chars: int = TAIL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= chars else "..." + text[-chars:]


class CommandFailedError(TransportError):
    """A command ran and exited non-zero where success was required (CommandResult.check)."""

    def __init__(self, result: CommandResult, stage: str | None) -> None:
        err = tail(result.stderr) or tail(result.stdout) or "no output"
        super().__init__(
            f"exited {result.rc}: {err}",
            host=result.host,
            command=describe(result.argv),
            stage=stage,
        )
        self.result = result


@dataclass(frozen=True)
class CommandResult:
    """One finished command: exit code, decoded output, and when / how long it ran."""

    host: str
    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    started: float  # epoch seconds
    duration: float  # seconds
    truncated: bool = False
    # Answered by a simulated host from a captured output (harness.sim.hardware_transport),
    # not by the machine itself; `capture` names the file ("" when it had none).
    simulated: bool = False
    capture: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def check(self, stage: str | None = None) -> CommandResult:
        """Return self when the command succeeded, else raise with host, command, stderr tail."""
        if self.ok:
            return self
        raise CommandFailedError(self, stage)


class OutputBuffer:
    """Collects one stream's bytes up to `cap`; what is past the cap is counted, not kept."""

    def __init__(self, cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.cap = cap
        self._chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.cap - self.kept
        if room <= 0:
            self.dropped += len(data)
            return
        if len(data) > room:
            self.dropped += len(data) - room
            data = data[:room]
        self._chunks.append(data)
        self.kept += len(data)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        body = b"".join(self._chunks).decode("utf-8", errors="replace")
        if self.dropped:
            body += (f"\n[gate: output truncated: kept the first {self.kept} bytes, "
                     f"dropped {self.dropped} more]\n")
        return body
