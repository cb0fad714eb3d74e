"""The `gate` command line. Commands load lazily so `gate --help` stays fast.

Each command lives in its own module under harness.cli and is named in COMMANDS with its
one-line help; nothing heavy (pandas, ansible, weasyprint, aiohttp) is imported before a
command actually runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from harness import __version__

# name -> (module, attribute, short help). Keep the short help here: listing commands in
# `gate --help` must not import them.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("harness.cli.init_cmd", "init", "Write a commented site config and inventory."),
    "hosts": ("harness.cli.hosts_cmd", "hosts", "Check hosts, record host keys."),
    "run": ("harness.cli.run_cmd", "run", "Run one gate (G1..G4)."),
    "campaign": ("harness.cli.run_cmd", "campaign",
                 "Run G1..G4 in order, stop at the first not PASS."),
    "resume": ("harness.cli.run_cmd", "resume", "Continue an unfinished G3/G4 run."),
    "status": ("harness.cli.status_cmd", "status", "The campaign's gates, verdicts, dates."),
    "runs": ("harness.cli.runs_cmd", "runs", "Run history, one run's checks; abort a stale run."),
    "fleet": ("harness.cli.fleet_cmd", "fleet", "Every site and campaign: gates, verdicts, flags."),
    "signoff": ("harness.cli.runs_cmd", "signoff",
                "Record a reviewer / vendor / customer sign-off."),
    "report": ("harness.cli.report_cmd", "report", "Render a run's or a campaign's report."),
    "export": ("harness.cli.report_cmd", "export", "Write / verify an evidence pack."),
    "sync": ("harness.cli.sync_cmd", "sync", "Merge finished runs with another store or a pack."),
    "bench": ("harness.cli.bench_cmd", "bench", "Load one endpoint set; no gate."),
    "import": ("harness.cli.bench_cmd", "import_", "Store a vllm bench result as a run."),
    "probe": ("harness.cli.probe_cmd", "probe",
              "What engine a URL serves and what G3 can prove there."),
    "sim": ("harness.cli.sim_cmd", "sim", "Run the simulated engine."),
    "demo": ("harness.cli.demo_cmd", "demo", "The whole campaign against the simulated lab."),
    "db": ("harness.cli.db_cmd", "db", "Store maintenance (upgrade)."),
    "parse": ("harness.cli.parse_cmd", "parse", "Read a captured tool output as G1 / G2 do."),
    "plan": ("harness.cli.plan_cmd", "plan",
             "The SLA as storage requirements, against G2's results."),
    "config": ("harness.cli.config_cmd", "config",
               "Show the effective config; validate it with the inventory."),
    "bundle": ("harness.cli.bundle_cmd", "bundle", "Make / verify an offline install bundle."),
}

EPILOG = """Exit codes: 0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR, 4 usage / configuration /
prerequisite error.

Start here: `gate demo` runs the whole campaign against a simulated lab;
`gate init DIR` writes a site config to edit for a real site.

Shell completion: eval "$(_GATE_COMPLETE=bash_source gate)" (zsh_source, fish_source).
The man page: docs/gate.1 in gate's source (man -l docs/gate.1)."""


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name][0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        module, attr, _ = COMMANDS[cmd_name]
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gate")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """gate: gated joint testing of KV-cache storage accelerators (G1 arrival, G2
    baselines, G3 A/B main gate, G4 72 h stability)."""
    from harness.secrets import take_sudo_password

    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    # Out of the environment before anything runs: no child process may inherit it.
    ctx.obj["sudo_password"] = take_sudo_password()


def main(argv: list[str] | None = None) -> Any:
    """Console entry point (harness/entry.py: one line and an exit code per outcome)."""
    from harness.cli.context import worded
    from harness.entry import run_command

    return run_command(cli, sys.argv[1:] if argv is None else argv, "gate", worded=worded)
