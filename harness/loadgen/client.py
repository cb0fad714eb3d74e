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
from collections.abc import Callable, Mapping
from typing import Any, Literal

import aiohttp

from harness.loadgen.records import RequestRecord, RequestSpec
from harness.loadgen.sse import SSEDecoder

Api = Literal["completions", "chat"]
# The C scanner behind json.loads, without its wrapper: half the cost per chunk.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SCANSTR: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_ERROR_CHARS = 500


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


def template(s: str, piece: str, chat: bool) -> tuple[str, str] | None:
    """(prefix, tail) of a token chunk that json.loads accepted: everything before and
    after its text's string literal. A later event that starts with exactly `prefix`, ends
    with exactly `tail` and has one valid JSON string literal between them is the same
    JSON object with another text, so it needs no full parse (most of a stream's chunks
    differ from each other only there). None when the text's position is ambiguous."""
    key = '"content":' if chat else '"text":'
    i = s.find(key)
    if i < 0 or s.find(key, i + 1) >= 0:
        return None
    v = i + len(key)
    while v < len(s) and s[v] in " \t\r\n":
        v += 1
    if v >= len(s) or s[v] != '"':
        return None
    try:
        val, end = _SCANSTR(s, v + 1)
    except ValueError:
        return None
    if val != piece:
        return None
    return s[: v + 1], s[end:]


def _snip(text: str) -> str:
    text = " ".join(text.split())
    return text[:_ERROR_CHARS]


def _fail(rec: RequestRecord, kind: str, message: str) -> None:
    rec.error_kind = kind
    rec.error = _snip(message)


async def stream(session: aiohttp.ClientSession, url: str, body: bytes,
                 headers: Mapping[str, str], rec: RequestRecord, t0: float, chat: bool,
                 prompt_tokens: int | None) -> float:
    """Send one request and fill `rec` in place (times relative to `t0`, the phase start).
    Returns when (monotonic) its last network read arrived: the moment its slot freed."""
    monotonic = time.monotonic
    chunks = rec.chunk_times
    sent = last = monotonic()
    rec.sent = sent - t0
    usage: Any = None
    done = finished = False
    text_chunks = 0
    prefix: str | None = None  # see template()
    tail = ""
    plen = tlen = 0
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            rec.status = resp.status
            if resp.status != 200:
                raw = await resp.read()
                _fail(rec, f"http_{resp.status}",
                      f"HTTP {resp.status} {resp.reason or ''}: "
                      f"{raw[:2000].decode('utf-8', 'replace')}")
                return monotonic()
            feed = SSEDecoder().feed
            async for data in resp.content.iter_any():
                last = monotonic()
                t = last - sent
                for ev in feed(data):
                    if ev == b"[DONE]":
                        done = True
                        continue
                    if not ev:
                        continue
                    try:
                        s = ev.decode()
                        if prefix is not None and s.startswith(prefix) and s.endswith(tail):
                            txt, end = _SCANSTR(s, plen)
                            if end == len(s) - tlen:  # same chunk, another text
                                chunks.append(t)
                                if txt:
                                    text_chunks += 1
                                    if rec.ttft_text is None:
                                        rec.ttft_text = t
                                continue
                        obj, end = _SCAN(s, 0)
                        if end != len(s):
                            obj = json.loads(s)  # trailing whitespace is legal JSON
                        choices = obj.get("choices")
                        if choices:
                            chunks.append(t)
                            c0 = choices[0]
                            if chat:
                                delta = c0.get("delta")
                                piece = delta.get("content") if delta else None
                            else:
                                piece = c0.get("text")
                            if piece:
                                text_chunks += 1
                                if rec.ttft_text is None:
                                    rec.ttft_text = t
                            reason = c0.get("finish_reason")
                            if reason:
                                finished = True
                                rec.finish_reason = str(reason)
                            elif (prefix is None and isinstance(piece, str) and piece
                                  and "usage" not in obj and len(choices) == 1):
                                learned = template(s, piece, chat)
                                if learned is not None:
                                    prefix, tail = learned
                                    plen, tlen = len(prefix), len(tail)
                        u = obj.get("usage")
                        if u:
                            usage = u
                        elif not choices and obj.get("error"):
                            _fail(rec, "stream_error", f"server error in stream: {s}")
                            return monotonic()
                    except (ValueError, StopIteration, AttributeError, TypeError, KeyError,
                            IndexError, UnicodeDecodeError):
                        _fail(rec, "bad_chunk", "not an OpenAI stream chunk: "
                              + ev[:200].decode("utf-8", "replace"))
                        return monotonic()
    except TimeoutError:
        _fail(rec, "timeout", f"no complete response within the request timeout "
              f"({len(chunks)} chunks received)")
        return monotonic()
    except aiohttp.ClientConnectorError as exc:
        _fail(rec, "connect", f"{type(exc).__name__}: {exc}")
        return monotonic()
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
            aiohttp.ClientOSError) as exc:
        kind = "cut" if rec.status is not None else "disconnect"
        _fail(rec, kind, f"{type(exc).__name__}: {exc} after {len(chunks)} chunks")
        return monotonic()
    except aiohttp.ClientError as exc:
        _fail(rec, "client_error", f"{type(exc).__name__}: {exc}")
        return monotonic()
    finally:
        if chunks:
            rec.ttft = chunks[0]
            rec.e2el = chunks[-1]  # vLLM: latency = last token chunk - start
        _count(rec, usage, text_chunks, prompt_tokens)
    if not chunks:
        _fail(rec, "no_choices", "the stream ended without a chunk that has `choices` "
              "(vLLM: 'Never received a valid chunk to calculate TTFT')")
    elif not (done or finished):
        _fail(rec, "cut", f"the stream ended without finish_reason or [DONE] "
              f"after {len(chunks)} chunks")
    elif text_chunks == 0 and not rec.output_tokens:
        _fail(rec, "no_text", "the response carried no generated text")
    return last


def _count(rec: RequestRecord, usage: Any, text_chunks: int, prompt_tokens: int | None) -> None:
    """Token counts from the server's usage; counted chunks (flagged) when it is absent."""
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        rec.output_tokens = usage["completion_tokens"]
        pt = usage.get("prompt_tokens")
        rec.prompt_tokens = pt if isinstance(pt, int) else prompt_tokens
        rec.usage_reported = True
    else:
        rec.output_tokens = text_chunks
        rec.prompt_tokens = prompt_tokens
        rec.usage_reported = False
