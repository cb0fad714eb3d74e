"""What goes in and what comes out of one request: endpoints, specs, records.

Times in a record are seconds on the monotonic clock: `scheduled` and `sent` are offsets
from the phase start; `ttft`, `ttft_text`, `e2el` and every chunk time are durations from
`sent` (vLLM's `start_time`), so float32 chunk offsets keep microsecond precision even in
a 72 h soak.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.loadgen import compat


@dataclass(frozen=True)
class Endpoint:
    """One serving instance; `url` is the base (http://host:port), a trailing /v1 is fine."""

    url: str
    model: str
    instance: int = 0

    @property
    def base(self) -> str:
        return base_url(self.url)


def base_url(url: str) -> str:
    """http://h:p/ and http://h:p/v1 -> http://h:p (the OpenAI routes are added per call);
    h:p without a scheme is http://h:p, as curl takes it."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if url.endswith("/v1"):
        url = url[:-3]
    return url


@dataclass(frozen=True)
class RequestSpec:
    """One request to send. `at` is a trace's own arrival offset (s), used for replay."""

    prompt: str
    max_tokens: int
    doc_id: int
    prompt_tokens: int | None = None
    at: float | None = None


def pack_chunks(times: Sequence[float] | np.ndarray) -> bytes:
    """Chunk offsets (s from `sent`) as little-endian float32, the `request.chunks` blob.
    A record's list packs through array (half numpy's cost on a few dozen floats)."""
    if isinstance(times, list):
        packed = array("f", times)
        if sys.byteorder != "little":
            packed.byteswap()
        return packed.tobytes()
    return np.asarray(times, dtype="<f4").tobytes()


def unpack_chunks(blob: bytes | None) -> np.ndarray:
    """The inverse of pack_chunks; None / empty -> an empty float64 array."""
    if not blob:
        return np.zeros(0, dtype=np.float64)
    return np.frombuffer(blob, dtype="<f4").astype(np.float64)


@dataclass(**compat.SLOTS)
class RequestRecord:
    """One request's outcome. A failed request is a record with its error, never dropped.

    `chunk_times` are the arrival times of every streamed chunk that carried `choices`
    (vLLM's token chunks), as durations from `sent`: ttft == chunk_times[0] and
    e2el == chunk_times[-1] for a successful request, ITL == their differences.
    """

    idx: int
    instance: int
    doc_id: int
    warmup: bool
    scheduled: float
    sent: float | None = None
    ttft: float | None = None
    ttft_text: float | None = None
    e2el: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    usage_reported: bool = False
    status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    finish_reason: str | None = None  # of the last choice chunk that had one

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def itl(self) -> list[float]:
        """Inter-token latencies (s): gaps between consecutive choice chunks."""
        c = self.chunk_times
        return [c[i] - c[i - 1] for i in range(1, len(c))]

    @property
    def queue(self) -> float | None:
        """Client-side wait between the scheduled and the actual send (coordinated omission
        shows here, not hidden in TTFT)."""
        return None if self.sent is None else self.sent - self.scheduled

    def to_row(self) -> dict[str, Any]:
        """A dict for harness.store.writer.insert_requests (REQUEST_COLUMNS)."""
        return {
            "idx": self.idx, "instance": self.instance, "warmup": self.warmup,
            "scheduled": self.scheduled, "sent": self.sent, "ttft": self.ttft,
            "ttft_text": self.ttft_text, "e2el": self.e2el,
            "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "usage_reported": self.usage_reported, "status": self.status,
            "error_kind": self.error_kind, "error": self.error,
            "chunks": pack_chunks(self.chunk_times) if self.chunk_times else None,
            "finish_reason": self.finish_reason,
        }

    def values(self) -> tuple[Any, ...]:
        """to_row()'s values in REQUEST_COLUMNS order, for insert_request_values."""
        times = self.chunk_times
        return (self.idx, self.instance, self.warmup, self.scheduled, self.sent, self.ttft,
                self.ttft_text, self.e2el, self.prompt_tokens, self.output_tokens,
                self.usage_reported, self.status, self.error_kind, self.error,
                pack_chunks(times) if times else None, self.finish_reason)

    @classmethod
    def from_row(cls, row: dict[str, Any], doc_id: int = -1) -> RequestRecord:
        """Rebuild a record from a stored `request` row (the store has no doc_id column)."""
        return cls(
            idx=int(row["idx"]), instance=int(row.get("instance") or 0), doc_id=doc_id,
            warmup=bool(row.get("warmup")), scheduled=float(row.get("scheduled") or 0.0),
            sent=row.get("sent"), ttft=row.get("ttft"), ttft_text=row.get("ttft_text"),
            e2el=row.get("e2el"), chunk_times=unpack_chunks(row.get("chunks")).tolist(),
            prompt_tokens=row.get("prompt_tokens"), output_tokens=row.get("output_tokens"),
            usage_reported=bool(row.get("usage_reported")), status=row.get("status"),
            error_kind=row.get("error_kind"), error=row.get("error"),
            finish_reason=row.get("finish_reason"),
        )
