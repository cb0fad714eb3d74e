"""Helpers for the simulator's tests and benchmark: real engine processes (through
harness.sim.control), a small real streaming client, and /metrics parsed with
prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import statistics
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from harness.sim.control import engine_url, start_engine, stop_engine
from harness.sim.spec import EngineSpec

_WORDS = (
    "the of and to in is was for on are with as at be by this had not but from or have an "
    "they which one you were all we her she there been if more when will would who so no "
    "out up into has its than them can only other new some time could")
WORDS = tuple(_WORDS.split())


def document(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(" " + rng.choice(WORDS) for _ in range(n_words))


@contextlib.contextmanager
def engine(spec: EngineSpec, state_dir: Path, timeout: float = 30.0) -> Iterator[str]:
    """A real `gate sim` process for the duration of the block; yields its URL."""
    start_engine(spec, state_dir, timeout)
    try:
        yield engine_url(state_dir)
    finally:
        stop_engine(state_dir, grace=5.0)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def post_json(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def metrics(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """sample name -> {sorted label items -> value}."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def total(m: dict[str, dict[tuple[tuple[str, str], ...], float]], name: str,
          **labels: str) -> float:
    """Sum of a sample over the label sets that match `labels`."""
    want = set(labels.items())
    return sum(v for k, v in m.get(name, {}).items() if want <= set(k))


@dataclass
class Streamed:
    status: int
    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    ttft: float | None = None
    e2e: float = 0.0
    error: str | None = None

    @property
    def usage(self) -> dict[str, Any] | None:
        for c in self.chunks:
            if c.get("usage"):
                return c["usage"]  # type: ignore[no-any-return]
        return None

    @property
    def text(self) -> str:
        parts = []
        for c in self.chunks:
            for ch in c.get("choices") or []:
                parts.append(ch.get("text") or (ch.get("delta") or {}).get("content") or "")
        return "".join(parts)


async def stream(session: aiohttp.ClientSession, url: str, body: dict[str, Any],
                 chat: bool = False) -> Streamed:
    route = "/v1/chat/completions" if chat else "/v1/completions"
    data = json.dumps({"stream": True, "stream_options": {"include_usage": True}, **body})
    t0 = time.perf_counter()
    try:
        async with session.post(url + route, data=data,
                                headers={"Content-Type": "application/json"}) as resp:
            out = Streamed(resp.status)
            if resp.status != 200:
                out.error = await resp.text()
                out.e2e = time.perf_counter() - t0
                return out
            buf = b""
            async for data in resp.content.iter_any():
                buf += data
                while b"\n\n" in buf:
                    event, buf = buf.split(b"\n\n", 1)
                    payload = event.removeprefix(b"data: ")
                    if payload == b"[DONE]":
                        out.done = True
                        continue
                    obj = json.loads(payload)
                    if out.ttft is None and obj.get("choices"):
                        out.ttft = time.perf_counter() - t0
                    out.chunks.append(obj)
    except aiohttp.ClientError as exc:
        out = locals().get("out") or Streamed(0)
        out.error = f"{type(exc).__name__}: {exc}"
    out.e2e = time.perf_counter() - t0
    return out


@dataclass(frozen=True)
class PhaseNumbers:
    ttft_p50: float
    throughput: float
    wall: float
    failed: int


async def closed_loop(urls: Sequence[str], prompts: Sequence[str], concurrency: int,
                      max_tokens: int) -> PhaseNumbers:
    """`concurrency` clients; every prompt once, spread round-robin over `urls`."""
    queue = list(enumerate(prompts))
    queue.reverse()
    ttfts: list[float] = []
    tokens = 0
    failed = 0
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as session:
        t0 = time.perf_counter()

        async def client() -> None:
            nonlocal tokens, failed
            while queue:
                i, prompt = queue.pop()
                r = await stream(session, urls[i % len(urls)],
                                 {"prompt": prompt, "max_tokens": max_tokens})
                if r.error or r.ttft is None or not r.usage:
                    failed += 1
                    continue
                ttfts.append(r.ttft)
                tokens += r.usage["completion_tokens"]

        await asyncio.gather(*(client() for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    p50 = statistics.median(ttfts) if ttfts else float("inf")
    return PhaseNumbers(p50, tokens / wall, wall, failed)
