"""Open what a command needs (config, store) with one-line errors, not tracebacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.config.loader import LoadedConfig
    from harness.store import Store


def open_config(path: str, overrides: Sequence[str] = ()) -> LoadedConfig:
    """The config at `path` with each `--set key=VALUE` of `overrides` applied and
    validated like the file."""
    from harness.config.loader import load_config

    return load_config(path, overrides)


def open_store(url: str | None) -> Store:
    from harness.store import Store

    return Store(url)


def campaign_name(config_path: str, explicit: str | None) -> str | None:
    """--campaign wins; else the config's campaign if the config exists; else None."""
    if explicit:
        return explicit
    from pathlib import Path

    if Path(config_path).exists() or config_path != "gate.yaml":
        return open_config(config_path).config.campaign.name
    return None
