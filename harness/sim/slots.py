"""Admission into the simulated engine's running batch (vLLM's max_num_seqs): FIFO, and a
slot handed straight to the next waiter so no late arrival overtakes it."""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    """max_num_seqs: FIFO admission into the running batch."""

    def __init__(self, n: int) -> None:
        self.free = n
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_take(self) -> bool:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        if self.try_take():
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.give()  # the slot was handed over as we were cancelled
            raise

    def give(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # the slot passes straight to the next waiter
                return
        self.free += 1
