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
