"""Serving metrics exactly as vLLM's benchmark computes them, plus the gate's variants.

Source of each definition: vllm/benchmarks/serve.py `calculate_metrics` and
vllm/benchmarks/lib/endpoint_request_func.py (see docs/metrics.md). Failed requests are
excluded from every latency statistic and from token counts, as vLLM does; the gate's
`ttft_p50_with_failures_inf` counts each failure as an infinite TTFT instead.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from harness.loadgen.records import RequestRecord

PERCENTILES = (50, 90, 95, 99)
SLO_KEYS = ("ttft", "tpot", "e2el")
DISTS = ("ttft", "tpot", "itl", "e2el", "ttft_text", "queue")


@dataclass(frozen=True)
class Dist:
    """mean / median / std / percentiles of one metric, in milliseconds (np.* defaults:
    population std, linear-interpolation percentiles; all 0 when there are no values,
    as vLLM's `np.mean(x or 0)` gives)."""

    mean: float = 0.0
    median: float = 0.0
    std: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    n: int = 0

    @classmethod
    def of(cls, seconds: Sequence[float] | np.ndarray) -> Dist:
        arr = np.asarray(seconds, dtype=np.float64)
        if arr.size == 0:
            return cls()
        ms = arr * 1000.0
        p = np.percentile(ms, PERCENTILES)
        return cls(mean=float(np.mean(ms)), median=float(np.median(ms)),
                   std=float(np.std(ms)), p50=float(p[0]), p90=float(p[1]),
                   p95=float(p[2]), p99=float(p[3]), n=int(arr.size))


def _ms(metric: str, stat: str) -> Any:
    """A read-only attribute: one statistic of one Dist field, in ms."""

    def get(self: Summary) -> float:
        return float(getattr(getattr(self, metric), stat))

    return property(get)


@dataclass(frozen=True)
class Summary:
    """One phase's (or one instance's) aggregates; `to_dict()` uses vLLM's result keys."""

    completed: int
    failed: int
    failed_by_kind: dict[str, int]
    duration: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    request_goodput: float | None
    output_throughput: float
    total_token_throughput: float
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    ttft: Dist
    tpot: Dist
    itl: Dist
    e2el: Dist
    ttft_text: Dist
    queue: Dist
    usage_missing: int
    warmup_excluded: int
    ttft_p50_with_failures_inf: float  # ms; inf once failures reach the median
    ttft_p99_with_failures_inf: float
    slo: dict[str, float] = field(default_factory=dict)

    # vLLM's printed fields by their result-file names (mean_ttft_ms, p99_itl_ms, ...)
    mean_ttft_ms = _ms("ttft", "mean")
    median_ttft_ms = _ms("ttft", "median")
    std_ttft_ms = _ms("ttft", "std")
    p99_ttft_ms = _ms("ttft", "p99")
    mean_tpot_ms = _ms("tpot", "mean")
    median_tpot_ms = _ms("tpot", "median")
    std_tpot_ms = _ms("tpot", "std")
    p99_tpot_ms = _ms("tpot", "p99")
    mean_itl_ms = _ms("itl", "mean")
    median_itl_ms = _ms("itl", "median")
    std_itl_ms = _ms("itl", "std")
    p99_itl_ms = _ms("itl", "p99")
    mean_e2el_ms = _ms("e2el", "mean")
    median_e2el_ms = _ms("e2el", "median")
    std_e2el_ms = _ms("e2el", "std")
    p99_e2el_ms = _ms("e2el", "p99")

    def to_dict(self) -> dict[str, Any]:
        """Flat, JSON-safe (inf -> "inf"), with vLLM's key names for vLLM's fields."""
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            if k in DISTS:
                for stat, val in v.items():
                    out[f"n_{k}" if stat == "n" else f"{stat}_{k}_ms"] = val
            else:
                out[k] = v
        return {k: _json_safe(v) for k, v in out.items()}


def _json_safe(v: Any) -> Any:
    """inf -> "inf" (vLLM writes request_rate that way); nan -> None (PostgreSQL's JSON
    has no NaN)."""
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def percentile_inf(values: Sequence[float], q: float) -> float:
    """np.percentile's linear method, but well-defined with +inf entries (numpy gives nan)."""
    if not values:
        return math.inf
    xs = sorted(values)
    rank = q / 100.0 * (len(xs) - 1)
    lo = math.floor(rank)
    hi = math.ceil(rank)
    frac = rank - lo
    if frac == 0.0 or xs[lo] == xs[hi]:
        return xs[lo]
    if math.isinf(xs[hi]):
        return math.inf
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def tpot_of(rec: RequestRecord) -> float:
    """(E2EL - TTFT) / (output_tokens - 1); 0 when output_tokens <= 1 (vLLM's goodput rule)."""
    out = rec.output_tokens or 0
    if out > 1 and rec.e2el is not None and rec.ttft is not None:
        return (rec.e2el - rec.ttft) / (out - 1)
    return 0.0


def _chunks(ok: Sequence[RequestRecord]) -> tuple[np.ndarray, np.ndarray]:
    """Every choice-chunk offset of the successful requests, flat, and each request's count."""
    lens = np.fromiter((len(r.chunk_times) for r in ok), dtype=np.int64, count=len(ok))
    flat = np.fromiter(itertools.chain.from_iterable(r.chunk_times for r in ok),
                       dtype=np.float64, count=int(lens.sum()))
    return flat, lens


def _itls(flat: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Gaps between consecutive chunks within each request (never across two requests)."""
    if flat.size < 2:
        return np.zeros(0)
    gaps = np.diff(flat)
    first = np.cumsum(lens)[:-1]  # index in flat where each next request starts
    keep = np.ones(gaps.size, dtype=bool)
    keep[first[first > 0] - 1] = False
    return np.asarray(gaps[keep], dtype=np.float64)


def _peaks(ok: Sequence[RequestRecord], flat: np.ndarray, lens: np.ndarray
           ) -> tuple[float, int]:
    """vLLM's max_output_tokens_per_s (1 s buckets of token-chunk arrivals) and
    max_concurrent_requests (sweep over half-open [start, start + latency))."""
    if not ok:
        return 0.0, 0
    starts = np.array([r.sent or 0.0 for r in ok])
    lat = np.array([r.e2el or 0.0 for r in ok])
    t_min = float(starts.min())
    span = int(np.ceil(float((starts + lat).max()) - t_min)) + 1
    b = (np.repeat(starts, lens) + flat - t_min).astype(np.int64)
    b = b[(b >= 0) & (b < span)]
    tokens = np.bincount(b, minlength=span) if b.size else np.zeros(span)
    times = np.concatenate([starts, starts + lat])
    deltas = np.concatenate([np.ones(len(ok), dtype=np.int64),
                             -np.ones(len(ok), dtype=np.int64)])
    order = np.lexsort((deltas, times))  # a departure sorts before an arrival at a tie
    peak = int(max(np.cumsum(deltas[order]).max(), 0))
    return float(tokens.max()), peak


def summarize(records: Iterable[RequestRecord], wall_time: float, *,
              slo: Mapping[str, float] | None = None) -> Summary:
    """Aggregate measured (non-warm-up) records over the phase's wall time (s).

    `slo` is vLLM's --goodput in ms, e.g. {"ttft": 2000, "tpot": 50}."""
    slo = dict(slo or {})
    bad = [k for k in slo if k not in SLO_KEYS]
    if bad:
        raise ValueError(f"unknown SLO metric {bad[0]!r}; use one of {', '.join(SLO_KEYS)}")
    all_recs = list(records)
    measured = [r for r in all_recs if not r.warmup]
    ok = [r for r in measured if r.ok]
    failed = [r for r in measured if not r.ok]
    by_kind: dict[str, int] = {}
    for r in failed:
        by_kind[r.error_kind or "?"] = by_kind.get(r.error_kind or "?", 0) + 1
    dur = wall_time if wall_time > 0 else math.nan
    out_lens = [r.output_tokens or 0 for r in ok]
    total_in = sum(r.prompt_tokens or 0 for r in ok)
    total_out = sum(out_lens)
    ttfts = [r.ttft for r in ok if r.ttft is not None]
    e2els = [r.e2el for r in ok if r.e2el is not None]
    tpots = [tpot_of(r) for r in ok if (r.output_tokens or 0) > 1]
    flat, lens = _chunks(ok)
    itls = _itls(flat, lens)
    good = None
    if slo:
        n_good = 0
        for r in ok:
            vals = {"ttft": r.ttft or 0.0, "tpot": tpot_of(r), "e2el": r.e2el or 0.0}
            if all(slo[k] / 1000.0 >= vals[k] for k in slo):
                n_good += 1
        good = n_good / dur
    with_inf = ttfts + [math.inf] * len(failed)
    peak_tok, peak_conc = _peaks(ok, flat, lens)
    return Summary(
        completed=len(ok), failed=len(failed), failed_by_kind=by_kind, duration=wall_time,
        total_input_tokens=total_in, total_output_tokens=total_out,
        request_throughput=len(ok) / dur, request_goodput=good,
        output_throughput=total_out / dur, total_token_throughput=(total_in + total_out) / dur,
        max_output_tokens_per_s=peak_tok, max_concurrent_requests=peak_conc,
        ttft=Dist.of(ttfts), tpot=Dist.of(tpots), itl=Dist.of(itls), e2el=Dist.of(e2els),
        ttft_text=Dist.of([r.ttft_text for r in ok if r.ttft_text is not None]),
        queue=Dist.of([q for r in measured if (q := r.queue) is not None]),
        usage_missing=sum(1 for r in ok if not r.usage_reported),
        warmup_excluded=len(all_recs) - len(measured),
        ttft_p50_with_failures_inf=percentile_inf([t * 1000 for t in with_inf], 50),
        ttft_p99_with_failures_inf=percentile_inf([t * 1000 for t in with_inf], 99),
        slo=slo,
    )
