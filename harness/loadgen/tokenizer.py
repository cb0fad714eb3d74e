"""Count tokens with the server's own tokenizer, through whichever tokenize route it has.

vLLM:              POST /tokenize          {"model", "prompt"}  -> {"count", "tokens"}
llama.cpp server:  POST /tokenize          {"content"}          -> {"tokens"}
llama-cpp-python:  POST /extras/tokenize   {"model", "input"}   -> {"tokens"}

The first route that answers is remembered for the rest of the workload. Sync (urllib):
it runs before the phase, never during it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from harness.errors import EndpointError
from harness.loadgen.records import base_url

_ROUTES: tuple[tuple[str, str], ...] = (
    ("/tokenize", "vllm"),
    ("/tokenize", "llamacpp"),
    ("/extras/tokenize", "llama-cpp-python"),
)


class NoTokenizer(Exception):
    """The server offers no tokenize route we know."""


class ServerTokenizer:
    """Token counts from the server; `flavor` says which route answered."""

    def __init__(self, url: str, model: str | None, timeout: float = 60.0) -> None:
        self.base = base_url(url)
        self.model = model
        self.timeout = timeout
        self.flavor: str | None = None
        self.calls = 0

    def _body(self, flavor: str, text: str) -> dict[str, Any]:
        if flavor == "vllm":
            body: dict[str, Any] = {"prompt": text}
        elif flavor == "llamacpp":
            body = {"content": text}
        else:
            body = {"input": text}
        if self.model and flavor != "llamacpp":
            body["model"] = self.model
        return body

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any] | None:
        req = urllib.request.Request(self.base + route, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                data = json.loads(r.read())
        except urllib.error.HTTPError:
            return None
        except (urllib.error.URLError, OSError) as exc:
            raise EndpointError(f"tokenize failed: {exc}", host=self.base,
                                command=f"POST {route}", stage="calibrate") from None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @staticmethod
    def _count(data: dict[str, Any]) -> int | None:
        if isinstance(data.get("count"), int):
            return int(data["count"])
        if isinstance(data.get("tokens"), list):
            return len(data["tokens"])
        return None

    def count(self, text: str) -> int:
        """Tokens in `text` as the server counts them (its usage.prompt_tokens)."""
        routes = [r for r in _ROUTES if self.flavor in (None, r[1])]
        for route, flavor in routes:
            data = self._post(route, self._body(flavor, text))
            n = self._count(data) if data is not None else None
            if n is not None:
                self.flavor = flavor
                return n
        raise NoTokenizer(self.base)
