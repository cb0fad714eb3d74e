"""The simulated engine's HTTP face: an aiohttp app shaped like vLLM's OpenAI server.

GET /v1/models (with a `gate_sim` block: the harness detects the simulator from what the
server says), /version, /health (503 during a slow start), /metrics; POST
/v1/completions, /v1/chat/completions (stream or not; vLLM's `ignore_eos` and
`min_tokens`), /tokenize, /detokenize. Seeded early stops at an EOS (`eos_rate`). Faults:
HTTP 500 or a stream cut mid-way (seeded error rate), stalls, a crash after N requests,
a slow start; and a soak's (harness.sim.engine): a memory leak, a TTFT drift, a tier that
stops serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from aiohttp import web

from harness import __version__
from harness.sim import shapes, tokenizer
from harness.sim.diskstats import DiskstatsAccountant, accountants
from harness.sim.engine import Arrival, Engine, Rates, Trace
from harness.sim.eos import EosDraws
from harness.sim.faults import Fault, FaultDraws
from harness.sim.metrics import CONTENT_TYPE, Identity, build_registry, render
from harness.sim.profiles import GB
from harness.sim.prompt import Prompt, PromptDigests, SqliteDigestStore
from harness.sim.spec import EngineSpec
from harness.sim.tier import MemoryTierIndex, SqliteTierIndex, TierIndex

JSON = "application/json"
_T = TypeVar("_T", bool, int)


class _BadRequest(Exception):
    def __init__(self, message: str, code: int = 400, err_type: str = "BadRequestError"):
        super().__init__(message)
        self.code, self.err_type = code, err_type


@dataclass
class _Job:
    prompt: Prompt
    max_tokens: int
    stream: bool
    include_usage: bool
    chat: bool
    ignore_eos: bool = False
    min_tokens: int = 0
    eos_at: int | None = None  # drawn: the output token that is an EOS (None: max_tokens)

    @property
    def n_out(self) -> int:
        return self.max_tokens if self.eos_at is None else self.eos_at

    @property
    def finish(self) -> str:
        return "length" if self.eos_at is None else "stop"


class SimServer:
    """One engine process's state: spec, engine, tier, metrics, faults."""

    def __init__(self, spec: EngineSpec) -> None:
        spec.check()
        self.spec = spec
        self.profile = spec.resolved_profile()
        self.tp = spec.resolved_tp()
        self.model = spec.served_model()
        self.tier: TierIndex | None = None
        if spec.external_tier:
            cap = self.profile.tier_capacity_tokens
            self.tier = (SqliteTierIndex(spec.tier_dir, cap, reset=spec.tier_reset)
                         if spec.tier_dir is not None else MemoryTierIndex(cap))
        salt = f"{self.model}|tp{self.tp}"
        rates = Rates.of(self.profile, self.tp)
        if spec.tier_read_gbps is not None:
            rates = replace(rates, read_bps=spec.tier_read_gbps * GB * self.profile.scale(self.tp))
        self.engine = Engine(
            rates, tier=self.tier, speed=spec.speed,
            seed=spec.seed * 1000 + spec.instance, salt=salt,
            stream_interval=spec.stream_interval, memory_tier=spec.memory_tier,
            faults=spec.faults)
        self._cache = SqliteDigestStore(spec.cache_dir) if spec.cache_dir else None
        self.digests = PromptDigests(self.profile.block_size, salt, self._cache)
        self.faults = FaultDraws(spec.faults, spec.seed * 1000 + spec.instance)
        self.eos = EosDraws(spec.eos_rate, spec.seed * 1000 + spec.instance)
        self.ident = Identity(self.model, self.profile.name, self.tp, spec.instance,
                              spec.external_tier, spec.speed, self.profile.max_model_len,
                              spec.tier_counters)
        self.registry = build_registry(self.engine, self.ident)
        self.accepted = 0
        self.ready_at = 0.0
        self.started = int(time.time())

    async def start(self) -> None:
        tokenizer.encode("warm up")  # build the vocabulary before the first request
        tokenizer.decode(list(tokenizer.output_ids()))
        await self.engine.start()
        loop = asyncio.get_running_loop()
        self.ready_at = loop.time() + self.spec.faults.slow_start_s / self.spec.speed

    def ready(self) -> bool:
        return asyncio.get_running_loop().time() >= self.ready_at

    def diskstats(self) -> list[DiskstatsAccountant]:
        return accountants(self.spec, self.engine.io_snapshot, asyncio.get_running_loop().time)

    async def housekeep(self, stop: asyncio.Event) -> None:
        """Write the tier's batched LRU touches every half second."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
            if self.tier is not None:
                self.tier.flush()

    def close(self) -> None:
        if self.tier is not None:
            self.tier.close()
        if self._cache is not None:
            self._cache.close()

    # -- handlers ----------------------------------------------------------------------
    async def models(self, request: web.Request) -> web.Response:
        s = self.spec
        card = {
            "id": self.model, "object": "model", "created": self.started,
            "owned_by": "gate-sim", "root": self.model, "parent": None,
            "max_model_len": self.profile.max_model_len, "permission": [],
            "gate_sim": {"profile": self.profile.name, "tp": self.tp, "instance": s.instance,
                         "external_tier": s.external_tier, "speed": s.speed,
                         "simulated": True, "seed": s.seed,
                         "stream_interval": s.stream_interval,
                         # the tier's modelled read bandwidth, one reader alone (GB/s):
                         # what a report compares the planner and the storage rates with
                         "tier_read_gbps": round(self.engine.rates.read_bps / GB, 4),
                         "config": s.reported_config()},
        }
        return _json({"object": "list", "data": [card]})

    async def version(self, request: web.Request) -> web.Response:
        return _json({"version": f"gate-sim {__version__}"})

    async def health(self, request: web.Request) -> web.Response:
        if not self.ready():
            return _json(shapes.error_body("engine is starting", "ServiceUnavailable", 503),
                         status=503)
        return web.Response(status=200)

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=render(self.registry), headers={"Content-Type": CONTENT_TYPE})

    async def tokenize(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            if "messages" in body:
                text = tokenizer.chat_prompt(_messages(body))
            else:
                raw = body.get("prompt")
                if not isinstance(raw, str):
                    raise _BadRequest("`prompt` must be a string")
                text = raw
        except _BadRequest as exc:
            return _error(exc)
        ids = tokenizer.encode(text)
        strs = [tokenizer.piece(t) for t in ids] if body.get("return_token_strs") else None
        return _json({"count": len(ids), "max_model_len": self.profile.max_model_len,
                      "tokens": ids, "token_strs": strs})

    async def detokenize(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            ids = body.get("tokens")
            if not isinstance(ids, list) or not all(isinstance(t, int) for t in ids):
                raise _BadRequest("`tokens` must be a list of token ids")
            text = tokenizer.decode(ids)
        except _BadRequest as exc:
            return _error(exc)
        except ValueError as exc:
            return _error(_BadRequest(str(exc)))
        return _json({"prompt": text})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def _generate(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        if not self.ready():
            return _error(_BadRequest("engine is starting", 503, "ServiceUnavailable"))
        crash = self.spec.faults.crash_after
        if crash is not None and self.accepted >= crash:
            sys.stderr.write(f"gate sim: simulated crash after {crash} requests\n")
            sys.stderr.flush()
            os._exit(70)
        self.accepted += 1
        arrival = self.engine.arrive()
        try:
            return await self._serve(request, chat, arrival)
        finally:
            self.engine.depart(arrival)

    async def _serve(self, request: web.Request, chat: bool,
                     arrival: Arrival) -> web.StreamResponse:
        try:
            job = self._parse(await _body(request), chat=chat)
        except _BadRequest as exc:
            return _error(exc)
        job.eos_at = self.eos.draw(job.max_tokens, min_tokens=job.min_tokens,
                                   ignore_eos=job.ignore_eos)
        fault = self.faults.draw(job.n_out, stream=job.stream)
        if fault.kind == "http_500":
            return _error(_BadRequest("simulated engine error", 500, "InternalServerError"))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        trace = Trace()
        gen = self.engine.generate(job.prompt, job.max_tokens, trace, arrival=arrival,
                                   stall_at=fault.stall_at, stall_s=self.spec.faults.stall_s,
                                   eos_at=job.eos_at)
        try:
            if not job.stream:
                parts: list[int] = []
                async for ids in gen:
                    parts.extend(ids)
                make = shapes.chat_body if chat else shapes.completion_body
                text = tokenizer.decode(parts if job.eos_at is None else parts[:-1])
                return _json(make(request_id=rid, created=created, model=self.model,
                                  text=text, prompt=len(job.prompt), completion=len(parts),
                                  finish=job.finish))
            return await self._stream(request, job, gen, trace, fault, rid, created)
        finally:
            await gen.aclose()

    async def _stream(self, request: web.Request, job: _Job, gen: AsyncGenerator[list[int], None],
                      trace: Trace, fault: Fault, rid: str, created: int) -> web.StreamResponse:
        shape = shapes.StreamShape(chat=job.chat, request_id=rid, created=created,
                                   model=self.model)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        first = True
        n_out, eos = job.n_out, job.eos_at is not None
        async for ids in gen:
            final = trace.output_tokens >= n_out
            # the EOS token counts in usage; its text is empty (skip_special_tokens)
            text = tokenizer.decode(ids[:-1] if final and eos else ids)
            data = shape.token(text, job.finish if final else None)
            if first and job.chat:
                data = shape.role() + data
            first = False
            await resp.write(data)
            if fault.kind == "cut" and trace.output_tokens >= fault.cut_after:
                if request.transport is not None:
                    request.transport.abort()
                return resp
        tail = shapes.DONE
        if job.include_usage:
            tail = shape.usage(len(job.prompt), trace.output_tokens) + tail
        await resp.write(tail)
        await resp.write_eof()
        return resp

    def _parse(self, body: dict[str, Any], *, chat: bool) -> _Job:
        # vLLM validates the body's types (its pydantic request model) before anything else
        ignore_eos = _field(body, "ignore_eos", bool, False)
        min_tokens = _field(body, "min_tokens", int, 0)
        model = body.get("model")
        if model is not None and model != self.model:
            raise _BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")
        if chat:
            prompt = self.digests.of_text(tokenizer.chat_prompt(_messages(body)))
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        else:
            raw = _prompt(body.get("prompt"))
            prompt = (self.digests.of_text(raw) if isinstance(raw, str)
                      else self.digests.of_ids(raw))
            max_tokens = body.get("max_tokens")
        limit = self.profile.max_model_len
        tokens = prompt.n_tokens
        if not tokens:
            raise _BadRequest("The prompt is empty.")
        if max_tokens is None:
            max_tokens = limit - tokens
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _BadRequest("max_tokens must be an integer >= 1")
        if tokens + max_tokens > limit:
            raise _BadRequest(
                f"This model's maximum context length is {limit} tokens. However, you "
                f"requested {tokens + max_tokens} tokens ({tokens} in the "
                f"messages, {max_tokens} in the completion). Please reduce the length of "
                "the messages or completion.")
        # vLLM's SamplingParams checks, with max_tokens resolved as above
        if min_tokens < 0:
            raise _BadRequest(f"min_tokens must be greater than or equal to 0, got {min_tokens}.")
        if min_tokens > max_tokens:
            raise _BadRequest(f"min_tokens must be less than or equal to "
                              f"max_tokens={max_tokens}, got {min_tokens}.")
        opts = body.get("stream_options") or {}
        return _Job(prompt, max_tokens, bool(body.get("stream", False)),
                    bool(isinstance(opts, dict) and opts.get("include_usage")), chat,
                    ignore_eos=ignore_eos, min_tokens=min_tokens)


def _field(body: dict[str, Any], key: str, kind: type[_T], default: _T) -> _T:
    """An optional bool / int field of the request, validated as vLLM's pydantic request
    model does (lax mode: "true" and 1 are a bool, "5" and 5.0 an int; null, 1.5, "maybe"
    are a 400). JSON's own true / 5 take the fast path; anything else asks pydantic itself,
    imported on first use (~0.1 s, once) so an engine's start does not pay for it."""
    if key not in body:
        return default
    value = body[key]
    if type(value) is kind:
        return value
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        err = {**exc.errors(include_url=False)[0], "loc": ("body", key)}
        err.pop("ctx", None)
        # vLLM's handler: str(RequestValidationError), then its errors() (api_server.py)
        raise _BadRequest(f"1 validation error:\n  {err}\n {[err]}",
                          err_type="Bad Request") from None


