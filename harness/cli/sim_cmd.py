"""`gate sim`: run one simulated engine in the foreground."""

from __future__ import annotations

from pathlib import Path

import click

from harness.sim.options import engine_options, spec_from_context


@click.command(
    "sim",
    epilog="""Examples:

  gate sim                                  # r1-qwen32b, baseline arm, port 8000

  gate sim --external-tier on --tier-dir /tmp/tier --port 8001 --speed 50

  gate sim --profile r2-moe480b --tp 8 --diskstats /tmp/lab/diskstats

Everything it serves is flagged simulated (/v1/models `gate_sim`, /metrics gate_sim_*).
Stop it with Ctrl-C or SIGTERM. Background engines: python -m harness.sim.control.""",
)
@engine_options
@click.option("--url-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              hidden=True, help="Write the URL here once listening (for controllers).")
@click.pass_context
def sim(ctx: click.Context, url_file: Path | None) -> None:
    """Run the simulated engine: an OpenAI-compatible server shaped like vLLM (streaming
    completions and chat, /tokenize, /health, /v1/models, Prometheus /metrics with vLLM
    and LMCache names) over a model of prefill, decode, a GPU prefix cache and an optional
    external KV tier."""
    from harness.sim.run import run_foreground

    run_foreground(spec_from_context(ctx), url_file=url_file)
