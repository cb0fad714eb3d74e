"""`gate bench` without the command line: probe, build the workload, run, store, report.

Every check that can fail runs before the first load request: each URL answers as an
OpenAI server, serves the model, and the prompts fit its max_model_len.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, StoreError, UsageError
from harness.loadgen import storage
from harness.loadgen.engine import Arrival, PhaseResult
from harness.loadgen.failures import FailureReport, explain
from harness.loadgen.health import HealthBounds, PhaseHealth
from harness.loadgen.phase import InProcessExecutor, PhaseOutcome, PhaseSpec
from harness.loadgen.probe import ServerInfo, probe_all, require_model
from harness.loadgen.records import Endpoint, RequestSpec
from harness.loadgen.sampler import MetricsSampler
from harness.loadgen.workloads import Workload, doc_qa, repeat, sharegpt, trace_replay
from harness.store.db import Store
from harness.store.runs import NewRun, finish_run, start_run


@dataclass(frozen=True)
class BenchOptions:
    urls: tuple[str, ...]
    model: str
    workload: Literal["doc-qa", "trace", "sharegpt"] = "doc-qa"
    workload_file: str | None = None
    docs: int = 64
    doc_tokens: int = 8000
    question_tokens: int = 64
    prefix_share: float = 0.0
    concurrency: int = 16
    requests: int | None = None
    rate: float | None = None
    arrival: Arrival = "poisson"
    burstiness: float = 1.0
    warmup: int = 0
    max_tokens: int = 128
    duration: float | None = None
    timeout: float = 1800.0
    api: Literal["completions", "chat"] = "completions"
    seed: int = 7
    slo: dict[str, float] = field(default_factory=dict)
    metrics_interval: float = 5.0
    scrape_metrics: bool = True
    progress: bool = True
    campaign: str = "bench"
    site: str = "local"
    args: tuple[str, ...] = ()
    # the site config's load.health when there is one
    health: HealthBounds = field(default_factory=HealthBounds)
    engine: str | None = None  # --engine / the config's engine: overrides detection
    # no tokenize route: count with one-token completions' usage (flagged in the notes)
    calibrate_with_usage: bool = False


@dataclass(frozen=True)
class BenchOutcome:
    run_id: int
    benchmark_id: int
    result: PhaseResult
    workload: Workload
    infos: list[ServerInfo]
    summary: dict[str, Any]
    verdict: str | None  # a bench is not a gate: None, or ERROR when nothing completed
    reason: str = ""
    health: PhaseHealth = field(default_factory=PhaseHealth)
    # most requests failed: the first failures in the server's words and a likely cause
    failures: FailureReport | None = None

    @property
    def exit_code(self) -> int:
        """0 every request completed, 2 some failed, 3 none completed."""
        s = self.result.summary
        return EXIT_ERROR if s.completed == 0 else EXIT_INCONCLUSIVE if s.failed else 0


def outcome(completed: int, failed: int,
            failures: FailureReport | None = None) -> tuple[str | None, str]:
    """(verdict, reason) stored on a bench run. A bench decides nothing, so it has no
    verdict (RECORDED, see harness.verdict.effective) unless it failed outright. When
    most requests failed, the reason carries the first failure in the server's words."""
    first = f" (first: {failures.samples[0].line()})" if failures and failures.samples else ""
    if completed == 0:
        return "ERROR", f"all {failed} requests failed{first}"
    if failed:
        return None, f"{failed} of {failed + completed} requests failed{first}"
    return None, f"{completed} requests completed"


@contextmanager
def left_running(run_id: int, cause: BaseException | None = None) -> Iterator[None]:
    """A store that fails while a run is open cannot record its end either: say which run
    is left RUNNING and how to end it once the store is writable again."""
    try:
        yield
    except StoreError as err:
        raise StoreError(err.message, file=err.file,
                         hint=(err.hint + "; " if err.hint else "")
                         + f"run {run_id} is left RUNNING: `gate runs abort {run_id}` "
                           "ends it once the store is writable") from (cause or err)


