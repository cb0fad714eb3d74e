"""One streaming request against an OpenAI-compatible server, timed as vLLM times it.

TTFT is the arrival of the first SSE chunk that has `choices` (even with empty text, as
vllm/benchmarks/lib/endpoint_request_func.py does); the first chunk with non-empty text is
kept beside it. Every choice chunk's arrival is kept. Each network read is stamped once,
when it arrives, so parsing never delays a timestamp. A failure is a record with its kind.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

import aiohttp

from harness.loadgen.chunks import ChunkReader, fail
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


def new_session(timeout: float, concurrency: int) -> aiohttp.ClientSession:
    """One pooled session for the phase: keep-alive, no cookie jar, one timeout per request."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300,
                                     keepalive_timeout=60, force_close=False)
    return aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
        timeout=aiohttp.ClientTimeout(total=timeout, connect=min(timeout, 60.0)),
        read_bufsize=1 << 18, connector_owner=True,
    )


async def stream(session: aiohttp.ClientSession, url: str, body: bytes,
                 headers: Mapping[str, str], rec: RequestRecord, t0: float, chat: bool,
                 prompt_tokens: int | None) -> float:
    """Send one request and fill `rec` in place (times relative to `t0`, the phase start).
    Returns when (monotonic) its last network read arrived: the moment its slot freed."""
    monotonic = time.monotonic
    sent = monotonic()
    rec.sent = sent - t0
    reader = ChunkReader(rec, chat, sent)
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            reader.head(resp.status)
            if resp.status != 200:
                raw = await resp.read()
                fail(rec, f"http_{resp.status}",
                     f"HTTP {resp.status} {resp.reason or ''}: "
                     f"{raw[:2000].decode('utf-8', 'replace')}")
                return monotonic()
            feed = reader.feed
            async for data in resp.content.iter_any():
                if not feed(monotonic(), data):
                    return monotonic()
    except TimeoutError:
        fail(rec, "timeout", f"no complete response within the request timeout "
             f"({len(reader.chunks)} chunks received)")
        return monotonic()
    except aiohttp.ClientConnectorError as exc:
        fail(rec, "connect", f"{type(exc).__name__}: {exc}")
        return monotonic()
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
            aiohttp.ClientOSError) as exc:
        kind = "cut" if rec.status is not None else "disconnect"
        fail(rec, kind, f"{type(exc).__name__}: {exc} after {len(reader.chunks)} chunks")
        return monotonic()
    except aiohttp.ClientError as exc:
        fail(rec, "client_error", f"{type(exc).__name__}: {exc}")
        return monotonic()
    finally:
        reader.close(prompt_tokens)
    reader.end()  # after close(): no_text reads the usage's token count
    return reader.last
