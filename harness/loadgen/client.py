"""One streaming request against an OpenAI-compatible server, timed as vLLM times it.

TTFT is the arrival of the first SSE chunk that has `choices` (even with empty text, as
vllm/benchmarks/lib/endpoint_request_func.py does); the first chunk with non-empty text is
kept beside it. Every choice chunk's arrival is kept. Each network read is stamped once,
when it arrives, so parsing never delays a timestamp. A failure is a record with its kind.

http:// URLs go through gate's own HTTP/1.1 client (http1_pool.py: the hot path, for its
cost per request), https:// through aiohttp; both hand their reads to one parser
(chunks.py) and end as an Outcome, so a record does not depend on which carried it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

import aiohttp

from harness.loadgen import http1
from harness.loadgen.chunks import ChunkReader, fail
from harness.loadgen.http1_pool import Outcome, Pool
from harness.loadgen.records import RequestRecord, RequestSpec

Api = Literal["completions", "chat"]


def route(api: Api) -> str:
    return "/v1/chat/completions" if api == "chat" else "/v1/completions"


def build_body(spec: RequestSpec, model: str, api: Api,
               extra: Mapping[str, Any] | None = None) -> bytes:
    """The request JSON, encoded once before the phase starts (never on the hot path)."""
    body: dict[str, Any] = {"model": model, "stream": True,
                            "stream_options": {"include_usage": True}}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": spec.prompt}]
        body["max_completion_tokens"] = spec.max_tokens
        body["max_tokens"] = spec.max_tokens  # servers that predate max_completion_tokens
    else:
        body["prompt"] = spec.prompt
        body["max_tokens"] = spec.max_tokens
    if extra:
        body.update(extra)
    return json.dumps(body, ensure_ascii=False).encode()


def request_id() -> str:
    """A request's X-Request-ID: a random UUID, the one form every engine takes.

    vLLM uses the header as its request id (in logs and, with
    --enable-request-id-headers, echoed back) and accepts any string; llama-cpp-python's
    server validates it as a UUID and answers HTTP 400 with an empty body otherwise
    (docs/metrics.md "Request shape")."""
    return str(uuid.uuid4())


class RequestIds:
    """A phase's X-Request-IDs: UUIDs (version 4 form, so llama-cpp-python takes them,
    see request_id) whose first 20 hex digits come from one uuid4 per phase (74 random
    bits) and whose last 12 count its requests: unique within the phase, and across
    phases as near as uuid4 is. Why not uuid4() per request: it reads os.urandom each
    time (~2.5 us, about 1 % of the client's CPU per request at saturation,
    benchmarks/loadgen.py)."""

    __slots__ = ("_n", "_prefix")

    def __init__(self) -> None:
        self._prefix = str(uuid.uuid4())[:24]  # 8-4-4-4- with the version and variant
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n & 0xFFFFFFFFFFFF:012x}"


def base_headers(tag: str = "gate") -> dict[str, str]:
    """Headers every request shares: only standard ones. The phase's `tag` (e.g. the run,
    `gate-r12`) rides in the User-Agent, so a server's access log shows whose load it is."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream",
               "User-Agent": f"gate-loadgen ({tag})"}
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


class Session:
    """A phase's HTTP clients: gate's own keep-alive HTTP/1.1 pool for http:// URLs (the
    hot path, harness/loadgen/http1_pool.py) and one aiohttp session, made when first
    needed, for https:// and whatever else the pool does not speak (raw=False: every URL)."""

    def __init__(self, timeout: float, *, raw: bool = True) -> None:
        self.timeout = timeout
        self.raw = raw
        self.pool = Pool(timeout)
        self._targets: dict[str, http1.Target | None] = {}
        self._web: aiohttp.ClientSession | None = None

    def target(self, url: str) -> http1.Target | None:
        """Where the pool sends `url`; None: aiohttp carries it."""
        try:
            return self._targets[url]
        except KeyError:
            to = http1.target(url) if self.raw else None
            self._targets[url] = to
            return to

    def client_name(self, url: str) -> str:
        """Which client carries `url`, for a phase's notes."""
        return "gate-http1" if self.target(url) is not None else "aiohttp"

    def web(self) -> aiohttp.ClientSession:
        """The aiohttp session: keep-alive, no cookie jar, one timeout per request."""
        if self._web is None:
            timeout = self.timeout
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300,
                                             keepalive_timeout=60, force_close=False)
            self._web = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
                timeout=aiohttp.ClientTimeout(total=timeout, connect=min(timeout, 60.0)),
                read_bufsize=1 << 18, connector_owner=True)
        return self._web

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.pool.close()
        if self._web is not None:
            await self._web.close()
            self._web = None