def _prompt(prompt: object) -> str | list[int]:
    """One prompt: text, or token ids (a one-element batch of either is accepted)."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        limit = tokenizer.vocab_size()
        if any(not 0 <= t < limit for t in prompt):
            raise _BadRequest(f"token ids must be in 0..{limit - 1}")
        return list(prompt)
    raise _BadRequest("`prompt` must be a string or a list of token ids (one prompt)")


def _messages(body: dict[str, Any]) -> list[dict[str, object]]:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):
        raise _BadRequest("`messages` must be a list of objects")
    return msgs


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json(loads=_loads)
    except ValueError as exc:
        raise _BadRequest(f"the body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise _BadRequest("the body must be a JSON object")
    return body


def _loads(text: str) -> Any:
    import json

    return json.loads(text)


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(text=shapes.dumps(obj), status=status, content_type=JSON)


def _error(exc: _BadRequest) -> web.Response:
    return _json(shapes.error_body(str(exc), exc.err_type, exc.code), status=exc.code)


def build_app(server: SimServer) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/models", server.models)
    app.router.add_get("/version", server.version)
    app.router.add_get("/health", server.health)
    app.router.add_get("/metrics", server.metrics)
    app.router.add_post("/tokenize", server.tokenize)
    app.router.add_post("/detokenize", server.detokenize)
    app.router.add_post("/v1/completions", server.completions)
    app.router.add_post("/v1/chat/completions", server.chat)
    return app

