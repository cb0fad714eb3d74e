"""Options and helpers shared by the commands: config, inventory, store, output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_option(f: F) -> F:
    return click.option(
        "-c", "--config", "config_path", default="gate.yaml", show_default=True,
        envvar="GATE_CONFIG", help="Site config (YAML).",
    )(f)


def set_option(f: F) -> F:
    """`--set dotted.key=VALUE`, repeatable: one config value from the command line,
    validated like the file (harness/config/overrides.py)."""
    return click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="Override one config value (repeatable): a dotted key and a YAML value, e.g. "
             "--set gates.g3.tiers=[16]. Validated like gate.yaml; recorded on the run, and "
             "a resume needs the same --set.",
    )(f)


def inventory_option(f: F) -> F:
    return click.option(
        "-i", "--inventory", "inventory_path", default=None,
        help="Ansible inventory (default: the config's `inventory`).",
    )(f)


def db_option(f: F) -> F:
    return click.option(
        "--db", "db_url", default=None, envvar="GATE_DB",
        help="Store URL (default sqlite:///./gate.db).",
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(f)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def stdout_console() -> Any:
    from rich.console import Console

    return Console()
