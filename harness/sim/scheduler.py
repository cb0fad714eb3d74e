"""The engine's time model: every running request shares one engine step loop.

Each engine step serves every admitted request (a prefill chunk, a KV-load chunk from the
tier, or one decode token), and a step with n requests takes f(n) = 1 + s(n-1) times as
long as a step with one. So every request progresses at 1/f(n) of its solo speed. That is
processor sharing with one shared virtual clock V (solo-seconds done by each running
request): dV/dt = speed / f(n). A request waits for "V reaches V0 + work" instead of a
wall-clock deadline; one timer serves all of them, O(log n) per event.

Only `loop.time()` and `loop.call_at` are used, so the same code runs on a virtual-time
event loop (harness.sim.calibrate) for exact, instant calibration.
"""

from __future__ import annotations

import asyncio
import heapq
from itertools import count


class ScheduleLag:
    """How far the wall clock ran behind the modelled schedule when a step was due.

    Why: a simulator starved of CPU releases every waiter late, so its TTFTs and
    throughput stop being the modelled ones and a comparison of arms measures the host,
    not the model. The clock knows when each wake was due; a load phase reads these
    counters before and after (harness/loadgen/simlag.py) and says so.
    """

    def __init__(self) -> None:
        self.wakes = 0
        self.total = 0.0  # sum of positive lags, s
        self.max = 0.0  # the largest lag since the engine started, s

    def wake(self, lag: float) -> None:
        self.wakes += 1
        if lag > 0:
            self.total += lag
            self.max = max(self.max, lag)


class SharedStepClock:
    # Event loops wake timers late (epoll and libuv count milliseconds; a busy loop is
    # later still). The clock learns its loop's mean lateness and sets timers that much
    # early, releasing every waiter due within it, so wakes are as often early as late
    # and the error does not bias TTFT or throughput.
    MAX_EARLY_S = 0.002
    SLACK_S = 0.0002

    def __init__(self, speed: float, slowdown: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._speed = speed
        self._slowdown = slowdown
        self._v = 0.0
        self._t = self._loop.time()
        self._n = 0
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._set_for = 0.0  # the loop time the current timer was asked for
        self._idle_since: float | None = None
        self._late = 0.0005  # running mean of how late timers fire
        self.lag = ScheduleLag()

    @property
    def running(self) -> int:
        return self._n

    def rate(self) -> float:
        """Solo-seconds of progress per wall second for each running request, now."""
        if self._n <= 0:
            return 0.0
        return self._speed / (1.0 + self._slowdown * (self._n - 1))

    def _sync(self) -> None:
        now = self._loop.time()
        self._v += (now - self._t) * self.rate()
        self._t = now

    def now_v(self) -> float:
        return self._v + (self._loop.time() - self._t) * self.rate()

    def join(self) -> float:
        """Add a running request; returns how long (wall s) the batch had been empty."""
        self._sync()
        idle = 0.0
        if self._n == 0 and self._idle_since is not None:
            idle = self._t - self._idle_since
        self._n += 1
        self._reschedule(force=True)
        return idle

    def leave(self) -> None:
        self._sync()
        self._n -= 1
        if self._n == 0:
            self._idle_since = self._t
        self._reschedule(force=True)

    async def until(self, target_v: float) -> None:
        """Wait until the shared clock reaches target_v (the caller must have joined)."""
        if target_v <= self.now_v():
            return
        fut: asyncio.Future[None] = self._loop.create_future()
        heapq.heappush(self._heap, (target_v, next(self._seq), fut))
        if self._heap[0][2] is fut:
            self._reschedule(force=False)
        await fut

    async def work(self, solo_seconds: float) -> None:
        """Do `solo_seconds` of work at the shared rate."""
        if solo_seconds > 0:
            await self.until(self.now_v() + solo_seconds)

    def _reschedule(self, *, force: bool) -> None:
        heap = self._heap
        while heap and heap[0][2].done():  # cancelled waiters (client went away)
            heapq.heappop(heap)
        if not heap:
            self._cancel_timer()
            return
        rate = self.rate()
        if rate <= 0.0:
            self._cancel_timer()
            return
        at = self._t + (heap[0][0] - self._v) / rate
        if not force and at >= self._timer_at:
            return
        self._cancel_timer()
        self._timer_at = at
        self._set_for = at - self._late
        self._timer = self._loop.call_at(self._set_for, self._fire)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = float("inf")

    def _fire(self) -> None:
        due = self._timer_at
        self._timer = None
        self._timer_at = float("inf")
        self._sync()
        self.lag.wake(self._t - due)
        late = self._t - self._set_for
        if late >= 0:
            self._late = min(self.MAX_EARLY_S, 0.9 * self._late + 0.1 * late)
        horizon = self._v + (self._late + self.SLACK_S) * self.rate() + 1e-12
        heap = self._heap
        while heap and heap[0][0] <= horizon:
            _, _, fut = heapq.heappop(heap)
            if not fut.done():
                fut.set_result(None)
        self._reschedule(force=True)