def _check_fit(specs: list[RequestSpec], infos: list[ServerInfo], max_tokens: int,
               estimate: int = 0) -> None:
    """Refuse before the load when a prompt + its output cannot fit the context."""
    longest = max((s.prompt_tokens or estimate for s in specs), default=0)
    for info in infos:
        if info.max_model_len and longest + max_tokens > info.max_model_len:
            raise UsageError(f"prompts of {longest} tokens + {max_tokens} output tokens exceed "
                             f"max_model_len {info.max_model_len} of {info.url}",
                             key="--doc-tokens")


def build_workload(o: BenchOptions, tokenize_url: str | None) -> tuple[Workload, list[RequestSpec]]:
    """(workload, specs): warm-up requests first (on their own documents, so the measured
    documents stay cold), then `requests` measured ones cycling over the documents."""
    if o.workload == "doc-qa":
        wl = doc_qa(o.docs, o.doc_tokens, o.question_tokens, o.seed,
                    tokenize_url=tokenize_url, prefix_share=o.prefix_share,
                    max_tokens=o.max_tokens, model=o.model,
                    usage_fallback=o.calibrate_with_usage)
        warm: list[RequestSpec] = []
        if o.warmup:
            warm = doc_qa(min(o.warmup, o.docs), o.doc_tokens, o.question_tokens, o.seed,
                          tokenize_url=tokenize_url, prefix_share=o.prefix_share,
                          max_tokens=o.max_tokens, model=o.model, first_doc=o.docs,
                          usage_fallback=o.calibrate_with_usage).specs
        n = o.requests or o.docs
        return wl, repeat(warm, o.warmup) + repeat(wl.specs, n)
    if o.workload_file is None:
        raise UsageError(f"--workload {o.workload} needs --workload-file FILE")
    if o.workload == "trace":
        wl = trace_replay(o.workload_file, seed=o.seed, default_max_tokens=o.max_tokens)
    else:
        wl = sharegpt(o.workload_file, (o.requests or 1000) + o.warmup, seed=o.seed)
    specs = wl.specs if o.requests is None else repeat(wl.specs, o.requests + o.warmup)
    return wl, specs


def trace_arrival(o: BenchOptions, specs: list[RequestSpec]) -> Arrival:
    """A trace with a timestamp on every line keeps its own arrival times unless a --rate
    overrides them; one without any is a list of prompts, replayed closed loop at
    --concurrency (or at --rate); half-timed is an error naming the file."""
    if o.workload != "trace" or o.rate is not None:
        return o.arrival
    timed = sum(1 for s in specs if s.at is not None)
    if timed == len(specs):
        return "trace"
    if timed:
        raise UsageError(f"{timed} of {len(specs)} trace lines have a timestamp: give one "
                         "on every line (replayed at those times) or on none (closed loop "
                         "at --concurrency)", file=o.workload_file)
    return o.arrival


