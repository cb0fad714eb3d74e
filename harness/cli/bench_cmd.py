"""`gate bench` (the load generator alone, no gate) and `gate import vllm-bench FILE`.

Heavy imports (aiohttp, numpy, the store) happen inside the commands, so `gate --help`
and `gate bench --help` stay fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.cli.common import config_option, db_option, emit_json, json_option

if TYPE_CHECKING:
    from harness.loadgen.health import HealthBounds
    from harness.store.db import Store
    from harness.store.runs import CampaignRef

# harness.loadgen.engines.ENGINE_NAMES, spelled out so `gate bench --help` imports nothing
ENGINE_CHOICES = ("vllm", "sglang", "tgi", "llama.cpp", "llama-cpp-python", "ollama",
                  "generic")

BENCH_EPILOG = """Prints vLLM's "Serving Benchmark Result" block (same labels and widths) and a
gate section, ending with the load generator's own error (its delay against the TTFT p50 it
measured, an open loop's achieved vs target rate) and whether it was saturated, and why
(--json: `client`); progress goes to stderr. A bench is not a gate: its run is stored without a
verdict (`recorded`), or ERROR when no request completed. Exit 0 when every request
completed, 2 when some failed (counted by kind in the summary), 3 when none completed or
an endpoint is down, 4 for bad options or a model the server does not serve."""


@click.command("bench", epilog=BENCH_EPILOG)
@click.option("--url", "urls", multiple=True, required=True,
              help="Endpoint base URL (http://host:port); repeat for several instances.")
@click.option("--model", required=True, help="Served model name (as /v1/models lists it).")
@click.option("--workload", type=click.Choice(["doc-qa", "trace", "sharegpt"]),
              default="doc-qa", show_default=True)
@click.option("--workload-file", default=None, help="JSONL trace or local ShareGPT JSON.")
@click.option("--docs", type=int, default=64, show_default=True, help="doc-qa documents.")
@click.option("--doc-tokens", type=int, default=8000, show_default=True)
@click.option("--question-tokens", type=int, default=64, show_default=True)
@click.option("--prefix-share", type=float, default=0.0, show_default=True,
              help="Fraction of each document shared by all (prefix cache case).")
@click.option("--concurrency", type=int, default=16, show_default=True)
@click.option("--requests", type=int, default=None,
              help="Measured requests (default: one per document / trace line).")
@click.option("--rate", type=float, default=None, help="Open loop: requests/s (capped at "
              "--concurrency). Default: closed loop.")
@click.option("--arrival", type=click.Choice(["poisson", "constant", "trace"]),
              default="poisson", show_default=True)
@click.option("--burstiness", type=float, default=1.0, show_default=True)
@click.option("--warmup", type=int, default=0, show_default=True,
              help="Warm-up requests (own documents; kept, excluded from the summary).")
@click.option("--max-tokens", type=int, default=128, show_default=True)
@click.option("--duration", type=float, default=None, help="Stop sending after S seconds.")
@click.option("--timeout", type=float, default=1800.0, show_default=True,
              help="Per-request timeout, s.")
@click.option("--api", type=click.Choice(["completions", "chat"]), default="completions",
              show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--goodput", multiple=True, help="SLO KEY:MS (ttft, tpot, e2el), as vLLM.")
@click.option("--metrics-interval", type=float, default=5.0, show_default=True,
              help="Scrape /metrics every S seconds during the phase (0: only before/after).")
@click.option("--no-metrics", is_flag=True, help="Do not scrape /metrics.")
@click.option("--no-progress", is_flag=True, help="No live progress on stderr.")
@click.option("--campaign", default=None,
              help="Campaign to file under, NAME or SITE/CAMPAIGN (default: the config's, "
                   "else `bench`).")
@click.option("--save", "save", default=None, help="Also write a vLLM-style result JSON.")
@click.option("--requests-out", "requests_out", default=None, metavar="FILE.jsonl|FILE.csv",
              help="Also write one row per request (times, tokens, error) as JSON lines or "
                   "CSV, by the file's suffix.")
@click.option("--engine", default=None, type=click.Choice(ENGINE_CHOICES),
              help="The engine behind --url, when detection guesses wrong (default: the "
              "config's engine:, else detected from /v1/models, /version, /metrics).")
@click.option("--calibrate-with-usage", is_flag=True,
              help="Server without a tokenize route (SGLang, Ollama): calibrate prompt "
              "lengths from one-token completions' usage.prompt_tokens. Flagged: the "
              "server then has the documents in its prefix cache.")
@config_option
@db_option
@json_option
def bench(urls: tuple[str, ...], model: str, workload: str, workload_file: str | None,
          docs: int, doc_tokens: int, question_tokens: int, prefix_share: float,
          concurrency: int, requests: int | None, rate: float | None, arrival: str,
          burstiness: float, warmup: int, max_tokens: int, duration: float | None,
          timeout: float, api: str, seed: int, goodput: tuple[str, ...],
          metrics_interval: float, no_metrics: bool, no_progress: bool, campaign: str | None,
          save: str | None, requests_out: str | None, engine: str | None,
          calibrate_with_usage: bool, config_path: str, db_url: str | None, as_json: bool) -> None:
    """Load one endpoint set with one workload and store it as a run of kind bench."""
    from harness.cli.outputs import check_output
    from harness.loadgen.bench import BenchOptions, parse_slo, run_bench, save_path
    from harness.loadgen.report import (
        client_error,
        format_summary,
        percentile_table,
        to_vllm_json,
        write_requests,
    )

    save_to = save_path(save)
    rows_to = None
    if requests_out is not None:  # checked before any request is sent
        rows_to = check_output(Path(requests_out), "--requests-out")
        if rows_to.suffix not in (".jsonl", ".csv"):
            from harness.errors import UsageError

            raise UsageError("name a .jsonl or a .csv file", file=requests_out,
                             key="--requests-out")
    opts = BenchOptions(
        urls=urls, model=model, workload=workload,  # type: ignore[arg-type]
        workload_file=workload_file, docs=docs, doc_tokens=doc_tokens,
        question_tokens=question_tokens, prefix_share=prefix_share, concurrency=concurrency,
        requests=requests, rate=rate, arrival=arrival,  # type: ignore[arg-type]
        burstiness=burstiness, warmup=warmup, max_tokens=max_tokens, duration=duration,
        timeout=timeout, api=api, seed=seed, slo=parse_slo(goodput),  # type: ignore[arg-type]
        metrics_interval=metrics_interval, scrape_metrics=not no_metrics,
        progress=not no_progress, args=tuple(sys.argv[1:]),
        **_filed_under(config_path, campaign, db_url), health=_health_bounds(config_path),
        engine=engine or _configured_engine(config_path),
        calibrate_with_usage=calibrate_with_usage,
    )
    out = run_bench(opts, db_url)
    res = out.result
    if save_to is not None:
        doc = to_vllm_json(res, model=model, concurrency=concurrency, rate=rate,
                           burstiness=burstiness, extra={"run_id": out.run_id,
                                                         "calibrated": out.workload.calibrated})
        save_to.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    if as_json:
        emit_json({"run_id": out.run_id, "benchmark_id": out.benchmark_id,
                   "verdict": out.verdict, "reason": out.reason, "summary": out.summary,
                   "calibrated": out.workload.calibrated, "notes": out.workload.notes,
                   "client": client_error(out.health)})
    else:
        urls_by = {i: u for i, u in enumerate(urls)}
        click.echo(format_summary(res.summary, concurrency=concurrency, rate=rate,
                                  per_instance=res.per_instance, urls=urls_by,
                                  calibrated=out.workload.calibrated,
                                  evidence=out.summary.get("cache_evidence"),
                                  health=out.health))
        click.echo(percentile_table(res.summary))
        click.echo(f"stored as run {out.run_id} (benchmark {out.benchmark_id})")
    if rows_to is not None:
        n = write_requests(res.records, rows_to)
        click.echo(f"gate: {n} requests written to {rows_to}", err=True)
    for note in out.workload.notes:
        click.echo(f"gate: note: {note}", err=True)
    if out.failures is not None:
        for line in out.failures.lines():
            click.echo(f"gate: {line}", err=True)
    if out.health.saturated:
        click.echo(f"gate: warning: client saturated: {out.health.reason}: the numbers above "
                   "may show the load generator's limit, not the server's", err=True)
    if out.exit_code:
        sys.exit(out.exit_code)  # SystemExit, not click's Exit: `python -m harness` drops a return


def _filed_under(config_path: str, campaign: str | None, db_url: str | None,
                 store: Store | None = None) -> dict[str, str]:
    """Campaign and site names (a campaign's name is unique within its site only).

    --campaign SITE/CAMPAIGN: that campaign of that site. A bare --campaign: within the
    site config's site when there is a config (a bench needs none), else the campaign of
    that name the store already holds (refused, naming them, when two sites have one),
    else at site `local`. No --campaign: the config's campaign and site, else `bench` at
    site `local`. `store`: the open store, else the one at `db_url` when it exists."""
    path = Path(config_path)
    cfg = None
    if path.is_file():
        from harness.config.loader import load_config

        cfg = load_config(path).config
    if campaign is None:
        return ({"campaign": cfg.campaign.name, "site": cfg.site.name} if cfg is not None
                else {"campaign": "bench", "site": "local"})
    from harness.store.runs import split_campaign

    site, name = split_campaign(campaign)
    if site is not None:
        return {"campaign": name, "site": site}
    if cfg is not None:
        return {"campaign": campaign, "site": cfg.site.name}
    found = _stored_campaign(campaign, db_url, store)
    return ({"campaign": found.name, "site": found.site} if found is not None
            else {"campaign": campaign, "site": "local"})


def _stored_campaign(campaign: str, db_url: str | None,
                     store: Store | None) -> CampaignRef | None:
    """The campaign a bare name names in the store (None when it holds none, or when there
    is no store yet: a bench never makes an empty one before it has a run to keep)."""
    from harness.store.runs import find_campaign

    if store is not None:
        return find_campaign(store, campaign)
    from harness.store.db import Store, absent_file

    if absent_file(db_url) is not None:
        return None
    opened = Store(db_url)
    try:
        return find_campaign(opened, campaign)
    finally:
        opened.close()


def _configured_engine(config_path: str) -> str | None:
    """The site config's `engine:` when there is a config that names one."""
    path = Path(config_path)
    if not path.is_file():
        return None
    from harness.config.loader import load_config

    return load_config(path).config.engine


def _health_bounds(config_path: str) -> HealthBounds:
    """The site config's load.health bounds when there is a config, else the defaults."""
    from harness.loadgen.health import HealthBounds

    path = Path(config_path)
    if not path.is_file():
        return HealthBounds()
    from harness.config.loader import load_config

    return HealthBounds.from_dict(load_config(path).config.load.health.model_dump())


@click.group("import")
def import_() -> None:
    """Store results produced by other tools as a run of kind import."""


@import_.command("vllm-bench")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--campaign", default=None,
              help="Campaign to file under, NAME or SITE/CAMPAIGN (default: the config's, "
                   "else `bench`).")
