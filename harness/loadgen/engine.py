"""Run one load phase: closed loop at a concurrency, or open loop at a rate with a cap.

Open loop keeps each request's scheduled time next to its actual send time, so client
queueing (coordinated omission) is visible in the records instead of hidden. Warm-up
requests run first, are kept (flagged) and excluded from the summary and the wall time.
Completed records are handed to `on_batch` in batches from a writer thread, so storing
them never blocks the event loop that times the streams. A phase past `phase_timeout`
stops: requests in flight are cancelled and kept as failed records (`cancelled`), what
completed is kept, and the result says `timed_out`. How the measured requests went out
goes to `sends` for the phase's health (harness/loadgen/health.py): closed loop, how
late each was sent after its slot freed; open loop, how late after its schedule (read
from the records at the end: nothing per request), how many found every slot busy, and
the span their schedule gave them against the span they took.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from harness.errors import UsageError
from harness.loadgen import client, compat
from harness.loadgen.client import Api
from harness.loadgen.metrics import Summary, summarize
from harness.loadgen.progress import Progress
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.loadgen.sends import Sends, open_sends

Arrival = Literal["poisson", "constant", "trace"]
OnBatch = Callable[[list[RequestRecord]], None]


@dataclass(frozen=True)
class PhaseResult:
    # repr=False: asyncio.Runner formats its main task (and so this result) when it puts
    # SIGINT's handler back; with every record in it that took ~1 s per 30 000 requests
    records: list[RequestRecord] = field(repr=False)
    wall_time: float  # measured part only (after warm-up), seconds
    started_at: float  # epoch seconds at the phase start (t0 of every record offset)
    per_instance: dict[int, Summary]
    summary: Summary
    params: dict[str, Any] = field(default_factory=dict)
    monotonic_start: float = 0.0  # time.monotonic() at t0, to line records up with server logs
    timed_out: bool = False  # stopped by phase_timeout: the records are what completed by then


def arrival_offsets(n: int, rate: float, *, arrival: Arrival = "poisson",
                    burstiness: float = 1.0, seed: int = 0,
                    trace: Sequence[float | None] | None = None) -> np.ndarray:
    """Send offsets (s from the measured start), vLLM's `get_request` rules: gamma intervals
    (shape=burstiness, scale=1/(rate*burstiness); burstiness 1 is Poisson), cumulated and
    rescaled so the last one lands at n / rate; constant = 1/rate apart; trace = its own."""
    if arrival == "trace":
        if trace is None or any(t is None for t in trace):
            raise UsageError("trace arrival needs a timestamp on every request")
        ts: np.ndarray = np.asarray(trace, dtype=np.float64)
        return np.asarray(ts - float(ts.min()), dtype=np.float64)
    if not rate > 0:
        raise UsageError(f"--rate must be positive, got {rate}")
    if math.isinf(rate):
        return np.zeros(n)
    if arrival == "constant" or math.isinf(burstiness):
        return np.arange(1, n + 1, dtype=np.float64) / rate
    if burstiness <= 0:
        raise UsageError(f"burstiness must be positive, got {burstiness}")
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    cum: np.ndarray = np.cumsum(gaps)
    if cum[-1] > 0:
        cum = cum * ((n / rate) / cum[-1])
    return cum


class _Sink:
    """Collects finished records and hands them to `on_batch` off the event loop."""

    def __init__(self, on_batch: OnBatch | None, batch: int, interval: float) -> None:
        self.on_batch = on_batch
        self.batch = batch
        self.interval = interval
        self.pending: list[RequestRecord] = []
        self.pool = (concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gate-store")
                     if on_batch else None)
        self.futures: list[concurrent.futures.Future[None]] = []
        self.failure: BaseException | None = None  # the store failed: the phase stops

    def add(self, rec: RequestRecord) -> None:
        if self.on_batch is not None:
            self.pending.append(rec)
            if len(self.pending) >= self.batch:
                self.flush()

    def flush(self) -> None:
        if self.pool is None or self.on_batch is None or not self.pending:
            return
        for f in self.futures:
            if f.done() and f.exception() is not None:
                f.result()  # the store failed: stop the phase now, not at its end
        batch, self.pending = self.pending, []
        self.futures = [f for f in self.futures if not f.done() or f.exception() is not None]
        self.futures.append(self.pool.submit(self.on_batch, batch))

    async def ticker(self, phase: asyncio.Task[Any] | None = None) -> None:
        """Hand batches over every `interval` s; a batch the store refused stops the
        phase at once (cancelling `phase`), not at its end: nothing more would be kept."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.flush()
            except Exception as exc:
                self.failure = exc
                if phase is not None:
                    phase.cancel()
                return

    def close(self) -> None:
        self.flush()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        for f in self.futures:
            f.result()  # re-raise a store failure


