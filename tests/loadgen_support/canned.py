"""A real TCP server on loopback that answers each HTTP request with scripted bytes, for
the client's behaviour on the wire: framings the aiohttp test server never sends, a
close or a stall at a chosen byte, `Connection: close`, a garbage status line. It counts
the connections it accepted and the requests it read.

A script is a list of steps: bytes are written (and drained), a float sleeps that many
seconds, CLOSE closes the connection cleanly, ABORT resets it. After the last step the
connection waits for the next request (keep-alive).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

CLOSE = "close"
ABORT = "abort"
Step = bytes | float | str
Script = list[Step]


def sse(tokens: int = 3, text: str = " tok") -> bytes:
    """A vLLM-shaped completions stream body: token chunks, usage, [DONE]."""
    out = b""
    for i in range(tokens):
        finish = json.dumps("length" if i == tokens - 1 else None)
        out += (b'data: {"id":"cmpl-1","object":"text_completion","model":"m","choices":'
                b'[{"index":0,"text":%s,"logprobs":null,"finish_reason":%s}]}\n\n'
                % (json.dumps(text).encode(), finish.encode()))
    usage = {"prompt_tokens": 2, "completion_tokens": tokens, "total_tokens": tokens + 2}
    return out + b'data: {"choices":[],"usage":%s}\n\ndata: [DONE]\n\n' % json.dumps(
        usage).encode()


def chunked(body: bytes, size: int = 64) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        piece = body[i:i + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def head(status: str = "200 OK", *headers: str) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(h + "\r\n" for h in headers)
            + "\r\n").encode()


def chunked_ok(tokens: int = 3, *headers: str) -> Script:
    return [head("200 OK", "Content-Type: text/event-stream", "Transfer-Encoding: chunked",
                 *headers) + chunked(sse(tokens))]


class CannedServer:
    """Counts live in the instance; `script(i)` is request i's answer (0-based)."""

    def __init__(self, script: Callable[[int], Script]) -> None:
        self.script = script
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                     ) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    req = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in req.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                self.heads.append(req)
                self.bodies.append(await reader.readexactly(length))
                i = self.requests
                self.requests += 1
                for step in self.script(i):
                    if isinstance(step, float):
                        await asyncio.sleep(step)
                    elif step == CLOSE:
                        writer.close()
                        return
                    elif step == ABORT:
                        writer.transport.abort()
                        return
                    else:
                        assert isinstance(step, bytes)
                        writer.write(step)
                        await writer.drain()
        finally:
            writer.close()


@contextlib.contextmanager
def canned(script: Callable[[int], Script]) -> Iterator[tuple[str, CannedServer]]:
    """Serve on 127.0.0.1 from a background thread; yields (base URL, server)."""
    server = CannedServer(script)
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        holder["loop"] = loop
        srv = loop.run_until_complete(asyncio.start_server(server.handle, "127.0.0.1", 0))
        holder["port"] = srv.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()
        srv.close()
        tasks = asyncio.all_tasks(loop)  # handlers still sleeping in a script
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}", server
    finally:
        holder["loop"].call_soon_threadsafe(holder["loop"].stop)
        thread.join(10)
