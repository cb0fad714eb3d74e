"""Before any load: is the endpoint up, OpenAI-compatible, and serving the model asked for?

GET /v1/models (the OpenAI list) and, when there is one, /version (vLLM). An unreachable
server is an EndpointError (exit 3, infrastructure); a model it does not serve is a
UsageError (exit 4) that lists what it does serve.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from harness.errors import EndpointError, UsageError
from harness.loadgen.records import base_url


@dataclass(frozen=True)
class ServerInfo:
    url: str
    models: list[str]
    max_model_len: int | None
    version: str | None
    raw: dict[str, Any]  # the first model card, extra keys (e.g. "gate_sim") included
    cards: list[dict[str, Any]] = field(default_factory=list)

    def card(self, model: str) -> dict[str, Any]:
        for c in self.cards:
            if c.get("id") == model:
                return c
        return {}


def _max_len(card: dict[str, Any]) -> int | None:
    for value in (card.get("max_model_len"), (card.get("meta") or {}).get("n_ctx_train")
                  if isinstance(card.get("meta"), dict) else None):
        if isinstance(value, int) and value > 0:
            return value
    return None


async def probe(url: str, timeout: float = 10) -> ServerInfo:
    """Ask the server what it serves; raise before a single load request is sent."""
    base = base_url(url)
    models_url = base + "/v1/models"
    tmo = aiohttp.ClientTimeout(total=timeout)
    try:
        async with aiohttp.ClientSession(timeout=tmo, trust_env=False) as s:
            async with s.get(models_url) as r:
                status = r.status
                text = await r.text(errors="replace")
            version = None
            try:
                async with s.get(base + "/version") as r:
                    if r.status == 200:
                        v = (await r.json(content_type=None)).get("version")
                        version = str(v) if v is not None else None
            except (aiohttp.ClientError, ValueError, AttributeError, TimeoutError):
                version = None
    except TimeoutError:
        raise EndpointError(f"no answer within {timeout:g} s", host=base,
                            command="GET /v1/models", stage="probe") from None
    except aiohttp.ClientError as exc:
        raise EndpointError(f"unreachable: {exc}", host=base, command="GET /v1/models",
                            stage="probe", hint="is the engine running on that port?") from None
    if status != 200:
        raise EndpointError(f"not an OpenAI-compatible server: HTTP {status}", host=base,
                            command="GET /v1/models", stage="probe")
    try:
        body = json.loads(text)
        cards = [c for c in body["data"] if isinstance(c, dict)]
        models = [str(c["id"]) for c in cards]
    except (ValueError, KeyError, TypeError):
        snippet = " ".join(text.split())[:80]
        raise EndpointError(f"not an OpenAI-compatible server: /v1/models answered {snippet!r}",
                            host=base, command="GET /v1/models", stage="probe") from None
    if not models:
        raise EndpointError("the server lists no model", host=base, command="GET /v1/models",
                            stage="probe")
    first = cards[0]
    return ServerInfo(url=base, models=models, max_model_len=_max_len(first), version=version,
                      raw=dict(first), cards=cards)


def require_model(info: ServerInfo, model: str) -> dict[str, Any]:
    """The card of `model`, or a UsageError that names what the server does serve."""
    if model not in info.models:
        raise UsageError(f"model {model!r} is not served by {info.url}; it serves: "
                         f"{', '.join(info.models)}", key="--model")
    return info.card(model)


def probe_all(urls: list[str], timeout: float = 10) -> list[ServerInfo]:
    """Probe several endpoints concurrently from sync code."""

    async def go() -> list[ServerInfo]:
        return list(await asyncio.gather(*(probe(u, timeout) for u in urls)))

    return asyncio.run(go())
