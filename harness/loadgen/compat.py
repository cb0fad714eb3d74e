"""What the load generator needs from Python 3.11 asyncio, for the 3.9 / 3.10 a client
host may have.

The gate runs on 3.11+, but the agent (gate-agent, docs/remote.md) runs the same engine on
the client host's own Python: RHEL 9 ships 3.9, Ubuntu 22.04 3.10. Only what the engine
uses is here; on 3.11+ the standard library's own objects are used unchanged.
"""

from __future__ import annotations

import asyncio
import sys
from types import TracebackType
from typing import Any

# dataclass(slots=True) exists from 3.10; on 3.9 a record keeps its __dict__ (more memory,
# same behaviour).
SLOTS: dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}


class _Deadline:
    """asyncio.timeout(delay) for 3.9 / 3.10: at the deadline the task is cancelled and
    the cancellation leaves the block as the builtin TimeoutError; `expired()` says
    whether it was this deadline (and not some other cancel or timeout)."""

    def __init__(self, delay: float | None) -> None:
        self._delay = delay
        self._expired = False
        self._handle: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> _Deadline:
        if self._delay is not None:
            task = asyncio.current_task()
            assert task is not None
            self._handle = asyncio.get_running_loop().call_later(
                self._delay, self._fire, task)
        return self

    def _fire(self, task: asyncio.Task[Any]) -> None:
        self._expired = True
        task.cancel()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self._expired and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def expired(self) -> bool:
        return self._expired


if sys.version_info >= (3, 11):  # noqa: UP036 - the agent runs on 3.9 and 3.10
    timeout = asyncio.timeout
else:  # pragma: no cover - exercised by the agent's 3.9 test
    timeout = _Deadline
