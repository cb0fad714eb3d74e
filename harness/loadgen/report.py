"""Text and JSON renderings of a phase: vLLM's result block (same labels, same widths, so a
reader can put the two side by side) followed by the gate's additions, and a
`--save-result --save-detailed`-shaped JSON that `gate import vllm-bench` reads back.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.loadgen.engine import PhaseResult
from harness.loadgen.health import PhaseHealth
from harness.loadgen.metrics import Dist, Summary
from harness.loadgen.records import RequestRecord


def _row(label: str, value: Any) -> str:
    if isinstance(value, float):
        return f"{label:<40} {value:<10.2f}"
    return f"{label:<40} {value!s:<10}"


def _head(title: str, fill: str = "-") -> str:
    return f"{title:{fill}^50}"


def _dist(lines: list[str], title: str, name: str, d: Dist) -> None:
    lines.append(_head(title))
    lines.append(_row(f"Mean {name} (ms):", d.mean))
    lines.append(_row(f"Median {name} (ms):", d.median))
    lines.append(_row(f"P99 {name} (ms):", d.p99))


def _ms(v: float) -> str:
    return "inf" if math.isinf(v) else f"{v:.2f}"


def format_summary(s: Summary, *, concurrency: int | None, rate: float | None,
                   per_instance: Mapping[int, Summary] | None = None,
                   urls: Mapping[int, str] | None = None, calibrated: bool | None = None,
                   evidence: Mapping[str, Mapping[str, Any]] | None = None,
                   health: PhaseHealth | None = None) -> str:
    """vLLM's "Serving Benchmark Result" block, then a gate section before the last rule
    (with the load generator's own error when `health` is given)."""
    lines = [_head(" Serving Benchmark Result ", "=")]
    lines.append(_row("Successful requests:", s.completed))
    lines.append(_row("Failed requests:", s.failed))
    if concurrency is not None:
        lines.append(_row("Maximum request concurrency:", concurrency))
    if rate is not None and not math.isinf(rate):
        lines.append(_row("Request rate configured (RPS):", float(rate)))
    lines.append(_row("Benchmark duration (s):", float(s.duration)))
    lines.append(_row("Total input tokens:", s.total_input_tokens))
    lines.append(_row("Total generated tokens:", s.total_output_tokens))
    lines.append(_row("Request throughput (req/s):", s.request_throughput))
    if s.request_goodput is not None:
        lines.append(_row("Request goodput (req/s):", s.request_goodput))
    lines.append(_row("Output token throughput (tok/s):", s.output_throughput))
    lines.append(_row("Peak output token throughput (tok/s):", s.max_output_tokens_per_s))
    lines.append(_row("Peak concurrent requests:", float(s.max_concurrent_requests)))
    lines.append(_row("Total token throughput (tok/s):", s.total_token_throughput))
    _dist(lines, "Time to First Token", "TTFT", s.ttft)
    _dist(lines, "Time per Output Token (excl. 1st token)", "TPOT", s.tpot)
    _dist(lines, "Inter-token Latency", "ITL", s.itl)
    _dist(lines, "End-to-end Latency", "E2EL", s.e2el)
    lines.append(_head(" gate "))
    kinds = " ".join(f"{k}={v}" for k, v in sorted(s.failed_by_kind.items())) or "-"
    lines.append(_row("Failed by kind:", kinds))
    lines.append(_row("P50 TTFT, failures as inf (ms):", _ms(s.ttft_p50_with_failures_inf)))
    lines.append(_row("Median TTFT to first text (ms):", s.ttft_text.median))
    lines.append(_row("Median client queue (ms):", s.queue.median))
    lines.append(_row("P99 client queue (ms):", s.queue.p99))
    if s.warmup_excluded:
        lines.append(_row("Warm-up requests (excluded):", s.warmup_excluded))
    lines.append(_row("Usage missing (tokens counted):", s.usage_missing))
    if calibrated is not None:
        lines.append(_row("Prompt lengths:", "server tokenizer" if calibrated else "ESTIMATED"))
    if per_instance and len(per_instance) > 1:
        for k, ps in sorted(per_instance.items()):
            url = (urls or {}).get(k, "")
            lines.append(_head(f" instance {k} {url} "))
            lines.append(_row("Successful / failed:", f"{ps.completed} / {ps.failed}"))
            lines.append(_row("Request throughput (req/s):", ps.request_throughput))
            lines.append(_row("Output token throughput (tok/s):", ps.output_throughput))
            lines.append(_row("Median TTFT (ms):", ps.ttft.median))
    for url, ev in (evidence or {}).items():
        if "prompt_tokens" not in ev:
            continue
        lines.append(_head(" /metrics deltas "))
        lines.append(f"{url}")
        for key, label in (("prompt_tokens", "Prompt tokens:"),
                           ("prefix_queries", "Prefix cache queries (tokens):"),
                           ("prefix_hits", "Prefix cache hits (tokens):"),
                           ("external_queries", "External cache queries (tokens):"),
                           ("external_hits", "External cache hits (tokens):"),
                           ("lmcache_hit_tokens", "LMCache hit tokens:")):
            if ev.get(key) is not None:
                lines.append(_row(label, int(ev[key])))
        share = ev.get("external_hit_share")
        if share is not None:
            lines.append(_row("External hit share:", float(share)))
    if health is not None:
        lines += client_lines(health)
    lines.append("=" * 50)
    return "\n".join(lines)


def client_error(h: PhaseHealth) -> dict[str, Any]:
    """The load generator's own error against what the phase measured, and whether it
    counts as saturated (why, one reason per bound crossed): `gate bench --json`'s
    `client`. Delays in ms; shares of the TTFT p50; rates (open loop) in req/s."""
    return {"saturated": h.saturated, "reasons": list(h.reasons),
            "ttft_p50_ms": h.ttft_p50_ms, "delay_mean_ms": h.loop_lag_mean_ms,
            "delay_p99_ms": h.loop_lag_p99_ms, "delay_share": h.client_delay_share,
            "tail_share": h.client_tail_share, "open_loop": h.open_loop,
            "target_rate": h.target_rate, "achieved_rate": h.achieved_rate,
            "sends": h.sends, "late_sends": h.late_sends, "held_by_cap": h.held_by_cap,
            "process_cpu": h.process_cpu}


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def _opt(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def client_lines(h: PhaseHealth) -> list[str]:
    """The client's own error, as rows under the gate section: its delay (event-loop
    lag) beside the TTFT p50 it measured, the open loop's rate, late sends, the verdict
    and each reason."""
    lines = [_head(" load generator (client) ")]
    lines.append(_row("Client delay, mean / p99 (ms):",
                      f"{_opt(h.loop_lag_mean_ms, '.2f')} / {_opt(h.loop_lag_p99_ms, '.2f')}"))
    lines.append(_row(f"  share of TTFT p50 {_opt(h.ttft_p50_ms, '.2f')} ms:",
                      f"{_share(h.client_delay_share)} / {_share(h.client_tail_share)}"))
    if h.open_loop:
        lines.append(_row("Achieved / target send rate (req/s):",
                          f"{_opt(h.achieved_rate, '.1f')} / {_opt(h.target_rate, '.1f')}"))
        lines.append(_row("Sends late / held by the cap:",
                          f"{h.late_sends} / {h.held_by_cap} of {h.sends}"))
    else:
        lines.append(_row("Sends late after their slot freed:", f"{h.late_sends} of {h.sends}"))
    lines.append(_row("Client CPU (share of a core):", _share(h.process_cpu)))
    lines.append(_row("Client saturated:", "YES" if h.saturated else "no"))
    lines += [f"  - {r}" for r in h.reasons]
    return lines


def to_vllm_json(result: PhaseResult, *, model: str, concurrency: int, rate: float | None,
                 burstiness: float = 1.0, extra: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
    """A `vllm bench serve --save-result --save-detailed` shaped result (measured requests
    only, in index order), plus a "gate" object with what vLLM's file has no place for."""
    s = result.summary
    recs = [r for r in result.records if not r.warmup]
    out: dict[str, Any] = {
        "date": time.strftime("%Y%m%d-%H%M%S", time.localtime(result.started_at)),
        "endpoint_type": "openai", "backend": "gate", "label": None, "model_id": model,
        "tokenizer_id": None, "num_prompts": len(recs),
        "request_rate": "inf" if rate is None or math.isinf(rate) else rate,
        "burstiness": burstiness, "max_concurrency": concurrency, "duration": s.duration,
        "completed": s.completed, "failed": s.failed,
        "total_input_tokens": s.total_input_tokens,
        "total_output_tokens": s.total_output_tokens,
        "request_throughput": s.request_throughput, "request_goodput": s.request_goodput,
        "output_throughput": s.output_throughput,
        "total_token_throughput": s.total_token_throughput,
        "max_output_tokens_per_s": s.max_output_tokens_per_s,
        "max_concurrent_requests": s.max_concurrent_requests,
        "input_lens": [r.prompt_tokens or 0 for r in recs],
        "output_lens": [(r.output_tokens or 0) if r.ok else 0 for r in recs],
        "ttfts": [(r.ttft or 0.0) if r.ok else 0.0 for r in recs],
        "itls": [r.itl if r.ok else [] for r in recs],
        "latencies": [(r.e2el or 0.0) if r.ok else 0.0 for r in recs],
        "start_times": [r.sent or 0.0 for r in recs],
        "errors": ["" if r.ok else f"{r.error_kind}: {r.error}" for r in recs],
    }
    for name, d in (("ttft", s.ttft), ("tpot", s.tpot), ("itl", s.itl), ("e2el", s.e2el)):
        out[f"mean_{name}_ms"] = d.mean
        out[f"median_{name}_ms"] = d.median
        out[f"std_{name}_ms"] = d.std
        out[f"p99_{name}_ms"] = d.p99
    gate = {k: v for k, v in s.to_dict().items() if k not in out}
    gate.update(extra or {})
    out["gate"] = gate
    return out


def percentile_table(s: Summary) -> str:
    """P50 / P90 / P99 of TTFT, TPOT, ITL and E2EL in one table, the way `vllm bench serve
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99` reads, ms."""
    lines = [_head(" Percentiles (ms) "),
             f"{'Metric':<8}{'P50':>14}{'P90':>14}{'P99':>14}"]
    for name, d in (("TTFT", s.ttft), ("TPOT", s.tpot), ("ITL", s.itl), ("E2EL", s.e2el)):
        lines.append(f"{name:<8}{d.p50:>14.2f}{d.p90:>14.2f}{d.p99:>14.2f}")
    lines.append("=" * 50)
    return "\n".join(lines)


REQUEST_FIELDS = ("idx", "instance", "doc_id", "warmup", "scheduled", "sent", "ttft",
                  "ttft_text", "e2el", "prompt_tokens", "output_tokens", "usage_reported",
                  "status", "error_kind", "error", "finish_reason")


def request_rows(records: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    """One row per request (seconds from the phase start; ITL as the gaps between the
    streamed chunks, ms), for --requests-out."""
    rows = []
    for r in records:
        row = {k: getattr(r, k) for k in REQUEST_FIELDS}
        gaps = [b - a for a, b in zip(r.chunk_times, r.chunk_times[1:], strict=False)]
        row["itl_ms_mean"] = round(sum(gaps) / len(gaps) * 1000, 3) if gaps else None
        out_tokens = r.output_tokens or 0
        row["tpot_ms"] = (round((r.e2el - r.ttft) / (out_tokens - 1) * 1000, 3)
                          if r.e2el is not None and r.ttft is not None and out_tokens > 1
                          else None)
        rows.append(row)
    return rows


def write_requests(records: Sequence[RequestRecord], path: Path) -> int:
    """Every request of the phase to `path`: JSON lines for .jsonl, CSV for .csv."""
    rows = request_rows(records)
    if path.suffix == ".csv":
        import csv

        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=[*REQUEST_FIELDS, "itl_ms_mean", "tpot_ms"])
            writer.writeheader()
            writer.writerows(rows)
    else:
        with open(path, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return len(rows)
