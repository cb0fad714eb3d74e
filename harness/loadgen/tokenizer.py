"""Count tokens with the server's own tokenizer, through whichever tokenize route it has.

vLLM:              POST /tokenize          {"model", "prompt"}  -> {"count", "tokens"}
llama.cpp server:  POST /tokenize          {"content"}          -> {"tokens"}
llama-cpp-python:  POST /extras/tokenize   {"model", "input"}   -> {"tokens"}
any OpenAI server: POST /v1/completions    {"model", "prompt", "max_tokens": 1}
                   -> usage.prompt_tokens (only with usage_fallback: it runs a prefill
                   per count and leaves the text in the server's prefix cache)

The first route that answers is remembered for the rest of the workload. Sync (http.client):
it runs before the phase, never during it. Each thread keeps one keep-alive connection, so
a calibration of many documents does not open a TCP (or TLS) connection per count.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.parse
from types import TracebackType
from typing import Any

from harness.errors import EndpointError
from harness.loadgen.records import base_url

_ROUTES: tuple[tuple[str, str], ...] = (
    ("/tokenize", "vllm"),
    ("/tokenize", "llamacpp"),
    ("/extras/tokenize", "llama-cpp-python"),
)
# Last resort for an engine with no tokenize route (SGLang, Ollama, TGI without one).
_USAGE_ROUTE = ("/v1/completions", "usage")
_HEADERS = {"Content-Type": "application/json"}


class NoTokenizer(Exception):
    """The server offers no tokenize route we know."""


class ServerTokenizer:
    """Token counts from the server; `flavor` says which route answered. Safe to share
    between threads (one connection per thread); close() or `with` closes them all."""

    def __init__(self, url: str, model: str | None, timeout: float = 60.0,
                 usage_fallback: bool = False) -> None:
        self.base = base_url(url)
        self.model = model
        self.usage_fallback = usage_fallback and model is not None
        self.timeout = timeout
        self.flavor: str | None = None
        self.calls = 0
        self.connections = 0  # TCP connections opened
        parts = urllib.parse.urlsplit(self.base)
        self._scheme, self._netloc, self._path = parts.scheme, parts.netloc, parts.path
        self._lock = threading.Lock()
        self._local = threading.local()
        self._conns: list[http.client.HTTPConnection] = []

    def __enter__(self) -> ServerTokenizer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.close()

    def _body(self, flavor: str, text: str) -> dict[str, Any]:
        if flavor == "usage":
            return {"model": self.model, "prompt": text, "max_tokens": 1, "stream": False}
        if flavor == "vllm":
            body: dict[str, Any] = {"prompt": text}
        elif flavor == "llamacpp":
            body = {"content": text}
        else:
            body = {"input": text}
        if self.model and flavor != "llamacpp":
            body["model"] = self.model
        return body

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._scheme not in ("http", "https"):  # what urllib said about it
                raise urllib.error.URLError(f"unknown url type: {self._scheme}")
            cls = (http.client.HTTPSConnection if self._scheme == "https"
                   else http.client.HTTPConnection)
            conn = cls(self._netloc, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def _roundtrip(self, conn: http.client.HTTPConnection, path: str,
                   payload: bytes) -> tuple[int, bytes]:
        """One POST. Connect and send errors come as URLError, answer errors as they
        are: the messages urllib gave before."""
        try:
            if conn.sock is None:
                conn.connect()
                with self._lock:
                    self.connections += 1
            conn.request("POST", path, body=payload, headers=_HEADERS)
        except OSError as exc:
            raise urllib.error.URLError(exc) from None
        resp = conn.getresponse()
        return resp.status, resp.read()

    def _exchange(self, path: str, payload: bytes) -> tuple[int, bytes]:
        """(status, body) on this thread's connection. A kept-alive connection the server
        has dropped since (idle timeout, restart) fails on first use: reopened once, as
        counting is idempotent."""
        conn = self._connection()
        while True:
            reused = conn.sock is not None
            try:
                return self._roundtrip(conn, path, payload)
            except OSError as exc:
                conn.close()
                cause = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                if not (reused and isinstance(cause, ConnectionError)):
                    raise
            except BaseException:
                conn.close()  # half-read answer: the connection is unusable
                raise

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if not self._scheme:  # as urllib.request.Request raised it
            raise ValueError(f"unknown url type: {self.base + route!r}")
        payload = json.dumps(body).encode()
        with self._lock:
            self.calls += 1
        try:
            status, raw = self._exchange(self._path + route, payload)
            if not 200 <= status < 300:
                return None  # no such route here (urllib's HTTPError): try the next one
            data = json.loads(raw)
        except (OSError, http.client.HTTPException) as exc:
            # HTTPException: the server went away mid-answer (IncompleteRead, BadStatusLine)
            raise EndpointError(f"tokenize failed: {str(exc) or type(exc).__name__}",
                                host=self.base, command=f"POST {route}",
                                stage="calibrate") from None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @staticmethod
    def _count(data: dict[str, Any]) -> int | None:
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            return int(usage["prompt_tokens"])
        if isinstance(data.get("count"), int):
            return int(data["count"])
        if isinstance(data.get("tokens"), list):
            return len(data["tokens"])
        return None

    def count(self, text: str) -> int:
        """Tokens in `text` as the server counts them (its usage.prompt_tokens)."""
        known = (*_ROUTES, _USAGE_ROUTE) if self.usage_fallback else _ROUTES
        routes = [r for r in known if self.flavor in (None, r[1])]
        for route, flavor in routes:
            data = self._post(route, self._body(flavor, text))
            n = self._count(data) if data is not None else None
            if n is not None:
                self.flavor = flavor
                return n
        raise NoTokenizer(self.base)
