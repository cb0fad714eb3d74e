"""Read `vllm bench serve --save-result` files and check them against their own arrays.

Shapes: one result object; a JSON list of them (`vllm bench sweep` summary.json); JSON
lines (`--append-result`). When a result carries vLLM's per-request arrays
(--save-detailed: ttfts, itls, input_lens, output_lens, errors, latencies, start_times)
the aggregates are recomputed with the same rules as `summarize` and every disagreement
with the file's own summary is reported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError
from harness.loadgen.metrics import summarize
from harness.loadgen.records import RequestRecord

ARRAYS = ("ttfts", "itls", "input_lens", "output_lens", "generated_texts", "errors",
          "latencies", "start_times", "queue_times")
CHECKED = (
    "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
    "output_throughput", "total_token_throughput",
    *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el")
      for s in ("mean", "median", "std", "p99")),
)
REL_TOL = 1e-6
ABS_TOL = 1e-6


@dataclass
class VllmRun:
    """One result object from the file: its scalars, its arrays, what we recomputed."""

    index: int
    scalars: dict[str, Any]
    arrays: dict[str, list[Any]]
    recomputed: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)

    @property
    def has_arrays(self) -> bool:
        return "ttfts" in self.arrays and "output_lens" in self.arrays


def _objects(text: str, file: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    objs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            objs.append(json.loads(line))
        except ValueError:
            raise UsageError(f"not JSON (line {n}); expected a `vllm bench serve "
                             "--save-result` file", file=file) from None
    if not objs:
        raise UsageError("empty file; expected a `vllm bench serve --save-result` file",
                         file=file)
    return objs


def parse_vllm_bench(text: str, file: str = "<input>") -> list[VllmRun]:
    """Every result in the file, each recomputed and checked when it has arrays."""
    objs = _objects(text, file)
    if len(objs) == 1 and isinstance(objs[0], list):
        objs = objs[0]
    runs: list[VllmRun] = []
    for i, obj in enumerate(objs):
        if not isinstance(obj, dict) or "completed" not in obj or "duration" not in obj:
            shape = type(obj).__name__
            raise UsageError(f"not a vllm bench serve result (item {i} is a {shape} without "
                             "'completed' and 'duration')", file=file)
        for key in ("completed", "duration"):
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise UsageError(f"not a vllm bench serve result (item {i}: {key} is "
                                 f"{json.dumps(value)[:40]}, not a count / seconds)", file=file)
        scalars = {k: v for k, v in obj.items() if k not in ARRAYS}
        arrays = {k: v for k, v in obj.items() if k in ARRAYS and isinstance(v, list)}
        run = VllmRun(index=i, scalars=scalars, arrays=arrays)
        if run.has_arrays:
            _recompute(run, file)
        runs.append(run)
    return runs


def records_from_arrays(arrays: dict[str, list[Any]]) -> list[RequestRecord]:
    """vLLM's per-request arrays as records: success is an empty error string (or, with
    no errors array, a non-zero ttft); latency defaults to ttft + sum(itl), which is
    exactly vLLM's latency (last token chunk - start)."""
    ttfts = arrays["ttfts"]
    n = len(ttfts)
    itls = arrays.get("itls") or [[] for _ in range(n)]
    outs = arrays.get("output_lens") or [0] * n
    ins = arrays.get("input_lens") or [0] * n
    errs = arrays.get("errors")
    lats = arrays.get("latencies")
    starts = arrays.get("start_times")
    t0 = min(starts) if starts else 0.0
    recs = []
    for i in range(n):
        ok = (errs[i] in ("", None)) if errs is not None else bool(ttfts[i])
        ttft = float(ttfts[i] or 0.0)
        gaps = [float(x) for x in (itls[i] or [])]
        chunks = [ttft]
        for g in gaps:
            chunks.append(chunks[-1] + g)
        e2el = float(lats[i]) if lats is not None and lats[i] is not None else chunks[-1]
        sent = float(starts[i]) - t0 if starts else 0.0
        rec = RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=sent,
                            sent=sent, ttft=ttft if ok else None, e2el=e2el if ok else None,
                            chunk_times=chunks if ok else [],
                            prompt_tokens=int(ins[i] or 0), output_tokens=int(outs[i] or 0),
                            usage_reported=True, status=200 if ok else None)
        if not ok:
            rec.error_kind = "vllm_error"
            rec.error = str(errs[i] if errs is not None else "failed")[:500]
        recs.append(rec)
    return recs


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _recompute(run: VllmRun, file: str) -> None:
    lens = {k: len(v) for k, v in run.arrays.items()}
    if len(set(lens.values())) > 1:
        run.warnings.append(f"{file}[{run.index}]: per-request arrays differ in length {lens}")
        return
    run.records = records_from_arrays(run.arrays)
    duration = float(run.scalars["duration"])
    s = summarize(run.records, duration).to_dict()
    run.recomputed = {k: s[k] for k in CHECKED if k in s}
    for key in CHECKED:
        if key not in run.scalars or run.scalars[key] is None or key not in s:
            continue
        try:
            have = float(run.scalars[key])
        except (TypeError, ValueError):
            continue
        mine = float(s[key])
        if not _close(have, mine):
            run.warnings.append(f"{file}[{run.index}]: {key} is {have:.6g} in the file but "
                                f"{mine:.6g} recomputed from its per-request arrays")


def request_counts(run: VllmRun) -> tuple[int, int]:
    """(completed, failed) requests of one result: vLLM's `failed` when the file has it,
    else num_prompts - completed, else the failed per-request records."""
    completed = int(run.scalars["completed"])
    failed = run.scalars.get("failed")
    prompts = run.scalars.get("num_prompts")
    if isinstance(failed, int) and not isinstance(failed, bool) and failed >= 0:
        return completed, failed
    if isinstance(prompts, int) and not isinstance(prompts, bool):
        return completed, max(prompts - completed, 0)
    return completed, sum(1 for r in run.records if r.ttft is None)


def import_outcome(runs: list[VllmRun], name: str) -> tuple[str | None, str, str]:
    """(verdict, reason, problem) of an import run. An import is not a gate: no verdict,
    whatever the numbers; ERROR when no request in the file completed, since then nothing
    was measured. `problem` is what the user is told on stderr ('' when nothing failed)."""
    counts = [request_counts(r) for r in runs]
    completed = sum(c for c, _ in counts)
    failed = sum(f for _, f in counts)
    total = completed + failed
    what = f"imported {len(runs)} vllm bench result(s) from {name}"
    if completed == 0:
        problem = f"every request failed (completed 0 of {total})"
        return "ERROR", f"{problem}; {what}", problem
    if failed:
        empty = sum(1 for c, _ in counts if c == 0)
        problem = f"{failed} of {total} requests failed" + (
            f" ({empty} of {len(runs)} results completed none)" if empty else "")
        return None, f"{problem}; {what}", problem
    return None, f"{completed} requests completed; {what}", ""


def benchmark_params(run: VllmRun) -> dict[str, Any]:
    """The run's settings (everything but the result numbers), for benchmark.params."""
    skip = set(CHECKED) | {"duration", "max_output_tokens_per_s", "max_concurrent_requests",
                           "request_goodput", "rtfx"}
    return {k: v for k, v in run.scalars.items()
            if k not in skip and not k.startswith(("p99_", "p90_", "p95_", "p50_"))}
