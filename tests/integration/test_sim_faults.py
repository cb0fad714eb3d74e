"""Injected faults on a real engine process: error rate (HTTP 500 or a stream cut
mid-way), a crash after N requests (the process is gone), a slow start (503 first)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from sim_support import Streamed, engine, metrics, stream, total

from harness.sim.control import engine_status, engine_url, start_engine, stop_engine
from harness.sim.spec import EngineSpec, FaultSpec


def _many(url: str, n: int, max_tokens: int = 8) -> list[Streamed]:
    async def main() -> list[Streamed]:
        async with aiohttp.ClientSession() as s:
            return [await stream(s, url, {"prompt": f"request {i}", "max_tokens": max_tokens})
                    for i in range(n)]

    return asyncio.run(main())


def test_error_rate_fails_requests_both_ways(tmp_path: Path) -> None:
    spec = EngineSpec(port=0, speed=1000.0, tp=8, seed=3, faults=FaultSpec(error_rate=0.5))
    with engine(spec, tmp_path / "e") as url:
        results = _many(url, 60)
        m = metrics(url)
    http500 = [r for r in results if r.status == 500]
    cut = [r for r in results if r.status == 200 and not r.done]
    ok = [r for r in results if r.done]
    assert len(http500) + len(cut) + len(ok) == 60
    assert http500 and cut and ok
    assert 15 <= len(http500) + len(cut) <= 45
    for r in cut:  # some tokens, then the connection drops: no usage, no [DONE]
        assert r.chunks and r.usage is None and r.error
    assert total(m, "vllm:request_success_total", finished_reason="length") == len(ok)
    assert total(m, "vllm:request_success_total", finished_reason="abort") == len(cut)


def test_crash_after_n_requests(tmp_path: Path) -> None:
    state = tmp_path / "e"
    start_engine(EngineSpec(port=0, speed=1000.0, faults=FaultSpec(crash_after=2)), state)
    try:
        url = engine_url(state)
        first = _many(url, 3)
        assert [r.done for r in first] == [True, True, False]
        assert first[2].error
        for _ in range(500):  # the process exits on its own
            if not engine_status(state).running:
                break
            time.sleep(0.01)
        assert not engine_status(state).running
        assert "simulated crash after 2 requests" in (state / "engine.log").read_text()
    finally:
        stop_engine(state)


def test_slow_start_answers_503_until_ready(tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    proc = subprocess.Popen([sys.executable, "-m", "harness.sim", "--port", "0",
                             "--slow-start", "1.5", "--url-file", str(url_file)],
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(1000):
            if url_file.exists():
                break
            time.sleep(0.01)
        url = url_file.read_text().strip()
        codes = []
        for _ in range(400):
            try:
                with urllib.request.urlopen(url + "/health") as r:
                    codes.append(r.status)
                    break
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
            time.sleep(0.02)
        assert codes[0] == 503 and codes[-1] == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("rate", [1.0])
def test_stalls_do_not_break_the_stream(tmp_path: Path, rate: float) -> None:
    spec = EngineSpec(port=0, speed=1000.0, tp=8,
                      faults=FaultSpec(stall_rate=rate, stall_s=1.0))
    with engine(spec, tmp_path / "e") as url:
        results = _many(url, 5)
    assert all(r.done and r.usage and r.usage["completion_tokens"] == 8 for r in results)
