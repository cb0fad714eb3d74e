"""A minimal HTTP/1.1 SSE server on a bare asyncio Protocol, for timing the client.

The aiohttp server stamps a request when its handler starts, which under a burst of 64
arrivals is milliseconds after the bytes came in; this one stamps in `data_received` and
writes each chunk from a loop timer, so its stamps are the server's own first-byte truth
and the difference to the client's TTFT is what the client adds. Only what the benchmark
needs: keep-alive, POST /v1/completions (vLLM-shaped chunks, usage, [DONE]), GET /_stamps,
GET /v1/models.

Run: python tests/loadgen_support/rawserver.py --ttft 0.05 --itl 0.005 --tokens 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from typing import Any


class _Conn(asyncio.Protocol):
    def __init__(self, cfg: dict[str, Any], stamps: dict[str, list[float]]) -> None:
        self.cfg = cfg
        self.stamps = stamps
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            lines = head.split("\r\n")
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (ln.partition(":") for ln in lines[1:])}
            length = int(headers.get("content-length", "0"))
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4:end + 4 + length]
            self.buf = self.buf[end + 4 + length:]
            method, path = lines[0].split(" ")[:2]
            self.handle(method, path, headers, body, now)

    def _send(self, status: str, ctype: str, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                             f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes,
               now: float) -> None:
        if method == "GET" and path == "/_stamps":
            self._send("200 OK", "application/json", json.dumps(self.stamps).encode())
        elif method == "GET" and path == "/v1/models":
            self._send("200 OK", "application/json", json.dumps(
                {"object": "list", "data": [{"id": self.cfg["model"], "object": "model"}]}
            ).encode())
        elif method == "POST" and path == "/v1/completions":
            req = json.loads(body)
            n = self.cfg["tokens"] or int(req.get("max_tokens") or 16)
            self.stream(headers.get("x-request-id", ""), n, now)
        else:
            self._send("404 Not Found", "text/plain", b"not found")

    def stream(self, rid: str, n: int, recv: float) -> None:
        assert self.transport is not None
        t = self.transport
        head = (f'data: {{"id":"cmpl-{rid}","object":"text_completion","created":'
                f'{int(time.time())},"model":"{self.cfg["model"]}","choices":[{{"index":0,'
                f'"text":" tok","logprobs":null,"finish_reason":').encode()

        def chunk(payload: bytes) -> bytes:
            return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"

        def token(i: int) -> None:
            if t.is_closing():
                return
            fin = b'"length"' if i == n - 1 else b"null"
            data = chunk(head + fin + b',"stop_reason":null}]}\n\n')
            if i == 0:
                t.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" + data)
                if rid:
                    self.stamps[rid] = [recv, time.monotonic()]
            else:
                t.write(data)
            if i < n - 1:
                self.loop.call_at(recv + self.cfg["ttft"] + (i + 1) * self.cfg["itl"],
                                  token, i + 1)
            else:
                usage = json.dumps({"prompt_tokens": 2, "total_tokens": 2 + n,
                                    "completion_tokens": n})
                tail = (f'data: {{"id":"cmpl-{rid}","object":"text_completion","choices":[],'
                        f'"usage":{usage}}}\n\n').encode()
                t.write(chunk(tail) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

        self.loop.call_at(recv + self.cfg["ttft"], token, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--model", default="test-model")
    ap.add_argument("--ttft", type=float, default=0.05)
    ap.add_argument("--itl", type=float, default=0.005)
    ap.add_argument("--tokens", type=int, default=16)
    args = ap.parse_args()
    cfg = {"model": args.model, "ttft": args.ttft, "itl": args.itl, "tokens": args.tokens}
    stamps: dict[str, list[float]] = {}

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", args.port))
        server = await loop.create_server(lambda: _Conn(cfg, stamps), sock=sock, backlog=1024)
        print(f"READY http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        runner.run(serve())


if __name__ == "__main__":
    main()