def run_bench(o: BenchOptions, store_url: str | None) -> BenchOutcome:
    if o.concurrency < 1:
        raise UsageError("--concurrency must be >= 1", key="--concurrency")
    if o.rate is not None and not o.rate > 0:
        raise UsageError("--rate must be positive", key="--rate")
    if o.requests is not None and o.requests < 1:
        raise UsageError("--requests must be >= 1", key="--requests")
    if o.warmup < 0:
        raise UsageError("--warmup must be >= 0", key="--warmup")
    if not o.urls:
        raise UsageError("give at least one --url", key="--url")
    infos = probe_all(list(o.urls), engine=o.engine)
    for info in infos:
        require_model(info, o.model)
    wl, specs = build_workload(o, o.urls[0])
    _check_fit(specs, infos, o.max_tokens,
               o.doc_tokens + o.question_tokens if o.workload == "doc-qa" else 0)
    endpoints = [Endpoint(u, o.model, i) for i, u in enumerate(o.urls)]
    arrival = trace_arrival(o, specs)
    simulated = any("gate_sim" in info.raw for info in infos)
    store = Store(store_url)
    try:
        run_id = start_run(store, NewRun(campaign=o.campaign, site=o.site, customer="",
                                         kind="bench", simulated=simulated, args=o.args,
                                         hosts=tuple(o.urls)))
        params = {
            "urls": list(o.urls), "model": o.model, "workload": wl.kind,
            "workload_params": wl.params, "calibrated": wl.calibrated, "exact": wl.exact,
            "notes": wl.notes, "concurrency": o.concurrency, "rate": o.rate,
            "arrival": arrival, "burstiness": o.burstiness, "warmup": o.warmup,
            "requests": len(specs) - o.warmup, "max_tokens": o.max_tokens, "api": o.api,
            "duration": o.duration, "timeout": o.timeout, "seed": o.seed, "slo": o.slo,
            "servers": [{"url": i.url, "models": i.models, "version": i.version,
                         "max_model_len": i.max_model_len, "card": i.raw,
                         **(i.engine.to_dict() if i.engine else {})} for i in infos],
            # top-level so the report's versions table shows them
            "engine": ", ".join(sorted({i.engine.name for i in infos if i.engine})),
            "engine_version": ", ".join(sorted({i.version for i in infos if i.version})),
        }
        spec = PhaseSpec(endpoints=tuple(endpoints), requests=tuple(specs),
                         concurrency=o.concurrency, rate=o.rate, arrival=arrival,
                         burstiness=o.burstiness, warmup=o.warmup, duration=o.duration,
                         seed=o.seed, timeout=o.timeout, api=o.api, slo=o.slo or None,
                         tag=f"gate-r{run_id}", health=o.health)
        phase = storage.PhaseWriter(store, run_id, storage.PhaseKey(tier=o.concurrency),
                              params=params)
        done: PhaseOutcome | None = None
        try:
            sampler = MetricsSampler(list(o.urls) if o.scrape_metrics else [],
                                     o.metrics_interval if o.scrape_metrics else 0)
            with sampler:
                done = InProcessExecutor(progress=o.progress).run(spec, phase.sink)
        except BaseException as exc:
            with left_running(run_id, exc):
                phase.finish(done, status="ABORTED")
                finish_run(store, run_id, verdict="ERROR", reason="bench interrupted",
                           status="ABORTED")
            raise
        with left_running(run_id):
            rows, evidence = storage.sampled(sampler)
            failures = explain(done.records, api=o.api, model=o.model)
            summary = phase.finish(done, series=rows, cache_evidence=evidence,
                                   extra={"failures": failures.to_dict()} if failures else None)
            result = done.result
            verdict, reason = outcome(result.summary.completed, result.summary.failed, failures)
            finish_run(store, run_id, verdict=verdict,  # NULL: not a gate
                       reason=reason, simulated=simulated)
        return BenchOutcome(run_id=run_id, benchmark_id=phase.benchmark_id, result=result,
                            workload=wl, infos=infos, summary=summary, verdict=verdict,
                            reason=reason, health=done.health, failures=failures)
    finally:
        store.close()


def parse_slo(items: tuple[str, ...]) -> dict[str, float]:
    """vLLM's --goodput KEY:VALUE pairs (ms)."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition(":")
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not sep or key not in ("ttft", "tpot", "e2el") or not v >= 0:
            raise UsageError(f"bad --goodput {item!r}: use ttft|tpot|e2el:MILLISECONDS",
                             key="--goodput")
        out[key] = v
    return out


def save_path(path: str | None) -> Path | None:
    if path is None:
        return None
    p = Path(path)
    if not p.parent.is_dir():
        raise UsageError(f"directory {p.parent} does not exist", key="--save")
    return p
