"""The simulated engine: what happens to one request between arrival and its last token.

Order of business, as in vLLM with an LMCache connector: admission (max_num_seqs), the
longest GPU prefix-cache hit, then the longest hit in the external tier beyond it (a
per-read latency, then bytes / bandwidth on the shared step clock), recompute of the
rest at prefill speed, the first token, decode. The computed chunks go to the tier
write-behind (committed to the index when their write finishes). Every modelled duration
is divided by `speed`; jitter is a seeded lognormal factor per request and phase.
No HTTP here: the server turns the token lists this yields into SSE chunks.

A soak's faults (FaultSpec: a memory leak, a TTFT drift, a tier that stops serving) are
functions of the modelled time since start(), (loop time - start) x speed: deterministic,
and with their defaults every modelled number is what it was without them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from harness.sim.iometer import IoMeter, IoSnapshot
from harness.sim.prefix_cache import GpuPrefixCache, chunk_keys
from harness.sim.profiles import GB, Profile
from harness.sim.prompt import Prompt
from harness.sim.scheduler import ScheduleLag, SharedStepClock
from harness.sim.slots import Slots
from harness.sim.spec import FaultSpec
from harness.sim.stats import EngineStats
from harness.sim.tier import TierIndex
from harness.sim.tokenizer import output_ids


@dataclass(frozen=True)
class Rates:
    """A profile's speeds at one TP degree (rates scale linearly with TP)."""

    prefill_tok_s: float
    decode_tok_s: float
    read_bps: float
    write_bps: float
    latency_s: float
    gpu_cache_tokens: int
    bytes_per_token: int
    chunk_tokens: int
    block_size: int
    slowdown: float
    jitter_sigma: float
    baseline_prefill_factor: float
    max_num_seqs: int
    tier_capacity_tokens: int
    host_rss_bytes: int  # the engine process's host memory (not scaled with TP)

    @classmethod
    def of(cls, p: Profile, tp: int) -> Rates:
        k = p.scale(tp)
        return cls(
            prefill_tok_s=p.prefill_tok_s * k, decode_tok_s=p.decode_tok_s * k,
            read_bps=p.tier_read_gbps * GB * k, write_bps=p.tier_write_gbps * GB * k,
            latency_s=p.tier_latency_s, gpu_cache_tokens=int(p.gpu_cache_tokens * k),
            bytes_per_token=p.kv_bytes_per_token, chunk_tokens=p.tier_chunk_tokens,
            block_size=p.block_size, slowdown=p.batch_slowdown, jitter_sigma=p.jitter_sigma,
            baseline_prefill_factor=p.baseline_prefill_factor, max_num_seqs=p.max_num_seqs,
            tier_capacity_tokens=p.tier_capacity_tokens, host_rss_bytes=p.host_rss_bytes,
        )


@dataclass
class Arrival:
    """A request the server has received: it holds a batch slot (and runs on the shared
    clock) from the moment it arrived, so parsing and tokenizing it is part of its
    modelled time, not extra time on top."""

    t: float
    v: float = 0.0
    idle: float = 0.0  # wall s the batch was empty before this request joined
    joined: bool = False
    owned: bool = False  # generate() took it over (and will leave the clock)
    left: bool = False


# How much faster than the device a DRAM tier in front of it loads KV (--memory-tier):
# host memory over PCIe against NVMe-oF flash, both scaled with the TP layout alike.
MEMORY_TIER_SPEEDUP = 4.0


@dataclass
class Trace:
    """One request's outcome, filled in as it runs (the server reads usage from it)."""

    prompt_tokens: int = 0
    local_hit: int = 0
    external_hit: int = 0
    output_tokens: int = 0
    arrival: float = 0.0
    first_token: float | None = None
    done: float | None = None
    finish: str | None = None  # "length", "stop" (an EOS) or "abort", once it ended


# Bytes in one MB of --memory-leak (decimal, as GB is here: harness.sim.profiles).
MB = 1e6