def new_session(timeout: float, concurrency: int) -> Session:
    """One pooled Session for a phase: connections open as the first `concurrency`
    requests go out, then stay (the pool holds one per request in flight)."""
    del concurrency
    return Session(timeout)


async def stream(session: Session, url: str, body: bytes, headers: Mapping[str, str],
                 rec: RequestRecord, t0: float, chat: bool, prompt_tokens: int | None,
                 request_id: str | None = None) -> float:
    """Send one request and fill `rec` in place (times relative to `t0`, the phase start).
    Returns when (monotonic) its last network read arrived: the moment its slot freed.
    `request_id`: the X-Request-ID, sent after `headers` (a phase's shared dict, which
    then carries none); None when `headers` has what the request needs."""
    sent = time.monotonic()
    rec.sent = sent - t0
    reader = ChunkReader(rec, chat, sent)
    to = session.target(url)
    try:
        if to is None:
            if request_id is not None:
                headers = {**headers, "X-Request-ID": request_id}
            out = await _via_aiohttp(session.web(), url, body, headers, reader)
        else:
            out = await session.pool.send(to, headers, body, reader, request_id)
    finally:
        reader.close(prompt_tokens)
    if out.stopped:  # the reader failed the stream itself
        return out.last
    n = len(reader.chunks)
    if out.kind == "timeout":
        fail(rec, "timeout", f"no complete response within the request timeout "
             f"({n} chunks received)")
    elif out.kind in ("cut", "disconnect"):
        fail(rec, out.kind, f"{out.detail} after {n} chunks")
    elif out.kind is not None:
        fail(rec, out.kind, out.detail)
    elif out.status != 200:
        fail(rec, f"http_{out.status}", f"HTTP {out.status} {out.reason}: "
             f"{out.body[:2000].decode('utf-8', 'replace')}")
    else:
        reader.end()  # after close(): no_text reads the usage's token count
    return out.last


async def _via_aiohttp(session: aiohttp.ClientSession, url: str, body: bytes,
                       headers: Mapping[str, str], reader: ChunkReader) -> Outcome:
    """One request through aiohttp, ended as the pool's are; each read is stamped when
    the task reading it wakes."""
    monotonic = time.monotonic
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            reader.head(resp.status)
            if resp.status != 200:
                raw = await resp.read()
                return Outcome(monotonic(), resp.status, resp.reason or "", raw)
            feed = reader.feed
            async for data in resp.content.iter_any():
                if not feed(monotonic(), data):
                    return Outcome(monotonic(), 200, stopped=True)
    except TimeoutError:
        return Outcome(monotonic(), kind="timeout")
    except aiohttp.ClientConnectorError as exc:
        return Outcome(monotonic(), kind="connect", detail=f"{type(exc).__name__}: {exc}")
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
            aiohttp.ClientOSError) as exc:
        kind = "cut" if reader.rec.status is not None else "disconnect"
        return Outcome(monotonic(), kind=kind, detail=f"{type(exc).__name__}: {exc}")
    except aiohttp.ClientError as exc:
        return Outcome(monotonic(), kind="client_error",
                       detail=f"{type(exc).__name__}: {exc}")
    return Outcome(reader.last, 200)
