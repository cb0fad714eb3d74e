"""The detached soak: the accelerated arm under a closed loop for the soak's duration, cut
into windows, each written to the spool once it is final (harness/loadgen/soak_spool.py).

`python -m harness.loadgen.soak DIR` runs it; `start(DIR)` starts it in its own session,
so it outlives the gate process that started it (the gate is only its viewer). With
`placement: client` the load agent runs the same soak on the client host (`gate-agent
soak-start`, harness/remote/soak_agent.py), so this module runs on Python 3.9+ there.

It keeps no request longer than its window: a window's requests are summarised and dropped
once every request sent in it has answered, so a 72 h soak's memory stays flat.

Window k spans [k, k+1) x window_s from the soak's start. A request belongs to the window
it was sent in (its latency, its error); its output tokens to the window it completed in.
At each window's edge every engine's /metrics is scraped: the window's KV-tier hits, the
engines' RSS and restarts come from the scrapes at its two edges
(harness/loadgen/soak_counters.py).
The closed loop asks the documents in turn: with a working set larger than the GPU's
prefix cache, each prefix is evicted before it comes round again and is loaded from the
tier, as production's long-tail of documents is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.loadgen import client
from harness.loadgen.engine import loop_factory
from harness.loadgen.records import RequestRecord
from harness.loadgen.soak_counters import window_counters
from harness.loadgen.soak_spool import SoakSpec, SoakState, Spool
from harness.loadgen.soak_windows import summarise
from harness.probes.prometheus import MetricsSnapshot, scrape

LOG = "soak.log"
MODULE = "harness.loadgen.soak"
# what a soak's command line holds: this module, the load agent that runs it on a client
# host, or the name a soak started by an older gate ran under
COMMANDS = (MODULE.encode(), b"harness.remote.agent", b"harness.g4.soak")
STOP_GRACE_S = 60.0  # a stopped soak waits this long for the requests in flight


class Soak:
    """One soak's state in its own process (see the module docstring)."""

    def __init__(self, spool: Spool, spec: SoakSpec) -> None:
        self.spool = spool
        self.spec = spec
        self.window_s = spec.window_s
        self.t0 = 0.0  # monotonic start
        self.started_at = 0.0  # epoch start
        self.stopping: str | None = None
        self.sent: dict[int, list[RequestRecord]] = defaultdict(list)
        self.inflight: Counter[int] = Counter()
        self.tokens: Counter[int] = Counter()
        # keyed as the engine's own counters see a request: by when its first token came
        # (the TTFT histogram) and when it ended (the e2e histogram); the gate holds them
        # against the engines' counters it scrapes itself (harness/g4/engine_clock.py)
        self.first_tokens: Counter[int] = Counter()
        self.ttft_sums: defaultdict[int, float] = defaultdict(float)
        self.completed: Counter[int] = Counter()
        self.ended: Counter[int] = Counter()
        self.counters: dict[int, dict[str, Any]] = {}
        self.written = 0  # windows written (in order)
        self.n = 0  # requests sent
        chat = spec.api == "chat"
        self.chat = chat
        n = len(spec.endpoints)
        self.targets = [(d.doc_id if d.doc_id >= 0 else i) % n
                        for i, d in enumerate(spec.documents)]
        self.bodies = [client.build_body(d, spec.endpoints[k].model, spec.api, spec.extra_body)
                       for d, k in zip(spec.documents, self.targets)]  # noqa: B905 - 3.9
        self.urls = [e.base + client.route(spec.api) for e in spec.endpoints]
        self.headers = client.base_headers(spec.tag)
        self.ids = client.RequestIds()
        self.next_doc = 0

    def window_of(self, monotonic: float) -> int:
        return math.floor((monotonic - self.t0) / self.window_s)

    async def run(self) -> None:
        spec = self.spec
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop, f"signal {sig.name}")
        self._state("starting")
        async with client.new_session(spec.timeout_s, spec.concurrency) as session:
            await self._warm(session)
            if self.stopping is not None:
                self._state("stopped")
                return
            self.t0, self.started_at = time.monotonic(), time.time()
            self._state("running")
            end = self.t0 + spec.windows * self.window_s
            workers = [asyncio.create_task(self._worker(session, end))
                       for _ in range(spec.concurrency)]
            try:
                await self._edges()
                done, pending = await asyncio.wait(
                    workers, timeout=STOP_GRACE_S if self.stopping else None)
                for task in pending:
                    task.cancel()
                for task in done:
                    task.result()  # a worker's own failure is the soak's
            finally:
                for task in workers:
                    task.cancel()
        self._flush(final=True)
        self._state("stopped" if self.stopping else "done")

    async def _warm(self, session: client.Session) -> None:
        """Every document once, before the first window: the tier then holds each prefix
        (production's steady state), and the first windows measure loads from it, not the
        tier's first fill. Not measured; the soak fails when most of them fail."""
        docs, spec = self.spec.documents, self.spec
        todo = iter(range(len(docs)))
        failed: list[str] = []

        async def one() -> None:
            for i in todo:
                if self.stopping is not None:
                    return
                k = self.targets[i]
                rec = RequestRecord(idx=-1 - i, instance=spec.endpoints[k].instance,
                                    doc_id=docs[i].doc_id, warmup=True, scheduled=0.0)
                headers = dict(self.headers)
                headers["X-Request-ID"] = self.ids.next()
                await client.stream(session, self.urls[k], self.bodies[i], headers, rec,
                                    time.monotonic(), self.chat, docs[i].prompt_tokens)
                if not rec.ok:
                    failed.append(f"{rec.error_kind}: {rec.error}")

        await asyncio.gather(*(one() for _ in range(min(spec.concurrency, len(docs)))))
        if len(failed) * 2 > len(docs):
            raise RuntimeError(f"{len(failed)} of {len(docs)} warm-up requests failed, "
                               f"e.g. {failed[0][:300]}")

    def stop(self, why: str) -> None:
        if self.stopping is None:
            self.stopping = why

    async def _worker(self, session: client.Session, end: float) -> None:
        docs, spec = self.spec.documents, self.spec
        while self.stopping is None:
            now = time.monotonic()
            if now >= end:
                return
            i = self.next_doc
            self.next_doc = (i + 1) % len(docs)
            doc, k = docs[i], self.targets[i]
            w = self.window_of(now)
            rec = RequestRecord(idx=self.n, instance=spec.endpoints[k].instance,
                                doc_id=doc.doc_id, warmup=False, scheduled=now - self.t0)
            self.n += 1
            headers = dict(self.headers)
            headers["X-Request-ID"] = self.ids.next()
            self.inflight[w] += 1
            try:
                await client.stream(session, self.urls[k], self.bodies[i], headers, rec,
                                    self.t0, self.chat, doc.prompt_tokens)
            finally:
                self.inflight[w] -= 1
            self.sent[w].append(rec)
            self._count(rec)

    def _count(self, rec: RequestRecord) -> None:
        """A finished request into the windows its output tokens, first token and end
        fall in (seconds from the soak's start)."""
        if rec.sent is None:
            return
        if rec.ttft is not None:
            k = math.floor((rec.sent + rec.ttft) / self.window_s)
            self.first_tokens[k] += 1
            self.ttft_sums[k] += rec.ttft
        # a failed request has no e2el: it ended now (it is counted as it returns)
        ended = rec.sent + rec.e2el if rec.e2el is not None else time.monotonic() - self.t0
        end = math.floor(ended / self.window_s)
        self.ended[end] += 1
        if rec.ok and rec.e2el is not None:
            self.completed[end] += 1
            if rec.output_tokens:
                self.tokens[end] += rec.output_tokens

    async def _edges(self) -> None:
        """Scrape the engines at every window's edge; write windows as they become final."""
        loop = asyncio.get_running_loop()
        urls = [e.base for e in self.spec.endpoints]
        before, _ = await loop.run_in_executor(None, scrape_all, urls)
        last_good = list(before)
        for k in range(self.spec.windows):
            edge = self.t0 + (k + 1) * self.window_s
            while self.stopping is None and time.monotonic() < edge:
                await asyncio.sleep(min(0.5, max(edge - time.monotonic(), 0.0)))
                why = self.spool.stop_requested()
                if why is not None:
                    self.stop(f"asked to stop: {why.strip()[:200]}")
            if self.stopping is not None:
                return  # window k did not end: it is not measured
            after, errors = await loop.run_in_executor(None, scrape_all, urls)
            self.counters[k] = window_counters(before, after, errors, last_good)
            last_good = [a if a is not None else g  # one per engine, both
                         for a, g in zip(after, last_good)]  # noqa: B905 - 3.9
            before = after
            self._flush()

    def _flush(self, final: bool = False) -> None:
        """Write every window whose edge has been scraped and whose requests answered."""
        while self.written in self.counters:
            k = self.written
            if self.inflight[k] and not final:
                return
            records = self.sent.pop(k, [])
            w = summarise(k, self.window_s, records, self.tokens.pop(k, 0))
            doc: dict[str, Any] = {
                "index": k, "start_s": w.start_s, "length_s": w.length_s,
                "requests": w.requests, "errors": dict(w.errors),
                "ttft_p50_s": w.ttft_p50_s, "ttft_p99_s": w.ttft_p99_s,
                "tpot_p50_s": w.tpot_p50_s, "output_tokens": w.output_tokens,
                "unanswered": self.inflight[k], **self.counters.pop(k),
                "clock": {"first_tokens": self.first_tokens.pop(k, 0),
                          "ttft_sum_s": self.ttft_sums.pop(k, 0.0),
                          "completed": self.completed.pop(k, 0),
                          "ended": self.ended.pop(k, 0)}}
            self.inflight.pop(k, None)
            self.spool.write_window(k, doc)
            self.written += 1
            self._state("running")

    def _state(self, status: str, error: str = "") -> None:
        self.spool.set_state(SoakState(
            status=status, pid=os.getpid(), started_at=self.started_at,  # type: ignore[arg-type]
            updated_at=time.time(), windows_written=self.written, error=error,
            stop_reason=self.stopping or "", extra={"requests": self.n}))