class Engine:
    def __init__(self, rates: Rates, *, tier: TierIndex | None, speed: float, seed: int,
                 salt: str, stream_interval: int = 1, memory_tier: float = 0.0,
                 faults: FaultSpec | None = None) -> None:
        self.rates = rates
        self.tier = tier
        # Only the soak's faults are read here (leak, drift, tier off); the server draws
        # the others per request.
        self.faults = faults if faults is not None else FaultSpec()
        # Share of tier loads a DRAM tier in front of the device serves (never read from
        # the device); loads are assigned in turn, so the share is exact over a phase.
        self.memory_tier = memory_tier
        self._loads = 0
        self.speed = speed
        self.salt = salt
        self.stream_interval = stream_interval
        self.stats = EngineStats()
        self.gpu = GpuPrefixCache(rates.gpu_cache_tokens, rates.block_size)
        self.io = IoMeter()
        self._rng = random.Random(f"gate-sim-jitter-{seed}")
        self._clock: SharedStepClock | None = None
        self._slots: Slots | None = None
        self._write_free_at = 0.0
        self._pending_writes: dict[asyncio.TimerHandle, Callable[[], None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = 0.0  # loop time of start()

    async def start(self) -> None:
        """Bind to the running loop (call from inside it, before serving); the soak's
        faults count modelled time from here."""
        self._clock = SharedStepClock(self.speed, self.rates.slowdown)
        self._slots = Slots(self.rates.max_num_seqs)
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()

    # -- the soak's faults: functions of the modelled time since start ------------------
    def uptime_s(self) -> float:
        """Modelled seconds since start() (wall seconds x speed; 0 before it)."""
        if self._loop is None:
            return 0.0
        return max(0.0, self._loop.time() - self._started) * self.speed

    def rss_bytes(self) -> float:
        """The modelled engine process's RSS: the profile's host memory, plus
        --memory-leak MB per modelled hour since start."""
        return self.rates.host_rss_bytes + self.faults.leak_mb_per_h * MB * (
            self.uptime_s() / 3600.0)

    def ttft_factor(self) -> float:
        """What --ttft-drift multiplies a request's modelled tier read and prefill by:
        1 + SHARE_PER_H x modelled hours since start (exactly 1.0 without a drift)."""
        drift = self.faults.ttft_drift_per_h
        return 1.0 + drift * self.uptime_s() / 3600.0 if drift else 1.0

    def tier_serving(self) -> bool:
        """False once --tier-off-after modelled seconds have passed: the tier then
        silently stops serving (lookups miss, nothing is read or written)."""
        off = self.faults.tier_off_after_s
        return self.tier is not None and (off is None or self.uptime_s() < off)

    @property
    def clock(self) -> SharedStepClock:
        assert self._clock is not None, "Engine.start() first"
        return self._clock

    @property
    def running(self) -> int:
        return self.clock.running

    @property
    def schedule_lag(self) -> ScheduleLag | None:
        """How far the step clock fell behind its schedule (None before start)."""
        return self._clock.lag if self._clock is not None else None

    def io_snapshot(self) -> IoSnapshot:
        return self.io.snapshot(self.clock.now_v(), asyncio.get_running_loop().time())

    def _jitter(self) -> float:
        sigma = self.rates.jitter_sigma
        return self._rng.lognormvariate(0.0, sigma) if sigma > 0 else 1.0

    def arrive(self) -> Arrival:
        """Call when a request reaches the server: it joins the batch now if a slot is
        free (else it queues in generate())."""
        assert self._slots is not None, "Engine.start() first"
        arr = Arrival(asyncio.get_running_loop().time())
        if self._slots.try_take():
            arr.idle = self.clock.join()
            arr.joined, arr.v = True, self.clock.now_v()
        return arr

    def depart(self, arr: Arrival) -> None:
        """Release an arrival that generate() never took over (a rejected request)."""
        if arr.joined and not arr.owned and not arr.left:
            arr.left = True
            self.clock.leave()
            assert self._slots is not None
            self._slots.give()

    async def generate(self, prompt: Prompt, max_tokens: int, trace: Trace, *,
                       arrival: Arrival | None = None, stall_at: int | None = None,
                       stall_s: float = 0.0,
                       eos_at: int | None = None) -> AsyncGenerator[list[int], None]:
        """Yield the generated token ids, one list per streamed chunk.

        The phases chain on the shared clock from the moment the request joined the
        batch (its arrival, when a slot was free): each starts where the modelled
        previous one ended, not when the event loop got round to it, so the
        simulator's own CPU does not stretch what the profile models.

        `eos_at` (1..max_tokens): the request ends at that output token, an EOS
        (finish "stop", trace.finish); None: it runs to max_tokens ("length").
        """
        loop = asyncio.get_running_loop()
        clock = self.clock
        arr = arrival if arrival is not None else self.arrive()
        arr.owned = True
        trace.arrival = arr.t
        trace.prompt_tokens = len(prompt)
        j_read, j_prefill, j_decode = self._jitter(), self._jitter(), self._jitter()
        stats = self.stats
        assert self._slots is not None
        if not arr.joined:
            stats.waiting += 1
            try:
                await self._slots.take()
            finally:
                stats.waiting -= 1
            arr.idle = clock.join()
            arr.joined, arr.v = True, clock.now_v()
        admitted = loop.time()
        stats.running_tokens += len(prompt) + max_tokens
        n_out = max_tokens if eos_at is None else max(1, min(eos_at, max_tokens))
        finish = "abort"
        try:
            serving = self._schedule(prompt, trace)
            drift = self.ttft_factor()  # the TTFT's modelled phases, from its admission
            v = await self._load(trace, j_read, arr.v, drift)
            v = await self._prefill(prompt, trace, j_prefill, v, drift, store=serving)
            out = output_ids()
            trace.first_token = loop.time()
            # observed as vLLM does, when the first token is out (not when the request
            # ends): the gate reads the histogram's rise window by window
            stats.ttft.observe(trace.first_token - trace.arrival)
            trace.output_tokens = 1
            stats.generation_tokens += 1
            yield [out[0]]
            t_tok = self._token_time(j_decode, n_out, arr.idle)
            v0 = v - t_tok  # token k (1-based) is due at v0 + k * t_tok
            done = 1
            while done < n_out:
                if stall_at is not None and done >= stall_at:
                    stall_at = None
                    await asyncio.sleep(stall_s / self.speed)
                    v0 = clock.now_v() - done * t_tok
                target = min(n_out, done + self.stream_interval)
                await clock.until(v0 + target * t_tok)
                due = int((clock.now_v() - v0) / t_tok + 1e-9)
                due = min(n_out, max(target, due))
                chunk = [out[i % len(out)] for i in range(done, due)]
                done = due
                trace.output_tokens = done
                stats.generation_tokens += len(chunk)
                yield chunk
            finish = "length" if eos_at is None else "stop"
        finally:
            arr.left = True
            clock.leave()
            self._slots.give()
            stats.running_tokens -= len(prompt) + max_tokens
            trace.done = loop.time()
            trace.finish = finish
            stats.success[finish] += 1
            if finish != "abort":
                self._observe(trace, admitted, max_tokens)

    # A batch that empties for a moment between back-to-back requests (a client's
    # turnaround, a late wake) idles for wall time the speed factor magnifies; the next
    # request's decode gets it back, so a closed loop's throughput is the modelled one.
    # Only gaps up to IDLE_CREDIT_MAX_S count (a longer one is real idleness, or an
    # overloaded machine, and stays visible), and decode shrinks by at most a quarter.
    # TTFT is never shortened.
    IDLE_CREDIT_MAX_S = 0.005

    def _token_time(self, jitter: float, max_tokens: int, idle: float) -> float:
        t_tok = jitter / self.rates.decode_tok_s
        if 0 < idle <= self.IDLE_CREDIT_MAX_S and max_tokens > 1:
            credit = idle * self.speed / (max_tokens - 1)  # solo-seconds per token
            t_tok = max(0.75 * t_tok, t_tok - credit)
        return t_tok

    def _schedule(self, prompt: Prompt, trace: Trace) -> bool:
        """Find the cached prefix: GPU cache first, then the tier beyond it. Returns
        whether the tier serves this request (False without one, or once it went off:
        the connector still asks, and every lookup misses)."""
        r = self.rates
        hashes = prompt.hashes
        n = len(prompt)
        max_blocks = max(0, (n - 1) // r.block_size)  # >= 1 token to compute
        local = self.gpu.match(hashes, max_blocks) * r.block_size
        external = 0
        st = self.stats
        serving = self.tier_serving()
        if self.tier is not None:
            keys = chunk_keys(hashes, r.chunk_tokens // r.block_size)
            hit_chunks = self.tier.lookup(keys) if keys and serving else 0
            tier_tokens = min(hit_chunks * r.chunk_tokens, max_blocks * r.block_size)
            external = max(0, tier_tokens - local)
            st.lm_lookup_requests += 1
            st.lm_lookup_tokens += n
            st.lm_retrieve_requests += 1
            st.lm_requested_tokens += n - local
            st.lm_hit_tokens += external
        trace.local_hit, trace.external_hit = local, external
        st.record_schedule(n, local, external, connector=self.tier is not None)
        return serving

    async def _load(self, trace: Trace, jitter: float, v: float, drift: float = 1.0) -> float:
        """Latency + bytes / bandwidth on the shared clock, from cursor v; returns the
        cursor at its end. The latency becomes clock units at the rate the read starts
        with: one wait instead of a sub-millisecond sleep the event loop cannot time.
        `drift` (--ttft-drift) stretches both."""
        if trace.external_hit <= 0:
            return v
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        r = self.rates
        clock = self.clock
        nbytes = trace.external_hit * r.bytes_per_token
        self._loads += 1
        if int(self._loads * self.memory_tier) > int((self._loads - 1) * self.memory_tier):
            return self._from_memory(nbytes, v, drift)
        v_start = v + r.latency_s * drift / self.speed * clock.rate()
        v_end = v_start + nbytes / r.read_bps * jitter * drift
        rid = self.io.begin_read(v_start, v_end, nbytes)
        completed = False
        try:
            await clock.until(v_end)
            completed = True
        finally:
            self.io.end_read(rid, completed=completed)
        st = self.stats
        st.lm_remote_reads += 1
        st.lm_remote_read_bytes += nbytes
        st.lm_retrieve_time.observe(loop.time() - t0)
        return v_end

    def _from_memory(self, nbytes: int, v: float, drift: float = 1.0) -> float:
        """A load the DRAM tier serves: counted as an external hit like any other (the
        engine cannot tell the tiers apart), at memory speed, and never on the device."""
        st = self.stats
        st.lm_remote_reads += 1
        st.lm_remote_read_bytes += nbytes
        self.io.memory_read(nbytes)
        # as _load's read
        return v + nbytes / (self.rates.read_bps * MEMORY_TIER_SPEEDUP) * drift

    async def _prefill(self, prompt: Prompt, trace: Trace, jitter: float, v: float,
                       drift: float = 1.0, *, store: bool = True) -> float:
        """Recompute what no cache held; then the computed chunks go to the tier's
        write-behind (`store`: the tier serves; a tier gone off takes no writes)."""
        r = self.rates
        hashes = prompt.hashes
        compute = len(prompt) - trace.local_hit - trace.external_hit
        factor = r.baseline_prefill_factor if self.tier is None else 1.0
        v += compute / r.prefill_tok_s * factor * jitter * drift
        await self.clock.until(v)
        self.gpu.insert(hashes)
        if self.tier is not None and store:
            keys = chunk_keys(hashes, r.chunk_tokens // r.block_size)
            stored = trace.external_hit + trace.local_hit
            self._write_behind(keys[stored // r.chunk_tokens:])
        return v

    def _write_behind(self, keys: list[bytes]) -> None:
        if not keys or self.tier is None:
            return
        loop = asyncio.get_running_loop()
        r = self.rates
        nbytes = len(keys) * r.chunk_tokens * r.bytes_per_token
        start = max(loop.time(), self._write_free_at)
        end = start + nbytes / r.write_bps / self.speed
        self._write_free_at = end
        wid = self.io.begin_write(start, end, nbytes)
        handle: asyncio.TimerHandle

        def commit() -> None:
            self._pending_writes.pop(handle, None)
            self.io.end_write(wid)
            assert self.tier is not None
            self.tier.store(keys, r.chunk_tokens)
            self.stats.lm_store_requests += 1
            self.stats.lm_stored_tokens += len(keys) * r.chunk_tokens

        handle = loop.call_at(end, commit)
        self._pending_writes[handle] = commit

    @property
    def pending_writes(self) -> int:
        return len(self._pending_writes)

    def drain_writes(self) -> None:
        """A graceful stop finishes the write-behind queue now (a crash loses it)."""
        for handle, commit in list(self._pending_writes.items()):
            handle.cancel()
            commit()

    def _observe(self, trace: Trace, admitted: float, max_tokens: int) -> None:
        st = self.stats
        assert trace.first_token is not None and trace.done is not None
        ttft = trace.first_token - trace.arrival
        e2e = trace.done - trace.arrival
        st.e2e.observe(e2e)
        st.queue_time.observe(admitted - trace.arrival)
        st.prefill_time.observe(trace.first_token - admitted)
        st.decode_time.observe(trace.done - trace.first_token)
        st.inference_time.observe(trace.done - admitted)
        if trace.output_tokens > 1:
            st.tpot.observe((e2e - ttft) / (trace.output_tokens - 1))
        st.generation_hist.observe(trace.output_tokens)
        st.max_tokens_hist.observe(max_tokens)


def kv_usage(engine: Engine) -> float:
    cap = engine.rates.gpu_cache_tokens
    return min(1.0, engine.stats.running_tokens / cap) if cap > 0 else 0.0

