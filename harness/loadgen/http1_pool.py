"""A phase's keep-alive HTTP/1.1 connections, for streamed POSTs (the hot path).

One asyncio.Protocol per connection carries one request at a time: each network read is
stamped first thing in data_received and handed, de-chunked, to the request's sink there
and then (no stream buffer, no task wake-up per read, no timer per request: where
aiohttp's per-request cost went). A connection goes back to the pool when its response
ended and the server keeps it; otherwise it is closed and the next request opens another.
An idle connection stays until the server closes it. Every way a request can end is an
Outcome, never an exception: a refused or failed connect (`connect`), the server closing
before the status line (`disconnect`) or after it (`cut`), the per-request total timeout
(`timeout`), a malformed head or a request that cannot be written (`client_error`). Like
aiohttp, a POST is never sent twice: not even when a kept-alive connection turns out
closed under it (that is a `disconnect`). Plain http only; https goes elsewhere.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from harness.errors import ParseError
from harness.loadgen import compat
from harness.loadgen.http1 import (
    ResponseParser,
    Target,
    head_start,
    request_head,
    request_head_with_id,
)

CONNECT_CAP = 60.0  # s: a connect waits at most this (within the request's timeout)
ERROR_BODY = 64 * 1024  # bytes of a non-200 body kept; the rest is read and dropped
_SMALL = 64 * 1024  # request bodies up to this go out in one write with the head
_monotonic = time.monotonic  # (each read is stamped with it first thing)


class Sink(Protocol):
    """Where a 200 answer's body goes: the shared SSE / record parser."""

    def head(self, status: int) -> None: ...

    def feed(self, now: float, data: bytes) -> bool:
        """Take one read's body bytes, stamped `now`; False stops the request."""
        ...

    def take(self, now: float, data: bytes) -> int:
        """Whole chunks off the start of a 200's body still in chunked coding (the parser
        between chunks), stamped `now`, that the sink records itself: the bytes taken
        (0: none, feed them), or -1 when one of them failed the stream (as feed's
        False)."""
        ...


@dataclass(**compat.SLOTS)
class Outcome:
    """How one request ended on the wire. `last`: monotonic time of its last read (or
    of its failure); `kind` None when the response ended as HTTP says it should."""

    last: float
    status: int | None = None
    reason: str = ""
    body: bytes = b""  # a non-200 answer's body, up to ERROR_BODY bytes
    kind: str | None = None  # connect, disconnect, cut, timeout, client_error
    detail: str = ""
    stopped: bool = False  # the sink stopped it (a failure it recorded itself)


class _Conn(asyncio.Protocol):
    """One connection; `fut` is set while it carries a request.

    Its timer is armed once and re-armed only when it fires early: a request moves the
    deadline forward (one float), so the hot path makes and cancels no timer."""

    __slots__ = ("body", "closed", "deadline", "fut", "loop", "parser", "sink", "status",
                 "take", "timer", "transport")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.parser = ResponseParser()
        self.sink: Sink | None = None
        self.fut: asyncio.Future[Outcome] | None = None
        self.deadline = 0.0  # monotonic: the request in flight times out then
        self.timer: asyncio.TimerHandle | None = None
        self.status = 0  # the request's status once its head was read
        # the sink's take while a 200's chunked body is between chunks (else None)
        self.take: Callable[[float, bytes], int] | None = None
        self.body = bytearray()  # a non-200 answer's body

    def usable(self) -> bool:
        return not self.closed and self.transport is not None \
            and not self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def start(self, head: bytes, body: bytes, sink: Sink, deadline: float
              ) -> asyncio.Future[Outcome]:
        """Send one request; the future ends with its Outcome."""
        fut: asyncio.Future[Outcome] = self.loop.create_future()
        if not self.usable() or self.transport is None:
            fut.set_result(Outcome(time.monotonic(), kind="disconnect",
                                   detail="the connection closed before the request"))
            return fut
        self.fut, self.sink, self.status, self.take = fut, sink, 0, None
        self.parser = ResponseParser(self.parser)  # same server: a head it knows
        self.body = bytearray()
        self.deadline = deadline
        if self.timer is None:
            self.timer = self.loop.call_later(max(deadline - time.monotonic(), 0.0),
                                              self._check_deadline)
        if len(body) <= _SMALL:
            self.transport.write(head + body)
        else:
            self.transport.writelines((head, body))
        return fut

    def data_received(self, data: bytes) -> None:
        now = _monotonic()
        take = self.take
        if take is not None:  # the hot path: whole token chunks, recorded by the sink
            taken = take(now, data)
            if taken == len(data):
                return  # (a taken chunk never ends the body: not done)
            if taken:
                if taken < 0:  # the sink failed the stream (it said why)
                    self._end(now, None, "", stopped=True)
                    return
                data = data[taken:]
        sink = self.sink
        if sink is None:  # bytes while idle: nothing asked for them
            self._close()
            return
        p = self.parser
        self.take = None
        try:
            if not p.status:  # the head, alone: the body after it may be taken below
                data = p.feed_head(data)
                if not p.status:
                    return  # the head has not ended yet
                self.status = p.status
                sink.head(p.status)
                if p.status == 200 and data and p.between_chunks:
                    taken = sink.take(now, data)
                    if taken < 0:
                        self._end(now, None, "", stopped=True)
                        return
                    data = data[taken:] if taken else data
            body = p.feed(data) if data else b""
        except ParseError as exc:  # after a status line (in this read or before): cut
            if p.status and not self.status:
                self.status = p.status
                sink.head(p.status)
            self._end(now, "cut" if self.status else "client_error",
                      f"bad HTTP response: {exc.message}")
            return
        if self.status != 200:  # an error answer: its body kept, up to ERROR_BODY
            if len(self.body) < ERROR_BODY:
                self.body += body[:ERROR_BODY - len(self.body)]
            if p.done:
                self._end(now, None, "", reuse=p.keep_alive)
            return
        if body and not sink.feed(now, body):
            self._end(now, None, "", stopped=True)
        elif p.done:
            self._end(now, None, "", reuse=p.keep_alive)
        elif p.between_chunks:  # the next read's whole chunks go to the sink first
            self.take = sink.take

    def eof_received(self) -> bool | None:
        self.closed = True  # connection_lost follows and ends a request in flight
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.sink is None:
            self._close()
            return
        now = _monotonic()
        if exc is not None:
            detail = f"{type(exc).__name__}: {exc}"
        else:
            try:
                self.parser.eof()
            except ParseError as err:
                detail = err.message
            else:  # a body delimited by the close
                self._end(now, None, "")
                return
        self._end(now, "cut" if self.status else "disconnect", detail)

    def _check_deadline(self) -> None:
        self.timer = None
        if self.sink is None or self.closed:
            return  # idle: the next request arms it again
        left = self.deadline - time.monotonic()
        if left > 0:
            self.timer = self.loop.call_later(left, self._check_deadline)
        else:
            self._end(time.monotonic(), "timeout", "")

    def _end(self, now: float, kind: str | None, detail: str, *, reuse: bool = False,
             stopped: bool = False) -> None:
        fut, self.fut, self.sink, self.take = self.fut, None, None, None
        if not reuse:
            self._close()
        if fut is not None and not fut.done():
            p = self.parser
            fut.set_result(Outcome(now, p.status or None, p.reason,
                                   bytes(self.body) if p.status != 200 else b"",
                                   kind, detail, stopped))

    def _close(self) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

    def abandon(self) -> None:
        """Close now; a request still waiting on this connection is cancelled (its task
        was, or the pool is closing)."""
        fut, self.fut, self.sink, self.take = self.fut, None, None, None
        self._close()
        if fut is not None and not fut.done():
            fut.cancel()