def scrape_all(urls: list[str]) -> tuple[list[MetricsSnapshot | None], list[str]]:
    """Every engine's /metrics now; None and the reason where one did not answer."""
    snaps: list[MetricsSnapshot | None] = []
    errors: list[str] = []
    for url in urls:
        try:
            snaps.append(scrape(url, timeout=10))
            errors.append("")
        except Exception as exc:
            snaps.append(None)
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
    return snaps, errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.loadgen.soak",
                                 description="Run a G4 soak from its spool directory.")
    ap.add_argument("directory", type=Path)
    args = ap.parse_args(argv)
    return run(args.directory)


def run(directory: Path) -> int:
    """Run the soak of `directory` in this process to its end; its state says how it
    ended, whatever ended it. (A loop of our own, not asyncio.Runner: 3.11+.)"""
    spool = Spool(directory)
    soak: Soak | None = None
    try:
        soak = Soak(spool, spool.spec())
        loop = loop_factory()()
        try:
            loop.run_until_complete(soak.run())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())  # the scrapes' threads
            loop.close()
    except BaseException as exc:  # the spool says why, whatever ended it
        spool.set_state(SoakState(
            status="failed", pid=os.getpid(),
            started_at=soak.started_at if soak is not None else time.time(),
            updated_at=time.time(), windows_written=soak.written if soak else 0,
            error=f"{type(exc).__name__}: {exc}"[:2000]))
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        print(f"soak failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def start(directory: Path) -> int:
    """Start the soak of `directory` in its own session (it outlives this process and its
    terminal); its output goes to soak.log there. Returns its pid."""
    flags = [f for f, on in (("-I", sys.flags.isolated), ("-B", sys.flags.dont_write_bytecode))
             if on]
    with (directory / LOG).open("ab") as log:
        proc = subprocess.Popen([sys.executable, *flags, "-m", MODULE,
                                 str(directory.resolve())], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True,
                                close_fds=True,
                                cwd=directory)
    return proc.pid


def alive(pid: int) -> bool:
    """`pid` runs and is a soak (a reused pid is someone else's process)."""
    if pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] == "Z":
        return False
    # an empty cmdline: the child forked and has not exec'd yet (just started), so still ours
    return not cmdline or any(c in cmdline for c in COMMANDS)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
