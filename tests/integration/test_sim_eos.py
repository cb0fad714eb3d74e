"""Output length on a real engine process: seeded early stops at an EOS (`--eos-rate`),
vLLM's `ignore_eos` and `min_tokens` (validated as vLLM does), streamed and not; the
configuration the server reports (/v1/models gate_sim.config) and its
vllm:cache_config_info."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sim_support import Streamed, document, engine, get_json, metrics, post_json, stream, total

from harness.sim.engine import Rates
from harness.sim.metrics import cache_config_labels
from harness.sim.profiles import get_profile
from harness.sim.spec import EngineSpec

SPEC = EngineSpec(port=0, speed=1000.0, tp=8, seed=5, eos_rate=0.5)
FIX = Path(__file__).parents[1] / "fixtures" / "sim" / "vllm-metrics_er0080_v0.25.1_idle.prom"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with engine(SPEC, tmp_path_factory.mktemp("sim-eos") / "state") as u:
        yield u


def _body(i: int, chat: bool, max_tokens: int, **extra: Any) -> dict[str, Any]:
    if chat:
        return {"messages": [{"role": "user", "content": document(40, i)}],
                "max_tokens": max_tokens, **extra}
    return {"prompt": document(40, i), "max_tokens": max_tokens, **extra}


def _streams(url: str, n: int, max_tokens: int, **extra: Any) -> list[tuple[bool, Streamed]]:
    async def main() -> list[tuple[bool, Streamed]]:
        async with aiohttp.ClientSession() as s:
            out = []
            for i in range(n):
                chat = i % 2 == 1
                out.append((chat, await stream(s, url, _body(i, chat, max_tokens, **extra),
                                               chat=chat)))
            return out

    return asyncio.run(main())


def _finish(r: Streamed) -> str | None:
    reasons = [c["choices"][0]["finish_reason"] for c in r.chunks if c.get("choices")]
    assert all(f is None for f in reasons[:-1])
    return reasons[-1]


def _tokens_in(url: str, text: str) -> int:
    _, tok = post_json(url + "/tokenize", {"prompt": text})
    return int(tok["count"])


def _check_counts(url: str, results: list[tuple[bool, Streamed]], max_tokens: int,
                  min_tokens: int = 0) -> dict[str, int]:
    seen = {"stop": 0, "length": 0}
    for _chat, r in results:
        assert r.status == 200 and r.done and r.error is None
        fin, usage = _finish(r), r.usage
        assert usage is not None
        n = usage["completion_tokens"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + n
        if fin == "length":
            assert n == max_tokens
        else:
            assert fin == "stop" and min_tokens + 1 <= n < max_tokens
        # the real count: the text's tokens, plus the EOS (generated, counted, no text)
        assert n == _tokens_in(url, r.text) + (fin == "stop")
        seen[fin] += 1
    return seen


def test_eos_rate_stops_streams_early_with_the_real_count(url: str) -> None:
    before = metrics(url)
    results = _streams(url, 40, 16)
    seen = _check_counts(url, results, 16)
    assert seen["stop"] >= 8 and seen["length"] >= 8  # eos_rate 0.5
    assert any(chat for chat, r in results if _finish(r) == "stop")
    after = metrics(url)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("vllm:request_success_total", finished_reason="stop") == seen["stop"]
    assert delta("vllm:request_success_total", finished_reason="length") == seen["length"]
    assert delta("vllm:generation_tokens_total") == sum(
        r.usage["completion_tokens"] for _, r in results if r.usage)
    assert delta("vllm:e2e_request_latency_seconds_count") == 40


def test_ignore_eos_runs_every_request_to_max_tokens(url: str) -> None:
    for flag in (True, "true", 1):  # vLLM's request model is lax: "true" and 1 are true
        seen = _check_counts(url, _streams(url, 12, 16, ignore_eos=flag), 16)
        assert seen == {"stop": 0, "length": 12}
    seen = _check_counts(url, _streams(url, 30, 16, ignore_eos=False), 16)
    assert seen["stop"] > 0


def test_min_tokens_keeps_the_eos_out_of_the_first_tokens(url: str) -> None:
    seen = _check_counts(url, _streams(url, 30, 16, min_tokens=10), 16, min_tokens=10)
    assert seen["stop"] > 0
    seen = _check_counts(url, _streams(url, 10, 16, min_tokens=15), 16, min_tokens=15)
    assert seen == {"stop": 0, "length": 10}  # no room left for an early EOS


def test_non_streamed_responses_stop_too(url: str) -> None:
    finishes = set()
    for i in range(24):
        chat = i % 2 == 0
        route = "/v1/chat/completions" if chat else "/v1/completions"
        status, body = post_json(url + route, _body(i, chat, 12))
        assert status == 200
        (choice,) = body["choices"]
        text = choice["message"]["content"] if chat else choice["text"]
        n = body["usage"]["completion_tokens"]
        fin = choice["finish_reason"]
        finishes.add(fin)
        assert (n == 12) if fin == "length" else (fin == "stop" and 1 <= n < 12)
        assert n == _tokens_in(url, text) + (fin == "stop")
        assert choice["stop_reason"] is None
    assert finishes == {"stop", "length"}


def test_the_same_seed_gives_the_same_stops(tmp_path: Path) -> None:
    def fates(spec: EngineSpec, name: str) -> list[tuple[str | None, int]]:
        with engine(spec, tmp_path / name) as u:
            return [(_finish(r), r.usage["completion_tokens"] if r.usage else -1)
                    for _, r in _streams(u, 24, 16)]

    first = fates(SPEC, "a")
    assert fates(SPEC, "b") == first
    assert fates(replace(SPEC, seed=6), "c") != first
    assert {f for f, _ in first} == {"stop", "length"}


@pytest.mark.parametrize(("extra", "message"), [
    ({"ignore_eos": "maybe"}, "ignore_eos"),
    ({"ignore_eos": None}, "ignore_eos"),
    ({"ignore_eos": 2}, "ignore_eos"),
    ({"ignore_eos": [True]}, "ignore_eos"),
    ({"min_tokens": "abc"}, "min_tokens"),
    ({"min_tokens": 1.5}, "min_tokens"),
    ({"min_tokens": None}, "min_tokens"),
    ({"min_tokens": -1}, "min_tokens must be greater than or equal to 0, got -1."),
    ({"min_tokens": 9}, "min_tokens must be less than or equal to max_tokens=8, got 9."),
])
@pytest.mark.parametrize("chat", [False, True])
def test_bad_values_are_vllm_400s(url: str, extra: dict[str, Any], message: str,
                                  chat: bool) -> None:
    route = "/v1/chat/completions" if chat else "/v1/completions"
    status, err = post_json(url + route, _body(0, chat, 8, **extra))
    assert status == 400
    assert set(err["error"]) == {"message", "type", "param", "code"}
    assert err["error"]["code"] == 400 and message in err["error"]["message"]


def test_lax_values_are_accepted_as_vllm_does(url: str) -> None:
    for extra in ({"ignore_eos": "yes", "min_tokens": "8"}, {"ignore_eos": 1.0, "min_tokens": 8.0},
                  {"ignore_eos": "off", "min_tokens": 8}, {"min_tokens": " 8 "}):
        status, body = post_json(url + "/v1/completions", _body(1, False, 8, **extra))
        assert status == 200, (extra, body)
        assert body["choices"][0]["finish_reason"] == "length"  # min_tokens 8 of 8
    status, _ = post_json(url + "/v1/completions", _body(1, False, 8, min_tokens=True))
    assert status == 200  # pydantic's lax int: True is 1


def test_min_tokens_up_to_the_resolved_max_tokens(url: str) -> None:
    """Without max_tokens the limit is what the context leaves (as vLLM resolves it)."""
    left = 32768 - _tokens_in(url, "hello")
    status, body = post_json(url + "/v1/completions", {"prompt": "hello", "min_tokens": 40000})
    assert status == 400 and f"max_tokens={left}, got 40000" in body["error"]["message"]


def test_the_server_reports_its_whole_configuration(url: str) -> None:
    sim = get_json(url + "/v1/models")["data"][0]["gate_sim"]
    assert sim["tp"] == 8 and sim["simulated"] is True  # what the harness reads, unchanged
    assert sim["config"] == SPEC.reported_config()
    assert sim["config"]["eos_rate"] == 0.5 and sim["config"]["speed"] == 1000.0


def test_cache_config_info_is_vllms(url: str) -> None:
    with urllib.request.urlopen(url + "/metrics") as r:
        text = r.read().decode()
    (fam,) = [f for f in text_string_to_metric_families(text)
              if f.name == "vllm:cache_config_info"]
    (sample,) = fam.samples
    assert fam.type == "gauge" and sample.value == 1.0
    p = get_profile(SPEC.profile)
    assert sample.labels == cache_config_labels(Rates.of(p, 8), p.max_model_len)
    (real,) = [f for f in text_string_to_metric_families(FIX.read_text())
               if f.name == "vllm:cache_config_info"]
    assert set(sample.labels) == set(real.samples[0].labels)
    assert sample.labels["num_gpu_blocks"] == "125000"
    assert sample.labels["kv_cache_size_tokens"] == "2000000"
    assert sample.labels["kv_cache_max_concurrency"] == "61.03515625"  # 2e6 / 32768