class Pool:
    """Keep-alive connections per host:port, one request each at a time; at most as many
    as requests in flight (a phase's concurrency)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        # the heads' shared start per (path, Host, headers): see send's request_id
        self._starts: dict[tuple[str, str, tuple[tuple[str, str], ...]], bytes] = {}
        self._all: set[_Conn] = set()
        self.opened = 0  # connections made, for tests and notes

    async def send(self, to: Target, headers: Mapping[str, str], body: bytes,
                   sink: Sink, request_id: str | None = None) -> Outcome:
        """One request; its Outcome says how it ended (never raises but cancellation).
        `request_id`: its X-Request-ID, sent after `headers` (which then must not carry
        one); the head up to it is made once per (target, headers), not per request."""
        start = _monotonic()
        deadline = start + self.timeout
        try:
            if request_id is None:
                head = request_head(to.path, to.authority, headers, len(body))
            else:
                key = (to.path, to.authority, tuple(headers.items()))
                first = self._starts.get(key)
                if first is None:
                    first = self._starts[key] = head_start(to.path, to.authority, headers)
                head = request_head_with_id(first, request_id, len(body))
        except (ValueError, UnicodeError) as exc:
            return Outcome(start, kind="client_error", detail=f"{type(exc).__name__}: {exc}")
        idle = self._idle.setdefault((to.host, to.port), [])
        conn = None
        while idle:
            conn = idle.pop()
            if conn.usable():
                break
            self._all.discard(conn)
            conn = None
        if conn is None:
            try:
                conn = await self._connect(to, deadline)
            except (asyncio.TimeoutError, TimeoutError):  # noqa: UP041 - 3.9 agent: distinct
                return Outcome(time.monotonic(), kind="timeout")
            except OSError as exc:
                return Outcome(time.monotonic(), kind="connect", detail=(
                    f"{type(exc).__name__}: cannot connect to {to.host}:{to.port} [{exc}]"))
        fut = conn.start(head, body, sink, deadline)
        try:
            out = await fut
        except BaseException:
            conn.abandon()
            self._all.discard(conn)
            raise
        if conn.closed:
            self._all.discard(conn)
        else:
            idle.append(conn)
        return out

    async def _connect(self, to: Target, deadline: float) -> _Conn:
        loop = asyncio.get_running_loop()
        conn = _Conn(loop)
        wait = min(deadline - time.monotonic(), CONNECT_CAP)
        await asyncio.wait_for(loop.create_connection(lambda: conn, to.host, to.port),
                               max(wait, 0.0))
        self.opened += 1
        self._all.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection (the phase is over)."""
        for conn in self._all:
            conn.abandon()
        self._all.clear()
        self._idle.clear()
