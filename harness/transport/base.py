"""The Transport contract every host connection implements (local, SSH, fake).

Why one contract: gates, probes and the remote agent run commands on "a host" and must
not care whether it is this machine, a customer host behind a jump box, or a table of
captured outputs in a unit test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

from harness.transport.result import CommandResult


@runtime_checkable
class Transport(Protocol):
    """Run commands on one host. argv words reach the host literally (quoted with shlex)."""

    host: str

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        """Run argv; raise CommandTimeoutError (after killing it) past `timeout` seconds."""
        ...

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        """Run a real shell script (pipes, redirects): the rare case argv cannot express."""
        ...

    def put(self, local: Path, remote: str) -> None: ...

    def get(self, remote: str, local: Path) -> None: ...

    def read_file(self, remote: str) -> bytes: ...

    def close(self) -> None: ...

    def __enter__(self) -> Transport: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


@runtime_checkable
class WrappedTransport(Transport, Protocol):
    """A Transport that answers some commands itself and hands the rest to `inner` (a
    registered backend, harness.transport.backends).

    Why a contract of its own: `gate hosts check` must probe the real connection under the
    wrapper (auth, host key, sudo) and say what answers instead, without knowing which
    backend it is.
    """

    inner: Transport

    @property
    def hardware(self) -> str:
        """What answers the host's hardware tools, e.g. "simulated (gpu-a100)"."""
        ...
