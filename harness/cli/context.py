"""Open what a command needs (config, store) with one-line errors, not tracebacks; and word
the store's errors for the command line.

The store raises typed errors that say what happened and what fixes it in words any
caller can use (harness.errors); only the command line knows its own commands and flags
(`gate runs list`, `--db`), so `worded` adds them here, per error type, at the one place
every command's error is printed (harness.cli.main).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.errors import (
    GateError,
    LockError,
    NotFoundError,
    RunStateError,
    StoreBusyError,
    StoreDamagedError,
    StoreFrozenError,
    StoreReadOnlyError,
    StoreUrlError,
)

if TYPE_CHECKING:
    from harness.config.loader import LoadedConfig
    from harness.store import Store

OTHER_STORE = "point --db / GATE_DB at another store"


def open_config(path: str, overrides: Sequence[str] = ()) -> LoadedConfig:
    """The config at `path` with each `--set key=VALUE` of `overrides` applied and
    validated like the file."""
    from harness.config.loader import load_config

    return load_config(path, overrides)


def open_store(url: str | None, *, existing: bool = False) -> Store:
    """The store at `url`; with `existing` (commands that only read or amend runs) a
    SQLite file that is not there is a usage error instead of a new empty store."""
    from harness.store import Store

    if existing:
        from harness.store.db import absent_file

        missing = absent_file(url)
        if missing is not None:
            raise StoreUrlError(f"no store at {missing.absolute()}: nothing has run here",
                                hint="run this where the gates ran, or point --db / GATE_DB "
                                     "at their store; `gate demo` prints its store")
    return Store(url)


def campaign_name(config_path: str, explicit: str | None) -> tuple[str, str] | None:
    """(how the store finds it, how it is shown): --campaign wins, as given (SITE/CAMPAIGN
    or a bare name); else the config's campaign if the config exists, found within the
    config's site (another site's campaign of the same name is another campaign) and shown
    by its name; else None."""
    if explicit:
        return explicit, explicit
    from pathlib import Path

    if Path(config_path).exists() or config_path != "gate.yaml":
        cfg = open_config(config_path).config
        return f"{cfg.site.name}/{cfg.campaign.name}", cfg.campaign.name
    return None


def gone_hint(run_id: int) -> str:
    """What to do about a RUNNING run whose process is gone."""
    return (f"continue it with `gate resume {run_id}` (G3, G4), or end it with "
            f"`gate runs abort {run_id}` (results kept)")


def _cli_hint(exc: GateError) -> str | None:
    """The hint the command line gives for `exc`, or None to keep the store's."""
    if isinstance(exc, StoreDamagedError):
        return f"{exc.hint} or a `gate export` pack, or {OTHER_STORE}"
    if isinstance(exc, StoreFrozenError):
        return None  # another store would not save the run under way
    if isinstance(exc, StoreReadOnlyError):
        return f"{exc.hint}, or {OTHER_STORE}"
    if isinstance(exc, StoreBusyError):
        return f"`gate runs list` shows what is running; {exc.hint}"
    if isinstance(exc, LockError):
        if exc.run_id is None:
            return "see `gate runs list`"
        if exc.gone:
            return gone_hint(exc.run_id)
        return f"{exc.hint}, or if its process is gone: gate runs abort {exc.run_id}"
    if isinstance(exc, RunStateError) and exc.overridable:
        return f"{exc.hint}, or pass --force"
    if isinstance(exc, NotFoundError):
        return ("see `gate status` or `gate runs list`" if exc.what == "campaign"
                else "see `gate runs list`")
    return None


def _cli_key(exc: GateError) -> str | None:
    if isinstance(exc, StoreUrlError):
        return "--db"
    if isinstance(exc, NotFoundError) and exc.what == "campaign":
        return "--campaign"
    return None


def worded(exc: GateError) -> GateError:
    """`exc` as the command line shows it: a copy with the CLI's hint and flag added where
    the store left them neutral (the original is not changed)."""
    hint, key = _cli_hint(exc), _cli_key(exc)
    if hint is None and key is None:
        return exc
    out = type(exc).__new__(type(exc))  # no __init__: subclasses take other arguments
    out.__dict__.update(exc.__dict__)
    out.args = exc.args
    if hint is not None:
        out.hint = hint
    if key is not None and out.key is None:
        out.key = key
    return out
