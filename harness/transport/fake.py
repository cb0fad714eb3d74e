"""FakeTransport: answers commands from a table of captured outputs (like httpx.MockTransport).

Why in the library: gate suites and probes are unit-tested on the real tool outputs in
the fixtures, through the same Transport contract they use on a site, and the test can
assert exactly which commands were sent.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from harness.errors import TransportError
from harness.transport import command
from harness.transport.result import CommandResult, describe


@dataclass(frozen=True)
class FakeResponse:
    """One row of the table: commands matching `pattern` get this answer.

    pattern: a glob over the shlex-joined command line (`nvme smart-log *`), or a compiled
    regex searched in it. The output comes from `stdout`, or from `stdout_file` (a captured
    real output). `error` makes the call raise instead (e.g. a CommandTimeoutError).
    """

    pattern: str | re.Pattern[str]
    stdout: str | None = None
    stdout_file: Path | str | None = None
    rc: int = 0
    stderr: str = ""
    error: TransportError | None = None

    def matches(self, line: str) -> bool:
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(line) is not None
        return fnmatch.fnmatchcase(line, self.pattern)

    def output(self) -> str:
        if self.stdout_file is not None:
            return Path(self.stdout_file).read_text(encoding="utf-8", errors="replace")
        return self.stdout or ""


@dataclass(frozen=True)
class FakeCall:
    argv: tuple[str, ...]
    sudo: bool
    env: Mapping[str, str]
    stdin: bytes
    timeout: float

    @property
    def line(self) -> str:
        return shlex.join(self.argv)


@dataclass
class FakeTransport:
    """Records every call in `.calls`; the first matching response answers it.

    An unmatched command raises TransportError (so a test notices it), unless `default`
    is given (e.g. FakeResponse("*", rc=127, stderr="command not found")). `files` serves
    read_file / get; put stores into `uploaded`.
    """

    responses: Sequence[FakeResponse] = ()
    host: str = "fake"
    default: FakeResponse | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    calls: list[FakeCall] = field(default_factory=list)
    uploaded: dict[str, bytes] = field(default_factory=dict)
    closed: bool = False

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        words = command.validate_argv(argv)
        command.env_words(env)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        call = FakeCall(words, sudo, dict(env or {}), data, timeout)
        self.calls.append(call)
        response = next((r for r in self.responses if r.matches(call.line)), self.default)
        if response is None:
            raise TransportError("no fake response matches", host=self.host,
                                 command=describe(words, sudo=sudo), stage="fake")
        if response.error is not None:
            raise response.error
        return CommandResult(self.host, words, response.rc, response.output(),
                             response.stderr, time.time(), 0.0)

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        return self.run(["sh", "-c", script], timeout=timeout, sudo=sudo)

    def put(self, local: Path, remote: str) -> None:
        self.uploaded[remote] = Path(local).read_bytes()

    def get(self, remote: str, local: Path) -> None:
        Path(local).write_bytes(self.read_file(remote))

    def read_file(self, remote: str) -> bytes:
        if remote in self.uploaded:
            return self.uploaded[remote]
        try:
            return self.files[remote]
        except KeyError:
            raise TransportError(f"cannot read {remote}: no such file", host=self.host,
                                 stage="read_file") from None

    def commands(self) -> list[str]:
        """The command lines sent so far, in order (handy in assertions)."""
        return [c.line for c in self.calls]

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
