"""Before any load: is the endpoint up, OpenAI-compatible, and serving the model asked for?

GET /v1/models (the OpenAI list), then the engine's own answers where it has them
(/version, /info, /api/version, the family prefixes on /metrics), which say which engine
it is (harness.loadgen.engines). An unreachable server is an EndpointError (exit 3,
infrastructure); a model it does not serve is a UsageError (exit 4) that lists what it
does serve.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from harness.errors import EndpointError, UsageError
from harness.loadgen.engines import Detection, detect
from harness.loadgen.records import base_url

# GETs that tell engines apart; each is optional (a 404 or no JSON just says "not this").
IDENTITY_PATHS = ("/version", "/info", "/api/version")


@dataclass(frozen=True)
class ServerInfo:
    url: str
    models: list[str]
    max_model_len: int | None
    version: str | None
    raw: dict[str, Any]  # the first model card, extra keys (e.g. "gate_sim") included
    cards: list[dict[str, Any]] = field(default_factory=list)
    engine: Detection | None = None  # which engine answered, and why we think so
    answers: dict[str, Any] = field(default_factory=dict)  # path -> JSON it answered
    metric_names: frozenset[str] = frozenset()  # families on /metrics (none: no /metrics)

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


async def _optional_json(s: aiohttp.ClientSession, url: str) -> Any:
    """The JSON a GET answers with 200, else None (no such route, not JSON, no answer)."""
    try:
        async with s.get(url) as r:
            if r.status != 200:
                return None
            return json.loads(await r.text(errors="replace"))
    except (aiohttp.ClientError, ValueError, TimeoutError):
        return None


async def _metric_names(s: aiohttp.ClientSession, url: str) -> frozenset[str]:
    """What /metrics declares (empty when it has none)."""
    try:
        async with s.get(url) as r:
            if r.status != 200:
                return frozenset()
            text = await r.text(errors="replace")
    except (aiohttp.ClientError, TimeoutError):
        return frozenset()
    return metric_names(text)


def metric_names(text: str) -> frozenset[str]:
    """Sample names and declared families (`# TYPE`) of an exposition: a labelled counter
    no request has touched yet is declared but has no sample."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 3:
                names.add(parts[2])
        elif line and not line.startswith("#"):
            names.add(line.split("{", 1)[0].split(" ", 1)[0])
    return frozenset(n for n in names if n)


async def probe(url: str, timeout: float = 10, engine: str | None = None) -> ServerInfo:
    """Ask the server what it serves and which engine it is; raise before a single load
    request is sent. `engine` (config / --engine) overrides the detected profile."""
    base = base_url(url)
    models_url = base + "/v1/models"
    tmo = aiohttp.ClientTimeout(total=timeout)
    try:
        async with aiohttp.ClientSession(timeout=tmo, trust_env=False) as s:
            async with s.get(models_url) as r:
                status = r.status
                text = await r.text(errors="replace")
            found = await asyncio.gather(*(_optional_json(s, base + p) for p in IDENTITY_PATHS))
            names = await _metric_names(s, base + "/metrics")
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
    answers: dict[str, Any] = {p: a for p, a in zip(IDENTITY_PATHS, found, strict=True)
                               if a is not None}
    answers["/v1/models"] = body
    try:
        detection = detect(answers, names, override=engine)
    except ValueError as exc:
        raise UsageError(str(exc), key="engine") from None
    return ServerInfo(url=base, models=models, max_model_len=_max_len(first),
                      version=detection.version, raw=dict(first), cards=cards,
                      engine=detection, answers=answers, metric_names=names)


def require_model(info: ServerInfo, model: str) -> dict[str, Any]:
    """The card of `model`, or a UsageError that names what the server does serve."""
    if model not in info.models:
        raise UsageError(f"model {model!r} is not served by {info.url}; it serves: "
                         f"{', '.join(info.models)}", key="--model")
    return info.card(model)


def probe_all(urls: list[str], timeout: float = 10,
              engine: str | None = None) -> list[ServerInfo]:
    """Probe several endpoints concurrently from sync code."""

    async def go() -> list[ServerInfo]:
        return list(await asyncio.gather(*(probe(u, timeout, engine) for u in urls)))

    return asyncio.run(go())