class _Phase:
    def __init__(self, endpoints: Sequence[Endpoint], specs: Sequence[RequestSpec], *,
                 concurrency: int, api: Api, timeout: float, extra_body: dict[str, Any] | None,
                 tag: str, sink: _Sink, progress: Progress | None) -> None:
        self.endpoints = list(endpoints)
        self.specs = specs
        self.concurrency = concurrency
        self.chat = api == "chat"
        self.timeout = timeout
        self.sink = sink
        self.progress = progress
        self.records: list[RequestRecord] = []
        self.send_lag: list[float] = []  # closed loop: send - the moment its slot freed
        self.capped = 0  # open loop: sends that found every slot busy when due
        self.urls = [e.base + client.route(api) for e in self.endpoints]
        self.headers = client.base_headers(tag)
        self.ids = client.RequestIds()
        # one body per (prompt, max_tokens, endpoint): a spec's other fields are not in it
        cache: dict[tuple[str, int, int], bytes] = {}
        self.bodies: list[bytes] = []
        self.targets: list[int] = []
        n = len(self.endpoints)
        for i, spec in enumerate(specs):
            k = (spec.doc_id if spec.doc_id >= 0 else i) % n
            key = (spec.prompt, spec.max_tokens, k)
            if key not in cache:
                cache[key] = client.build_body(spec, self.endpoints[k].model, api, extra_body)
            self.bodies.append(cache[key])
            self.targets.append(k)
        self.t0 = 0.0

    async def one(self, session: client.Session, i: int, warmup: bool, scheduled: float,
                  ready: float | None) -> float:
        """Send request i; `ready` (monotonic, closed loop) is when its slot freed, for
        send_lag. Returns when its slot freed (its last read)."""
        k = self.targets[i]
        spec = self.specs[i]
        rec = RequestRecord(idx=i, instance=self.endpoints[k].instance, doc_id=spec.doc_id,
                            warmup=warmup, scheduled=scheduled)
        if self.progress is not None:
            self.progress.started()
        try:
            freed = await client.stream(session, self.urls[k], self.bodies[i], self.headers,
                                        rec, self.t0, self.chat, spec.prompt_tokens,
                                        self.ids.next())
        except asyncio.CancelledError:
            # The phase stopped (timeout, or the store failed): keep what this request
            # got, as failed, without flushing (that would raise a store failure here).
            rec.error_kind = "cancelled"
            rec.error = "the phase stopped before this request completed"
            self.records.append(rec)
            if self.sink.on_batch is not None:
                self.sink.pending.append(rec)
            raise
        if ready is not None and not warmup and rec.sent is not None:
            self.send_lag.append(max(0.0, self.t0 + rec.sent - ready))
        self.records.append(rec)
        self.sink.add(rec)
        if self.progress is not None:
            self.progress.finished(rec)
        return freed

    async def closed(self, session: client.Session, indices: Sequence[int], warmup: bool,
                     deadline: float) -> None:
        it = iter(indices)
        monotonic = time.monotonic

        async def worker() -> None:
            freed: float | None = None  # a worker's first send has no slot to wait for
            for i in it:
                now = monotonic()
                if now >= deadline:
                    return
                freed = await self.one(session, i, warmup, now - self.t0, freed)

        n = max(1, min(self.concurrency, len(indices)))
        await asyncio.gather(*(worker() for _ in range(n)))

    async def open(self, session: client.Session, indices: Sequence[int], offsets: np.ndarray,
                   start: float, deadline: float) -> None:
        sem = asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task[None]] = set()

        # every offset 0 (--rate inf): no schedule to keep, only slots; a send is then
        # late after the slot it got, as in a closed loop
        unscheduled = not offsets.any()

        async def limited(i: int, target: float) -> None:
            if sem.locked():  # every slot busy: the cap holds it past its schedule
                self.capped += 1
            async with sem:  # scheduled: how late it went is read from its record at the end
                await self.one(session, i, False, target - self.t0,
                               max(target, time.monotonic()) if unscheduled else None)

        try:
            if len(indices) != len(offsets):
                raise ValueError("one arrival offset per measured request")
            for k, i in enumerate(indices):
                target = start + float(offsets[k])
                if target >= deadline:
                    break
                delay = target - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                task = asyncio.create_task(limited(i, target))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            while tasks:
                await asyncio.gather(*list(tasks))
        finally:  # stopped early: no request may outlive the phase (and its session)
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*list(tasks), return_exceptions=True)


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """Keep the garbage collector's pauses out of a measured phase.

    Why: with the harness loaded (ansible, pandas, SQLAlchemy, pytest) a full collection
    scans ~150k objects and stops the event loop for ~90 ms, which lands in some
    request's TTFT and, in a closed loop, in the phase's wall time: seen in the demo as one
    arm of a G3 pair 10 % slow, a pair gain of 0.49 where the others were 0.35. gc.freeze
    puts the heap that existed before the phase out of the collector's reach, so a
    collection during the phase scans only what the phase made; unfreeze hands it all
    back afterwards (nothing leaks, and long phases still collect their own garbage).
    While the phase runs the youngest generation is collected every 5 000 new objects
    instead of 700: a phase keeps every record it makes, so nearly each collection found
    nothing to free (a 20 000-request benchmark phase spent 0.46 s of its 16 s collecting,
    on the loop's thread, 147 times in the youngest generation; at 5 000, 0.11 s and 69
    times, each pause ~1 ms).
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], 5000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


async def run_phase_async(endpoints: Sequence[Endpoint], specs: Sequence[RequestSpec], *,
                          concurrency: int, api: Api = "completions",
                          rate: float | None = None, arrival: Arrival = "poisson",
                          burstiness: float = 1.0, seed: int = 0, timeout: float = 1800,
                          warmup: int = 0, duration: float | None = None,
                          progress: bool = True, on_batch: OnBatch | None = None,
                          slo: dict[str, float] | None = None,
                          extra_body: dict[str, Any] | None = None, tag: str = "gate",
                          batch_size: int = 2000, batch_interval: float = 0.5,
                          phase_timeout: float | None = None,
                          sends: Sends | None = None) -> PhaseResult:
    """The phase itself, for callers already inside an event loop (see run_phase).
    `phase_timeout` (s, the whole phase with its warm-up) stops it; `sends` receives
    how the measured requests went out (see Sends)."""
    if not endpoints:
        raise UsageError("no endpoint to load")
    if concurrency < 1:
        raise UsageError(f"concurrency must be >= 1, got {concurrency}")
    if not 0 <= warmup < len(specs):
        raise UsageError(f"need more requests ({len(specs)}) than warm-up requests ({warmup})")
    measured = list(range(warmup, len(specs)))
    offsets = None
    if rate is not None or arrival == "trace":
        offsets = arrival_offsets(len(measured), rate or math.inf, arrival=arrival,
                                  burstiness=burstiness, seed=seed,
                                  trace=[specs[i].at for i in measured])
    sink = _Sink(on_batch, batch_size, batch_interval)
    prog = Progress(len(specs), enabled=progress)
    phase = _Phase(endpoints, specs, concurrency=concurrency, api=api, timeout=timeout,
                   extra_body=extra_body, tag=tag, sink=sink, progress=prog)
    started_at = time.time()
    phase.t0 = time.monotonic()
    ticker = asyncio.create_task(sink.ticker(asyncio.current_task()))
    prog.start()
    start = phase.t0
    timed_out = False
    carried: list[str] = []  # which HTTP client carried the requests (params)
    try:
        with heap_frozen():
            scope = compat.timeout(phase_timeout)
            try:
                async with scope, client.new_session(timeout, concurrency) as session:
                    carried = sorted({session.client_name(u) for u in phase.urls})
                    if warmup:
                        await phase.closed(session, range(warmup), True, math.inf)
                    start = time.monotonic()
                    prog.measuring(start)
                    deadline = start + duration if duration else math.inf
                    if offsets is None:
                        await phase.closed(session, measured, False, deadline)
                    else:
                        await phase.open(session, measured, offsets, start, deadline)
            except TimeoutError:
                if not scope.expired():
                    raise
                timed_out = True
            wall = time.monotonic() - start
    except asyncio.CancelledError:
        if sink.failure is not None:  # cancelled by the ticker: the store failed
            raise sink.failure from None
        raise
    finally:
        ticker.cancel()
        prog.stop()
        await asyncio.get_running_loop().run_in_executor(None, sink.close)
    records = sorted(phase.records, key=lambda r: r.idx)
    if sends is not None:
        if offsets is None or not offsets.any():
            sends.lags.extend(phase.send_lag)
        else:
            open_sends(sends, records, start - phase.t0, phase.capped)
    summary = summarize(records, wall, slo=slo)
    per_instance = {endpoints[0].instance: summary} if len(endpoints) == 1 else {
        e.instance: summarize([r for r in records if r.instance == e.instance], wall, slo=slo)
        for e in endpoints
    }
    params = {"concurrency": concurrency, "api": api, "rate": rate, "arrival": arrival,
              "burstiness": burstiness, "seed": seed, "timeout": timeout, "warmup": warmup,
              "duration": duration, "requests": len(specs), "phase_timeout": phase_timeout,
              "http_client": carried,
              "endpoints": [{"url": e.url, "model": e.model, "instance": e.instance}
                            for e in endpoints]}
    return PhaseResult(records=records, wall_time=wall, started_at=started_at,
                       per_instance=per_instance, summary=summary,
                       params=params, monotonic_start=phase.t0, timed_out=timed_out)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's loop when installed (a phase's client does less per chunk), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_phase(endpoints: Sequence[Endpoint], specs: Sequence[RequestSpec], *,
              concurrency: int, api: Api = "completions", rate: float | None = None,
              arrival: Arrival = "poisson", burstiness: float = 1.0, seed: int = 0,
              timeout: float = 1800, warmup: int = 0, duration: float | None = None,
              progress: bool = True, on_batch: OnBatch | None = None,
              slo: dict[str, float] | None = None, extra_body: dict[str, Any] | None = None,
              tag: str = "gate") -> PhaseResult:
    """Run one phase to completion (uvloop when installed). Closed loop at `concurrency`
    when `rate` is None; open loop at `rate` req/s capped at `concurrency` otherwise.
    Request i goes to endpoints[doc_id % n] (spec index when doc_id < 0), so a document
    warmed on instance k is measured on instance k."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(run_phase_async(
            endpoints, specs, concurrency=concurrency, api=api, rate=rate, arrival=arrival,
            burstiness=burstiness, seed=seed, timeout=timeout, warmup=warmup,
            duration=duration, progress=progress, on_batch=on_batch, slo=slo,
            extra_body=extra_body, tag=tag))