@config_option
@db_option
@json_option
def vllm_bench(file: Path, campaign: str | None, config_path: str, db_url: str | None,
               as_json: bool) -> None:
    """A `vllm bench serve --save-result` JSON (one result, a sweep summary list, or JSON
    lines). Aggregates are recomputed from per-request arrays when the file has them; a
    disagreement with the file's own summary is a warning on stderr.

    An import is not a gate: the run is stored without a verdict (RECORDED), its reason
    says what was imported. Some requests failed: a warning, exit 0. Every request
    failed: the run is ERROR, exit 3."""
    from harness.errors import EXIT_ERROR, UsageError
    from harness.loadgen.bench import left_running
    from harness.loadgen.storage import PhaseKey, PhaseWriter
    from harness.loadgen.vllm_import import benchmark_params, import_outcome, parse_vllm_bench
    from harness.store.db import Store
    from harness.store.runs import NewRun, add_artifact, finish_run, start_run

    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror}", file=str(file)) from None
    except UnicodeDecodeError:
        raise UsageError("not a text file", file=str(file)) from None
    runs = parse_vllm_bench(text, str(file))
    verdict, reason, problem = import_outcome(runs, file.name)
    store = Store(db_url)
    try:
        where = _filed_under(config_path, campaign, db_url, store)
        run_id = start_run(store, NewRun(campaign=where["campaign"], site=where["site"],
                                         customer="", kind="import",
                                         args=("vllm-bench", str(file))))
        listed: list[dict[str, Any]] = []
        try:
            add_artifact(store, run_id, file, kind="vllm-bench")
            for r in runs:
                conc = r.scalars.get("max_concurrency")
                key = PhaseKey(tier=int(conc) if isinstance(conc, int) else 0,
                               repetition=int(r.scalars.get("run_number", r.index) or 0),
                               driver="vllm-bench")
                phase = PhaseWriter(store, run_id, key, params=benchmark_params(r))
                bid = phase.benchmark_id
                if r.records:
                    phase.sink(r.records)
                # the file's own scalars stand for the phase's summary (no health: the
                # load ran elsewhere, unobserved)
                phase.finish(None, status="FINISHED",
                             duration=float(r.scalars.get("duration") or 0.0),
                             extra={**r.scalars, "recomputed": r.recomputed,
                                    "warnings": r.warnings})
                for w in r.warnings:
                    click.echo(f"gate: warning: {w}", err=True)
                listed.append({"benchmark_id": bid, "index": r.index,
                               "completed": r.scalars.get("completed"),
                               "failed": r.scalars.get("failed"),
                               "median_ttft_ms": r.scalars.get("median_ttft_ms"),
                               "requests_stored": len(r.records), "warnings": r.warnings})
        except BaseException as exc:
            with left_running(run_id, exc):
                finish_run(store, run_id, verdict="ERROR", status="ABORTED",
                           reason=f"import of {file.name} did not finish")
            raise
        with left_running(run_id):
            finish_run(store, run_id, verdict=verdict,  # NULL: no gate
                       reason=reason)
    finally:
        store.close()
    if as_json:
        emit_json({"run_id": run_id, "file": str(file), "verdict": verdict, "reason": reason,
                   "benchmarks": listed})
    else:
        click.echo(f"imported {len(runs)} result(s) from {file} as run {run_id}")
        for item in listed:
            extra = f", {item['requests_stored']} requests" if item["requests_stored"] else ""
            failed = f", failed {item['failed']}" if item["failed"] else ""
            click.echo(f"  benchmark {item['benchmark_id']}: completed {item['completed']}"
                       f"{failed}, median TTFT {item['median_ttft_ms']} ms{extra}")
    if verdict == "ERROR":
        click.echo(f"gate: error: {file}: {problem}; stored as run {run_id} (ERROR)", err=True)
        sys.exit(EXIT_ERROR)
    if problem:
        click.echo(f"gate: warning: {file}: {problem}; stored as run {run_id}, without a "
                   "verdict like every import", err=True)
