"""A small real OpenAI-compatible streaming server shaped like vLLM's, for tests and benchmarks.

It answers /v1/models, /version, /tokenize, /metrics (prometheus_client, vLLM family names),
/health, /v1/completions and /v1/chat/completions (SSE, `stream_options.include_usage`),
and injects faults on purpose: by arrival ordinal (`faults={3: "http_500"}`) or by a marker
in the prompt (`[[fault:cut]]`). It stamps each request's arrival and first written byte
on the shared monotonic clock (GET /_stamps) so a benchmark can see the client's overhead.

Run standalone:  python tests/loadgen_support/server.py --port 0 [--ttft 0.05 --itl 0.005]
(prints `READY http://127.0.0.1:PORT` once it listens).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

try:
    from loadgen_support.server_metrics import EngineMetrics
except ImportError:  # run as a script: python tests/loadgen_support/server.py
    from server_metrics import EngineMetrics  # type: ignore[no-redef]

FAULTS = (
    "http_400", "http_404", "http_500", "http_503", "cut", "bad_json", "empty", "no_choices",
    "no_usage", "no_done", "stream_error", "huge", "slow",
)
BLOCK = 16  # prefix-cache block, tokens
_MARKER = re.compile(r"\[\[fault:([a-z_0-9]+)\]\]")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[int]:
    """Words and punctuation; words longer than 7 characters cost two tokens (so a
    client must calibrate, not count words)."""
    ids: list[int] = []
    for tok in _TOKEN.findall(text):
        h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "little")
        ids.append(h % 50000)
        if len(tok) > 7:
            ids.append((h >> 7) % 50000)
    return ids


@dataclass
class ServerConfig:
    model: str = "test-model"
    max_model_len: int | None = 131072
    ttft: float = 0.0  # seconds from request to first chunk
    itl: float = 0.0  # seconds between token chunks
    tokens: int | None = None  # force this many output tokens (else max_tokens)
    token_text: str = " tok"
    faults: dict[int, str] = field(default_factory=dict)  # arrival ordinal -> fault
    openai: bool = True  # False: /v1/models answers HTML, like a random web server
    tokenizer: bool = True
    version: str | None = "0.0.0-test"
    extra_card: dict[str, Any] = field(default_factory=dict)
    external_tier: bool = False  # expose external prefix cache + lmcache families
    stamps: bool = False
    role_chunk: bool = True
    role_early: bool = False  # chat: send the role-only chunk before the TTFT delay


class StreamServer:
    """One server instance; `state` is per instance, never module-global."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self.metrics = EngineMetrics(self.config.model, self.config.external_tier)
        self.arrivals = 0
        self.stamps: dict[str, list[float]] = {}
        self.gpu_blocks: set[bytes] = set()
        self.ext_blocks: set[bytes] = set()
        self.bodies: list[dict[str, Any]] = []  # last requests, for tests that inspect them
        self.peers: set[Any] = set()  # client (host, port) per connection that asked
        self._tails: dict[tuple[bool, str, str | None], bytes] = {}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/version", self.version)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.prom)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/_stamps", self.get_stamps)
        app.router.add_post("/_restart", self.restart)
        return app

    # ---------------------------------------------------------------- info endpoints
    async def models(self, _req: web.Request) -> web.Response:
        if not self.config.openai:
            return web.Response(text="<html><body>It works!</body></html>",
                                content_type="text/html")
        card: dict[str, Any] = {"id": self.config.model, "object": "model",
                                "created": int(time.time()), "owned_by": "vllm",
                                "root": self.config.model, "parent": None}
        if self.config.max_model_len is not None:
            card["max_model_len"] = self.config.max_model_len
        card.update(self.config.extra_card)
        return web.json_response({"object": "list", "data": [card]})

    async def version(self, _req: web.Request) -> web.Response:
        if self.config.version is None:
            raise web.HTTPNotFound()
        return web.json_response({"version": self.config.version})

    async def health(self, _req: web.Request) -> web.Response:
        return web.Response(text="")

    async def prom(self, _req: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(),
                            content_type="text/plain", charset="utf-8")

    async def tokenize(self, req: web.Request) -> web.Response:
        if not self.config.tokenizer:
            raise web.HTTPNotFound()
        body = await req.json()
        text = body.get("prompt")
        if not isinstance(text, str):
            return web.json_response({"error": "prompt required"}, status=400)
        ids = tokenize(text)
        return web.json_response({"count": len(ids), "max_model_len": self.config.max_model_len,
                                  "tokens": ids})

    async def get_stamps(self, _req: web.Request) -> web.Response:
        return web.json_response(self.stamps)

    async def restart(self, _req: web.Request) -> web.Response:
        """A cold restart: the GPU prefix cache is lost, the external tier keeps its blocks."""
        self.gpu_blocks.clear()
        return web.json_response({"ok": True})

    # ---------------------------------------------------------------- generation
    async def completions(self, req: web.Request) -> web.StreamResponse:
        return await self._generate(req, chat=False)

    async def chat(self, req: web.Request) -> web.StreamResponse:
        return await self._generate(req, chat=True)

    def _fault(self, ordinal: int, prompt: str) -> str | None:
        marker = _MARKER.search(prompt[:4096])
        if marker:
            return marker.group(1)
        return self.config.faults.get(ordinal)

    def _cache(self, ids: list[int]) -> tuple[int, int]:
        """(gpu hit tokens, external hit tokens) for a prompt, then remember its blocks."""
        gpu = ext = 0
        h = hashlib.blake2b(digest_size=8)
        in_gpu = True
        n_blocks = len(ids) // BLOCK
        for b in range(n_blocks):
            h.update(str(ids[b * BLOCK:(b + 1) * BLOCK]).encode())
            key = h.digest()
            if in_gpu and key in self.gpu_blocks:
                gpu += BLOCK
            elif self.config.external_tier and key in self.ext_blocks:
                in_gpu = False
                ext += BLOCK
            else:
                in_gpu = False
            self.gpu_blocks.add(key)
            if self.config.external_tier:
                self.ext_blocks.add(key)
        return gpu, ext

    async def _generate(self, req: web.Request, *, chat: bool) -> web.StreamResponse:
        t_recv = time.monotonic()
        ordinal = self.arrivals
        self.arrivals += 1
        if req.transport is not None:
            self.peers.add(req.transport.get_extra_info("peername"))
        body = await req.json()
        if chat:
            msgs = body.get("messages") or []
            prompt = " ".join(str(m.get("content", "")) for m in msgs)
            max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        else:
            prompt = str(body.get("prompt", ""))
            max_tokens = int(body.get("max_tokens") or 16)
        if len(self.bodies) < 64:
            self.bodies.append({k: v for k, v in body.items() if k not in ("prompt", "messages")})
        if body.get("model") != self.config.model:
            return web.json_response(
                {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                 "type": "NotFoundError", "code": 404}, status=404)
        fault = self._fault(ordinal, prompt)
        if fault and fault.startswith("http_"):
            code = int(fault[5:])
            return web.json_response({"object": "error", "message": f"injected {fault}",
                                      "type": "InjectedError", "code": code}, status=code)
        ids = tokenize(prompt)
        n_prompt = len(ids)
        gpu_hit, ext_hit = self._cache(ids)
        m = self.metrics
        m.c_prompt.inc(n_prompt)
        m.c_q.inc(n_prompt)
        m.c_h.inc(gpu_hit)
        m.c_src["local_cache_hit"].inc(gpu_hit)
        m.c_src["external_kv_transfer"].inc(ext_hit)
        m.c_src["local_compute"].inc(n_prompt - gpu_hit - ext_hit)
        if m.external:
            m.eq.labels(**m.labels).inc(n_prompt - gpu_hit)
            m.eh.labels(**m.labels).inc(ext_hit)
            m.lm_req.labels(**m.lm_labels).inc(n_prompt)
            m.lm_hit.labels(**m.lm_labels).inc(ext_hit)
        n_out = self.config.tokens if self.config.tokens is not None else max_tokens
        if body.get("stream") is False:  # one JSON answer, as OpenAI servers give it
            return web.json_response({
                "id": f"cmpl-{ordinal}", "object": "text_completion", "model": self.config.model,
                "choices": [{"index": 0, "text": self.config.token_text * n_out,
                             "finish_reason": "length"}],
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out,
                          "total_tokens": n_prompt + n_out}})
        m.c_running.inc()
        try:
            return await self._stream(req, chat=chat, n_out=n_out, n_prompt=n_prompt,
                                      fault=fault, t_recv=t_recv)
        finally:
            m.c_running.dec()

    async def _stream(self, req: web.Request, *, chat: bool, n_out: int, n_prompt: int,
                      fault: str | None, t_recv: float) -> web.StreamResponse:
        cfg = self.config
        rid = req.headers.get("x-request-id", "")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        created = int(time.time())
        ident = ("chatcmpl-" if chat else "cmpl-") + (rid or str(self.arrivals))
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = (f'data: {{"id":"{ident}","object":"{obj}","created":{created},'
                f'"model":"{cfg.model}",').encode()

        def event(payload: str) -> bytes:
            return head + payload.encode() + b"\n\n"

        def choice(text: str, finish: str | None) -> bytes:
            key = (chat, text, finish)
            tail = self._tails.get(key)
            if tail is None:
                fin = json.dumps(finish)
                if chat:
                    delta = json.dumps({"content": text})
                    c = f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{fin}}}'
                else:
                    c = (f'{{"index":0,"text":{json.dumps(text)},"logprobs":null,'
                         f'"finish_reason":{fin},"stop_reason":null}}')
                tail = f'"choices":[{c}]}}\n\n'.encode()
                if len(text) < 64:
                    self._tails[key] = tail
            return head + tail

        first = True

        async def write(data: bytes) -> None:
            nonlocal first
            await resp.write(data)
            if first:
                first = False
                now = time.monotonic()
                if cfg.stamps and rid:
                    self.stamps[rid] = [t_recv, now]
                self.metrics.c_ttft.observe(now - t_recv)

        if fault == "no_choices":
            n_out = 0
        role = ('{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,'
                '"finish_reason":null}')
        send_role = chat and cfg.role_chunk and n_out > 0
        if send_role and cfg.role_early:
            await resp.prepare(req)
            await write(event(f'"choices":[{role}]}}'))
        delay = cfg.ttft + (0.5 if fault == "slow" else 0.0)
        if delay:  # headers go out with the first chunk, as an engine's do
            await asyncio.sleep(delay)
        if not resp.prepared:
            await resp.prepare(req)
        if send_role and not cfg.role_early:
            await write(event(f'"choices":[{role}]}}'))
        text = "" if fault == "empty" else cfg.token_text
        for i in range(n_out):
            if i and cfg.itl:
                await asyncio.sleep(cfg.itl)
            if fault == "cut" and i == n_out // 2:
                await write(choice(text, None)[:20])
                assert req.transport is not None
                req.transport.abort()
                return resp
            if fault == "bad_json" and i == 1:
                await write(b"data: this is not json\n\n")
                continue
            if fault == "stream_error" and i == 1:
                await write(b'data: {"error":{"message":"injected","type":"InternalError",'
                            b'"code":500}}\n\n')
                break
            piece = "x" * (1 << 20) if (fault == "huge" and i == 0) else text
            finish = "length" if (i == n_out - 1 and fault != "no_done") else None
            await write(choice(piece, finish))
        if fault == "no_done":
            await resp.write_eof()
            return resp
        gen = 0 if fault == "empty" else n_out
        self.metrics.c_gen.inc(gen)
        self.metrics.c_success.inc()
        if fault != "no_usage":
            usage = {"prompt_tokens": n_prompt, "total_tokens": n_prompt + gen,
                     "completion_tokens": gen}
            await write(event(f'"choices":[],"usage":{json.dumps(usage)}}}'))
        await write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_server(config: ServerConfig | None = None) -> Iterator[tuple[str, StreamServer]]:
    """Serve on 127.0.0.1 from a background thread; yields (base URL, server)."""
    server = StreamServer(config)
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        holder["loop"] = loop
        runner = web.AppRunner(server.app(), access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        holder["port"] = sock.getsockname()[1]
        holder["runner"] = runner
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}", server
    finally:
        loop = holder["loop"]
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--model", default="test-model")
    ap.add_argument("--ttft", type=float, default=0.0)
    ap.add_argument("--itl", type=float, default=0.0)
    ap.add_argument("--tokens", type=int, default=None)
    ap.add_argument("--stamps", action="store_true")
    ap.add_argument("--external-tier", action="store_true")
    ap.add_argument("--fault", action="append", default=[], help="ORDINAL=KIND")
    args = ap.parse_args()
    faults = {int(k): v for k, v in (f.split("=", 1) for f in args.fault)}
    cfg = ServerConfig(model=args.model, ttft=args.ttft, itl=args.itl, tokens=args.tokens,
                       stamps=args.stamps, external_tier=args.external_tier, faults=faults)
    port = args.port or free_port()

    async def serve() -> None:
        runner = web.AppRunner(StreamServer(cfg).app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        print(f"READY http://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:
        factory = asyncio.new_event_loop
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=factory) as r:
        r.run(serve())


if __name__ == "__main__":
    main()
