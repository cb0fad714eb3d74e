"""The simulator over real HTTP on loopback: vLLM's OpenAI-server shapes (the key sets
vLLM's protocol models serialise: CompletionStreamResponse, ChatCompletionStreamResponse,
UsageInfo, TokenizeResponse), /v1/models with the gate_sim block, errors."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from sim_support import (
    Streamed,
    document,
    engine,
    get_json,
    metrics,
    post_json,
    stream,
    total,
)

from harness.sim.spec import EngineSpec

MODEL = "Qwen/Qwen2.5-32B-Instruct"
COMPLETION_CHUNK = {"id", "object", "created", "model", "choices"}
COMPLETION_CHOICE = {"index", "text", "logprobs", "finish_reason", "stop_reason"}
USAGE = {"prompt_tokens", "total_tokens", "completion_tokens"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d: Path = tmp_path_factory.mktemp("sim-api")
    with engine(EngineSpec(port=0, speed=1000.0, tp=8), d / "state") as u:
        yield u


def _run(url: str, body: dict[str, object], chat: bool = False) -> Streamed:
    async def main() -> Streamed:
        async with aiohttp.ClientSession() as s:
            return await stream(s, url, body, chat=chat)

    return asyncio.run(main())


def test_models_version_health(url: str) -> None:
    models = get_json(url + "/v1/models")
    assert models["object"] == "list"
    card = models["data"][0]
    assert (card["id"], card["object"], card["owned_by"]) == (MODEL, "model", "gate-sim")
    assert card["max_model_len"] == 32768
    sim = card["gate_sim"]
    config = sim.pop("config")
    assert sim == {"profile": "r1-qwen32b", "tp": 8, "instance": 0, "external_tier": False,
                   "speed": 1000.0, "simulated": True, "seed": 0, "stream_interval": 1,
                   "tier_read_gbps": 110.56}  # r1's 13.82 GB/s a GPU x TP8
    assert config == EngineSpec(speed=1000.0, tp=8).reported_config()
    assert get_json(url + "/version")["version"].startswith("gate-sim ")
    with urllib.request.urlopen(url + "/health") as r:
        assert r.status == 200


def test_tokenize_detokenize(url: str) -> None:
    status, tok = post_json(url + "/tokenize", {"model": MODEL, "prompt": "hello world"})
    assert status == 200
    assert set(tok) == {"count", "max_model_len", "tokens", "token_strs"}
    assert tok["count"] == len(tok["tokens"]) and tok["max_model_len"] == 32768
    status, back = post_json(url + "/detokenize", {"model": MODEL, "tokens": tok["tokens"]})
    assert (status, back) == (200, {"prompt": "hello world"})
    _, chat = post_json(url + "/tokenize", {"messages": [{"role": "user", "content": "hi"}]})
    assert chat["count"] > 2


def test_completion_stream_is_shaped_like_vllm(url: str) -> None:
    r = _run(url, {"model": MODEL, "prompt": document(50, 1), "max_tokens": 5})
    assert r.status == 200 and r.done and r.error is None
    *tokens, usage = r.chunks
    for c in tokens:
        assert set(c) == COMPLETION_CHUNK and c["object"] == "text_completion"
        (choice,) = c["choices"]
        assert set(choice) == COMPLETION_CHOICE
    assert [c["choices"][0]["finish_reason"] for c in tokens][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in tokens[:-1])
    assert tokens[0]["choices"][0]["text"]  # vLLM sends no empty first completion chunk
    assert set(usage) == COMPLETION_CHUNK | {"usage"} and usage["choices"] == []
    assert set(usage["usage"]) == USAGE and usage["usage"]["completion_tokens"] == 5
    _status, tok = post_json(url + "/tokenize", {"prompt": document(50, 1)})
    assert usage["usage"]["prompt_tokens"] == tok["count"]
    assert len({c["id"] for c in r.chunks}) == 1 and r.chunks[0]["id"].startswith("cmpl-")


def test_chat_stream_opens_with_a_role_only_delta(url: str) -> None:
    r = _run(url, {"messages": [{"role": "user", "content": "hi"}],
                   "max_completion_tokens": 3}, chat=True)
    assert r.status == 200 and r.done
    first, *content, usage = r.chunks
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"] == [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                 "logprobs": None, "finish_reason": None}]
    assert all(set(c["choices"][0]["delta"]) == {"content"} for c in content)
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert "stop_reason" in content[-1]["choices"][0]
    assert usage["usage"]["completion_tokens"] == 3 and usage["choices"] == []


def test_no_usage_chunk_unless_asked(url: str) -> None:
    async def main() -> list[bytes]:
        async with aiohttp.ClientSession() as s, s.post(
                url + "/v1/completions",
                json={"prompt": "hello", "max_tokens": 2, "stream": True}) as resp:
            return (await resp.read()).split(b"\n\n")

    events = [e for e in asyncio.run(main()) if e]
    assert events[-1] == b"data: [DONE]" and b"usage" not in b"".join(events)


def test_non_stream_responses(url: str) -> None:
    status, body = post_json(url + "/v1/completions", {"prompt": "hello", "max_tokens": 4})
    assert status == 200 and body["object"] == "text_completion"
    assert body["usage"]["completion_tokens"] == 4 and body["choices"][0]["text"]
    status, body = post_json(url + "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
    assert status == 200 and body["choices"][0]["message"]["role"] == "assistant"
    status, body = post_json(url + "/v1/completions", {"prompt": [1000, 2000], "max_tokens": 1})
    assert status == 200 and body["usage"]["prompt_tokens"] == 2


@pytest.mark.parametrize(("body", "code"), [
    ({"model": "other", "prompt": "x", "max_tokens": 1}, 404),
    ({"prompt": "x", "max_tokens": 40000}, 400),
    ({"prompt": "", "max_tokens": 1}, 400),
    ({"prompt": {"not": "a prompt"}}, 400),
    ({"prompt": "x", "max_tokens": 0}, 400),
])
def test_errors_are_vllm_error_bodies(url: str, body: dict[str, object], code: int) -> None:
    status, err = post_json(url + "/v1/completions", body)
    assert status == code
    assert set(err["error"]) == {"message", "type", "param", "code"}
    assert err["error"]["code"] == code


def test_metrics_counters_move_like_vllms(url: str) -> None:
    before = metrics(url)
    prompt = document(400, 7)
    _, tok = post_json(url + "/tokenize", {"prompt": prompt})
    n = tok["count"]
    for _ in range(2):
        assert _run(url, {"prompt": prompt, "max_tokens": 3}).done
    after = metrics(url)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("vllm:prompt_tokens_total") == 2 * n
    assert delta("vllm:prefix_cache_queries_total") == 2 * n  # in tokens, per request
    hit = (n - 1) // 16 * 16  # the second request hits every full block but the last token
    assert delta("vllm:prefix_cache_hits_total") == hit
    assert delta("vllm:prompt_tokens_by_source_total", source="local_cache_hit") == hit
    assert delta("vllm:prompt_tokens_by_source_total", source="local_compute") == 2 * n - hit
    assert delta("vllm:external_prefix_cache_queries_total") == 0  # no connector
    assert delta("vllm:generation_tokens_total") == 6
    assert delta("vllm:request_success_total", finished_reason="length") == 2
    assert delta("vllm:time_to_first_token_seconds_count") == 2
    assert total(after, "vllm:num_requests_running") == 0
    assert total(after, "gate_sim_speed_factor") == 1000.0
    assert not [k for k in after if k.startswith("lmcache:")]
