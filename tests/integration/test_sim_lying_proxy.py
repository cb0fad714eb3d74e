"""The test-only lying proxy in front of a real engine: it passes every route through and
lies only about usage.completion_tokens (and, if asked, finish_reason), streamed or not;
the engine's /metrics, read through it, still tells the truth. Started as a script, it
prints its URL and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sim_support import Streamed, document, engine, get_json, metrics, post_json, stream, total
from sim_support.lying_proxy import lying_proxy

from harness.sim.spec import EngineSpec, FaultSpec

PROXY = Path(__file__).parents[1] / "sim_support" / "lying_proxy.py"


@pytest.fixture(scope="module")
def urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    state = tmp_path_factory.mktemp("sim-proxy") / "state"
    with engine(EngineSpec(port=0, speed=1000.0, tp=8, seed=1), state) as url, \
            lying_proxy(url, usage_factor=1.048, finish_reason="stop") as proxy:
        yield url, proxy


def _stream(url: str, body: dict[str, Any], chat: bool = False) -> Streamed:
    async def main() -> Streamed:
        async with aiohttp.ClientSession() as s:
            return await stream(s, url, body, chat=chat)

    return asyncio.run(main())


def _finish(r: Streamed) -> str | None:
    return [c["choices"][0]["finish_reason"] for c in r.chunks if c.get("choices")][-1]


def _raw(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


@pytest.mark.parametrize("chat", [False, True])
def test_streamed_usage_and_finish_reason_are_lies(urls: tuple[str, str], chat: bool) -> None:
    engine_url, proxy = urls
    body: dict[str, Any] = {"max_tokens": 125, "ignore_eos": True}
    if chat:
        body["messages"] = [{"role": "user", "content": document(50, 3)}]
    else:
        body["prompt"] = document(50, 3)
    honest, lied = _stream(engine_url, body, chat), _stream(proxy, body, chat)
    assert honest.done and lied.done and lied.error is None
    assert honest.usage is not None and lied.usage is not None
    assert honest.usage["completion_tokens"] == 125 and _finish(honest) == "length"
    assert lied.usage["completion_tokens"] == 131 and _finish(lied) == "stop"  # 125 x 1.048
    assert lied.usage["prompt_tokens"] == honest.usage["prompt_tokens"]
    assert lied.usage["total_tokens"] == lied.usage["prompt_tokens"] + 131
    assert lied.text == honest.text  # the tokens themselves pass unchanged
    assert {c["object"] for c in lied.chunks} == {c["object"] for c in honest.chunks}


def test_non_streamed_usage_is_a_lie(urls: tuple[str, str]) -> None:
    engine_url, proxy = urls
    body = {"prompt": document(30, 4), "max_tokens": 100, "ignore_eos": True}
    _, honest = post_json(engine_url + "/v1/completions", body)
    _, lied = post_json(proxy + "/v1/completions", body)
    assert honest["usage"]["completion_tokens"] == 100
    assert lied["usage"]["completion_tokens"] == 105
    assert lied["choices"][0]["finish_reason"] == "stop"
    assert lied["choices"][0]["text"] == honest["choices"][0]["text"]


def test_every_other_route_passes_through(urls: tuple[str, str]) -> None:
    engine_url, proxy = urls
    for path in ("/v1/models", "/version"):
        assert get_json(proxy + path) == get_json(engine_url + path)
    assert _raw(proxy + "/health") == (200, b"")
    tok = {"prompt": "hello world"}
    assert post_json(proxy + "/tokenize", tok) == post_json(engine_url + "/tokenize", tok)
    ids = {"tokens": post_json(engine_url + "/tokenize", tok)[1]["tokens"]}
    assert post_json(proxy + "/detokenize", ids) == (200, {"prompt": "hello world"})
    # errors pass unchanged, status and body
    bad = {"prompt": "x", "max_tokens": 8, "min_tokens": 9}
    assert post_json(proxy + "/v1/completions", bad) == post_json(
        engine_url + "/v1/completions", bad)
    with pytest.raises(urllib.error.HTTPError) as err:
        _raw(proxy + "/nope")
    assert err.value.code == 404 and err.value.read() == b"404: Not Found"  # the engine's


def test_metrics_through_the_proxy_still_tell_the_truth(urls: tuple[str, str]) -> None:
    engine_url, proxy = urls
    before = metrics(proxy)
    r = _stream(proxy, {"prompt": "count me", "max_tokens": 50, "ignore_eos": True})
    assert r.usage is not None and r.usage["completion_tokens"] == 52
    after = metrics(proxy)
    got = (total(after, "vllm:generation_tokens_total")
           - total(before, "vllm:generation_tokens_total"))
    assert got == 50  # the engine's own count
    assert total(after, "vllm:request_success_total", finished_reason="length") == total(
        metrics(engine_url), "vllm:request_success_total", finished_reason="length")


def test_script_prints_its_url_and_stops_on_sigterm(urls: tuple[str, str]) -> None:
    engine_url, _ = urls
    proc = subprocess.Popen([sys.executable, str(PROXY), "--upstream", engine_url,
                             "--port", "0", "--usage-factor", "1.048"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert get_json(url + "/v1/models") == get_json(engine_url + "/v1/models")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_streams_pass_event_by_event_and_cuts_stay_cuts(tmp_path: Path) -> None:
    # a stream that stalls for 2 s mid-way: the first token is through long before the end
    # (margins a busy host's scheduling stalls do not eat)
    stall = EngineSpec(port=0, speed=1.0, tp=8, faults=FaultSpec(stall_rate=1.0, stall_s=2.0))
    with engine(stall, tmp_path / "stall") as url, lying_proxy(url) as proxy:
        r = _stream(proxy, {"prompt": "a", "max_tokens": 6})
        assert r.done and r.ttft is not None
        assert r.ttft < 1.0 < 1.9 < r.e2e
    # an engine that cuts streams mid-way: through the proxy, still cut (no [DONE])
    cuts = EngineSpec(port=0, speed=1000.0, tp=8, seed=2, faults=FaultSpec(error_rate=1.0))
    with engine(cuts, tmp_path / "cuts") as url, lying_proxy(url, usage_factor=2.0) as proxy:
        results = [_stream(proxy, {"prompt": f"r{i}", "max_tokens": 8}) for i in range(12)]
    cut = [r for r in results if r.status == 200]
    assert cut and len(cut) < 12  # the rest are the engine's HTTP 500s, passed through
    assert {r.status for r in results} == {200, 500}
    for r in cut:
        assert not r.done and r.error and r.usage is None
