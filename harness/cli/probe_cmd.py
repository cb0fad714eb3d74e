"""`gate probe URL`: what a server is and what a campaign can prove there, before anyone
spends a day on one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.bench_cmd import ENGINE_CHOICES
from harness.cli.common import config_option, emit_json, json_option

if TYPE_CHECKING:
    from harness.loadgen.capabilities import Assessment

PROBE_EPILOG = """Sends a handful of small requests: GET /v1/models, /version, /info, /api/version,
/metrics and the engine's health route; one tokenize call; one one-token streamed
completion and one chat request, with the same headers as a load. Exit 0 when G3 could
decide a cell with such a server as its accelerated arm, 2 when it answers but G3 could
not (the output says why: output length not fixable, nothing proves a tier read, no
completion), 3 when it does not answer as an OpenAI-compatible server, 4 for a model it
does not serve."""


@click.command("probe", epilog=PROBE_EPILOG)
@click.argument("urls", nargs=-1, required=True, metavar="URL|HOST:PORT...")
@click.option("--model", default=None,
              help="Model to try (default: the first one the server lists).")
@click.option("--engine", default=None, type=click.Choice(ENGINE_CHOICES),
              help="Take the server for this engine (default: the config's engine:, "
              "else detected).")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Per request, s.")
@config_option
@json_option
def probe(urls: tuple[str, ...], model: str | None, engine: str | None, timeout: float,
          config_path: str, as_json: bool) -> None:
    """Which engine answers at each URL (and why we think so), which endpoints answer,
    what evidence its /metrics can give, and what G3 will be able to prove there.
    `gpu1:8000` without a scheme is http://gpu1:8000, as curl takes it."""
    from harness.errors import EXIT_INCONCLUSIVE

    configured, allow_storage = _site_settings(config_path)
    results = []
    for url in urls:
        click.echo(f"gate: probing {url}", err=True)
        results.append(assess_url(url, model, engine or configured, timeout, allow_storage))
    if as_json:
        emit_json([a.to_dict() for a in results])
    else:
        for a in results:
            click.echo("\n".join(a.lines()))
    if not all(a.g3_can_decide for a in results):
        sys.exit(EXIT_INCONCLUSIVE)


def assess_url(url: str, model: str | None, engine: str | None, timeout: float,
               allow_storage: bool) -> Assessment:
    """One server probed and assessed (`gate probe`, `gate hosts check --engines`).
    EndpointError when it does not answer as an OpenAI server, UsageError when it does
    not serve `model`."""
    import asyncio

    from harness.loadgen.capabilities import assess
    from harness.loadgen.engines import PROFILES
    from harness.loadgen.probe import probe as probe_server
    from harness.loadgen.probe import require_model
    from harness.loadgen.route_checks import check_routes

    info = asyncio.run(probe_server(url, timeout, engine))
    chosen = model or info.models[0]
    require_model(info, chosen)
    routes = asyncio.run(check_routes(info, chosen, timeout))
    detection = info.engine
    return assess(
        url=info.url, profile=detection.profile if detection else PROFILES["generic"],
        version=info.version, why=detection.why if detection else [],
        models=info.models, max_model_len=info.max_model_len, routes=routes,
        metric_names=info.metric_names, allow_storage_evidence=allow_storage)


def _site_settings(config_path: str) -> tuple[str | None, bool]:
    """(engine:, gates.g3.evidence.allow_storage_evidence) of the site config, when there
    is one; a probe needs none."""
    path = Path(config_path)
    if not path.is_file():
        return None, False
    from harness.config.loader import load_config

    cfg = load_config(path).config
    return cfg.engine, cfg.gates.g3.evidence.allow_storage_evidence
