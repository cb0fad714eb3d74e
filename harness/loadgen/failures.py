"""Why the requests of a phase failed, in the server's own words, and the likely cause.

A phase where most requests fail says little through counts by kind ("http_400=64"): the
first user of a real llama.cpp-based server saw only "HTTP 400 Bad Request:" and exit 3.
`explain` keeps the first few distinct failures (status, the server's message pulled out
of its JSON error body) and names the likely cause from what real engines answer
(bodies captured in tests/fixtures/engines/errors.json): a model id the server does not
serve, a route or API it lacks (completions vs chat), a prompt longer than its context,
a header or key it refuses. Pure: records in, text out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.loadgen.records import RequestRecord

# A phase whose failed share reaches this is explained on stderr and in its summary.
EXPLAIN_SHARE = 0.5
_SAMPLES = 3
_HTTP = re.compile(r"^HTTP (\d{3})[^:]*:\s?(.*)$", re.S)


@dataclass(frozen=True)
class FailureSample:
    kind: str          # the record's error_kind (http_400, connect, cut, ...)
    status: int | None
    message: str       # the server's own words when its body had them, else the body
    count: int = 1     # requests that failed the same way

    def line(self) -> str:
        status = f"HTTP {self.status}" if self.status is not None else self.kind
        words = self.message or "(empty body)"
        times = f" x{self.count}" if self.count > 1 else ""
        return f"{status}: {words}{times}"


@dataclass(frozen=True)
class FailureReport:
    failed: int
    total: int
    samples: list[FailureSample] = field(default_factory=list)
    hint: str = ""

    @property
    def share(self) -> float:
        return self.failed / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"failed": self.failed, "total": self.total, "hint": self.hint,
                "first": [{"kind": s.kind, "status": s.status, "message": s.message,
                           "count": s.count} for s in self.samples]}

    def lines(self) -> list[str]:
        """What stderr shows: the count, the first distinct failures, the hint."""
        out = [f"{self.failed} of {self.total} requests failed; first failures:"]
        out += [f"  {s.line()}" for s in self.samples]
        if self.hint:
            out.append(f"  likely cause: {self.hint}")
        return out


def server_words(body: str) -> str:
    """The message inside a JSON error body (OpenAI / vLLM `{"error": {"message"}}` or
    `{"message"}`, llama.cpp's `{"error": {...}}`, TGI's and Ollama's `{"error": "..."}`,
    FastAPI's `{"detail": ...}`); the body itself when it is not such JSON."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())
    for obj in (data.get("error") if isinstance(data, dict) else None, data):
        if isinstance(obj, str):
            return obj
        if isinstance(obj, dict):
            for key in ("message", "detail", "error"):
                value = obj.get(key)
                if isinstance(value, str) and value:
                    return value
                if isinstance(value, list) and value:  # FastAPI validation errors
                    return json.dumps(value, ensure_ascii=False)[:300]
    return " ".join(text.split())


def sample_of(rec: RequestRecord) -> FailureSample:
    """One failed record as (kind, status, the server's words)."""
    kind = rec.error_kind or "unknown"
    text = rec.error or ""
    m = _HTTP.match(text)
    if m:
        return FailureSample(kind, int(m.group(1)), server_words(m.group(2)))
    return FailureSample(kind, rec.status, text)


_CONTEXT = ("maximum context length", "context size", "context window", "context length",
            "tokens + `max_new_tokens` must be", "exceed_context_size", "too many tokens",
            "prompt is too long", "input is too long", "longer than the maximum")
_MISSING = ("does not exist", "not found", "no such model", "unknown model", "not served")
_CHAT_ONLY = ("chat template", "does not support completions", "completions api is not",
              "legacy completions")


def hint_for(samples: Sequence[FailureSample], *, api: str, model: str) -> str:
    """The likely cause of the failures, from the first distinct ones; '' when unknown."""
    other = "chat" if api == "completions" else "completions"
    for s in samples:
        low = s.message.lower()
        if any(k in low for k in _CONTEXT):
            return ("context too long: the prompt plus max_tokens exceeds the server's "
                    "context; lower --doc-tokens / --max-tokens, or start the engine with a "
                    "longer context")
        if any(k in low for k in _CHAT_ONLY):
            return (f"completions vs chat: the server refused the {api} API for this model "
                    f"({s.message[:80]}); try --api {other}")
        if "model" in low and any(k in low for k in _MISSING):
            return (f"model id: the server does not serve {model!r} under that name; "
                    "`gate probe URL` lists the ids it serves")
        if s.status in (401, 403):
            return ("rejected key: the server wants an API key (set OPENAI_API_KEY) or "
                    "refused the one given")
        if s.status in (404, 405):
            return (f"route: the server has no {api} route at this URL (does it serve the "
                    f"OpenAI API under /v1?); try --api {other}, or `gate probe URL`")
        if s.status in (400, 422) and not s.message:
            return ("a rejected header or body: the server answered an empty "
                    f"{s.status}, which its request validation does before any model work "
                    "(llama-cpp-python does so for a non-UUID X-Request-ID); compare with a "
                    "plain `curl` of the same route")
        if s.kind == "connect":
            return "nothing answers at that address: is the engine running on that port?"
        if s.kind == "timeout":
            return ("no complete answer within --timeout: the server is too slow for this "
                    "load; lower --concurrency or --doc-tokens, or raise --timeout")
    return ""


def explain(records: Iterable[RequestRecord], *, api: str, model: str,
            at_share: float = EXPLAIN_SHARE) -> FailureReport | None:
    """The report for a phase whose measured requests failed at `at_share` or more
    (warm-ups count too when nothing was measured); None otherwise."""
    recs = list(records)
    measured = [r for r in recs if not r.warmup] or recs
    failed = [r for r in measured if not r.ok]
    if not measured or len(failed) / len(measured) < at_share:
        return None
    distinct: dict[tuple[str, int | None, str], FailureSample] = {}
    for r in failed:
        s = sample_of(r)
        key = (s.kind, s.status, s.message)
        prev = distinct.get(key)
        if prev is None and len(distinct) >= _SAMPLES:
            continue
        distinct[key] = FailureSample(s.kind, s.status, s.message,
                                      (prev.count if prev else 0) + 1)
    samples = list(distinct.values())
    return FailureReport(failed=len(failed), total=len(measured), samples=samples,
                         hint=hint_for(samples, api=api, model=model))
