"""The simulated engine's command: `gate sim ...` and `python -m harness.sim ...`.

Why it lives here and not in harness.cli: the engine is a program of its own (the
controller and the spawner start it as `python -m harness.sim`), and the simulator must
not depend on the command line above it. harness.cli.sim_cmd re-exports `sim` for
`gate sim`; `main` runs it alone with gate's exit contract and one-line errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.sim.options import engine_options, spec_from_context

PROG = "gate sim"  # the name in usage lines: the same whether run by gate or by -m


@click.command(
    "sim",
    context_settings={"help_option_names": ["-h", "--help"]},
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


def main(argv: list[str] | None = None) -> None:
    """`python -m harness.sim ARGV`, answering as `gate sim ARGV` does (harness/entry.py)."""
    from harness.entry import run_command
    from harness.secrets import take_sudo_password

    take_sudo_password()  # as gate does first: no child of the engine inherits it
    run_command(sim, sys.argv[1:] if argv is None else argv, PROG)
