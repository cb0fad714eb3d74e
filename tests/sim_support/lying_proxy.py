"""A lying reverse proxy, for tests only: what a proxy in front of the accelerated arm
could do to make a STOP-LOSS look like a PASS.

It forwards every route unchanged (/health, /metrics, /v1/models, /version, /tokenize,
/detokenize, the generation routes, anything else), streams passed through event by event
as they arrive, except that on POST /v1/completions and /v1/chat/completions it
multiplies `usage.completion_tokens` by a factor (rounded half up; `total_tokens` follows)
and, if asked, rewrites every non-null `finish_reason`. /metrics is left alone: the
engine's own counters still tell the truth.

    python tests/sim_support/lying_proxy.py --upstream http://127.0.0.1:8001 --port 0 \\
        [--host 127.0.0.1] [--usage-factor 1.048] [--finish-reason stop]

prints its URL on stdout once it listens; SIGTERM or SIGINT stops it. From Python:
`build_app(...)` (an aiohttp app) or `with lying_proxy(upstream, ...) as url:` (a
subprocess).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

GENERATION_ROUTES = frozenset({"/v1/completions", "/v1/chat/completions"})
# hop-by-hop headers, and those aiohttp sets again for the body it sends; the engine is
# asked for no compression, so a body is what it means
_DROP = frozenset({"host", "connection", "keep-alive", "proxy-connection", "te", "trailer",
                   "transfer-encoding", "upgrade", "content-length", "accept-encoding"})
_SESSION = web.AppKey("session", aiohttp.ClientSession)


@dataclass(frozen=True)
class Lies:
    usage_factor: float = 1.0
    finish_reason: str | None = None

    def tokens(self, n: int) -> int:
        return int(n * self.usage_factor + 0.5)

    def rewrite(self, obj: Any) -> bool:
        """Rewrite one response object (a body or a stream chunk) in place; True if it
        changed."""
        if not isinstance(obj, dict):
            return False
        changed = False
        usage = obj.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            old = usage["completion_tokens"]
            new = self.tokens(old)
            if new != old:
                usage["completion_tokens"] = new
                if isinstance(usage.get("total_tokens"), int):
                    usage["total_tokens"] += new - old
                changed = True
        if self.finish_reason is not None:
            for choice in obj.get("choices") or []:
                if (isinstance(choice, dict) and choice.get("finish_reason") is not None
                        and choice["finish_reason"] != self.finish_reason):
                    choice["finish_reason"] = self.finish_reason
                    changed = True
        return changed

    def event(self, event: bytes) -> bytes:
        """One SSE event (without its blank-line terminator), rewritten if it is a JSON
        `data:` event that carries something to lie about; else the same bytes."""
        if not event.startswith(b"data: ") or event == b"data: [DONE]":
            return event
        try:
            obj = json.loads(event[6:])
        except ValueError:
            return event
        if not self.rewrite(obj):
            return event
        return b"data: " + _dumps(obj)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def build_app(upstream: str, lies: Lies) -> web.Application:
    upstream = upstream.rstrip("/")

    async def session_ctx(app: web.Application) -> Any:
        app[_SESSION] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False)
        yield
        await app[_SESSION].close()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        lie = request.method == "POST" and request.path in GENERATION_ROUTES
        session = request.app[_SESSION]
        try:
            async with session.request(request.method, upstream + request.path_qs,
                                       data=body or None, headers=headers) as up:
                out_headers = {k: v for k, v in up.headers.items() if k.lower() not in _DROP}
                plain = "content-encoding" not in up.headers
                if lie and plain and up.status == 200 \
                        and up.content_type == "text/event-stream":
                    return await _relay_stream(request, up, out_headers, lies)
                data = await up.read()
                if lie and plain and up.status == 200 and up.content_type == "application/json":
                    with contextlib.suppress(ValueError):
                        obj = json.loads(data)
                        if lies.rewrite(obj):
                            data = _dumps(obj)
                return web.Response(status=up.status, body=data, headers=out_headers)
        except aiohttp.ClientConnectionError as exc:
            error = {"message": f"upstream: {type(exc).__name__}: {exc}",
                     "type": "BadGateway", "param": None, "code": 502}
            return web.json_response({"error": error}, status=502)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.cleanup_ctx.append(session_ctx)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def _relay_stream(request: web.Request, up: aiohttp.ClientResponse,
                        headers: dict[str, str], lies: Lies) -> web.StreamResponse:
    resp = web.StreamResponse(status=up.status, headers=headers)
    await resp.prepare(request)
    buf = b""
    try:
        async for data in up.content.iter_any():
            buf += data
            if b"\n\n" not in buf:
                continue
            *events, buf = buf.split(b"\n\n")
            await resp.write(b"".join(lies.event(e) + b"\n\n" for e in events))
    except aiohttp.ClientPayloadError:
        # the engine cut the stream: cut ours too (no [DONE], as the client would see it)
        if buf:
            await resp.write(buf)
        if request.transport is not None:
            request.transport.abort()
        return resp
    except ConnectionResetError:
        return resp  # the client left: leaving the upstream request aborts it at the engine
    if buf:
        await resp.write(buf)
    await resp.write_eof()
    return resp


async def serve(upstream: str, lies: Lies, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(build_app(upstream, lies), access_log=None, handle_signals=False,
                           shutdown_timeout=1.0)
    await runner.setup()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    shown = f"[{host}]" if ":" in host else host
    sys.stdout.write(f"http://{shown}:{bound}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def lying_proxy(upstream: str, *, usage_factor: float = 1.0,
                finish_reason: str | None = None, port: int = 0,
                timeout: float = 20.0) -> Iterator[str]:
    """The proxy as a subprocess for the duration of the block; yields its URL."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--upstream", upstream,
            "--port", str(port), "--usage-factor", repr(usage_factor)]
    if finish_reason is not None:
        argv += ["--finish-reason", finish_reason]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = _first_line(proc, timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        raise TimeoutError(f"the lying proxy printed no URL within {timeout} s")
    line = proc.stdout.readline().strip()
    if not line:
        raise RuntimeError(f"the lying proxy exited with code {proc.wait()} before listening")
    return line


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the engine's base URL")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: any free port")
    ap.add_argument("--usage-factor", type=float, default=1.0,
                    help="multiply usage.completion_tokens by this (rounded)")
    ap.add_argument("--finish-reason", default=None,
                    help="replace every non-null finish_reason with this")
    args = ap.parse_args(argv)
    lies = Lies(args.usage_factor, args.finish_reason)
    asyncio.run(serve(args.upstream, lies, args.host, args.port))


if __name__ == "__main__":
    main()
