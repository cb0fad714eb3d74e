"""`gate sync --to URL | --from URL|PACK`: merge finished runs between two stores by uid
(harness.store.sync does the merge; this opens the stores, reads a pack, prints).

Exit codes: 0 when every run was added, updated or skipped; 4 when a run was refused (its
content differs from the target's at the same revision; every other run still synced)
or when the other store cannot be opened as named (a bad URL, a server that does not
answer, a file that is not a store); 3 for a store fault part-way (what was synced
stays; the next sync completes it).
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import click

from harness.cli.common import db_option, emit_json, json_option
from harness.cli.tables import Cell, Column, console, render, wide_option
from harness.errors import SchemaTooNewError, StoreError, StoreUrlError, UsageError

if TYPE_CHECKING:
    from harness.store import Store
    from harness.store.sync import SyncResult

COLUMNS = (Column("campaign"), Column("gate", whole=True), Column("run uid"),
           Column("rev", whole=True), Column("action", whole=True),
           Column("rows", whole=True), Column("why", weight=2))
STYLES = {"added": "green", "updated": "cyan", "skipped": "", "refused": "red"}


class SyncRefusedError(UsageError):
    """One or more runs were refused (named); the others synced."""


@click.command("sync")
@click.option("--to", "to_url", default=None, metavar="URL",
              help="Merge this store's finished runs into the store at URL (made when new).")
@click.option("--from", "from_source", default=None, metavar="URL|PACK",
              help="Merge the finished runs of the store at URL, or of an evidence pack "
                   "(`gate export`), into this store.")
@click.option("--dry-run", is_flag=True, help="Say what a sync would do; write nothing.")
@db_option
@json_option
@wide_option
def sync(to_url: str | None, from_source: str | None, dry_run: bool, db_url: str | None,
         as_json: bool, wide: bool) -> None:
    """Merge finished runs between this store (--db / GATE_DB) and another, by uid.

    Per run: added; updated (a newer revision replaces the older as a whole); skipped (the
    same content, a newer revision in the target, or still running); refused (the same
    revision with other content: the target keeps its own). Sign-offs of both sides are
    kept. Exit 0; 4 when a run was refused or the other store cannot be opened; 3 on a
    store fault part-way (run it again: what was synced stays)."""
    if (to_url is None) == (from_source is None):
        raise UsageError("give --to URL or --from URL|PACK (exactly one)", key="gate sync",
                         hint="e.g. gate sync --to postgresql+psycopg://gate@db/fleet")
    from harness.store.sync import sync_stores

    with ExitStack() as stack:
        if to_url is not None:
            _not_itself(_resolved(db_url), to_url, "--to")
            src = _own(db_url, existing=True, dry_run=dry_run)
            stack.callback(src.close)
            dst = _other(to_url, "--to", dry_run=dry_run)
            stack.callback(dst.close)
            shown = (_shown(_resolved(db_url)), _shown(to_url))
        else:
            assert from_source is not None
            src, source_name = stack.enter_context(_source(from_source, db_url, dry_run))
            dst = _own(db_url, existing=False, dry_run=dry_run)
            stack.callback(dst.close)
            shown = (source_name, _shown(_resolved(db_url)))
        result = sync_stores(src, dst, dry_run=dry_run, shown=shown)
    if as_json:
        emit_json(result.as_dict())
    else:
        _print(result, wide)
    if result.refused:
        n = len(result.refused)
        raise SyncRefusedError(f"refused {n} run{'s' if n > 1 else ''}: "
                               + "; ".join(r.line() for r in result.refused),
                               hint="compare both copies with `gate runs show` on each "
                                    "store; every other run synced")


def _resolved(url: str | None) -> str:
    from harness.store import resolve_url

    return resolve_url(url)


def _shown(url: str) -> str:
    """A store's URL as it may be printed: a SQLite file's path, a server's URL without
    its password (the store refuses one anyway)."""
    from harness.store.sync import shown_url

    return shown_url(_resolved(url))


def _own(db_url: str | None, *, existing: bool, dry_run: bool) -> Store:
    """This command's own store (--db / GATE_DB), as every command opens it; a dry run
    reads it without making or upgrading it."""
    from harness.cli.context import open_store

    if not dry_run:
        return open_store(db_url, existing=existing)
    from harness.store.db import absent_file
    from harness.store.sync import peek

    if existing and absent_file(_resolved(db_url)) is not None:
        return open_store(db_url, existing=True)  # the one-line "no store at ..."
    return peek(_resolved(db_url))


def _other(url: str, flag: str, *, dry_run: bool, existing: bool = False) -> Store:
    """The store named by --to / --from: opening it failing for any reason (a bad URL, a
    server that does not answer, not a store) is a usage error naming the flag (exit 4)."""
    from harness.store import Store
    from harness.store.db import absent_file
    from harness.store.sync import peek

    resolved = _resolved(url)
    try:
        missing = absent_file(resolved) if existing else None
        if missing is not None:
            raise StoreUrlError(f"no store at {missing.absolute()}")
        return peek(resolved) if dry_run else Store(resolved)
    except (StoreUrlError, SchemaTooNewError) as exc:
        exc.key = exc.key or flag
        raise
    except StoreError as exc:
        raise StoreUrlError(f"cannot open the store: {exc.message}", file=exc.file, key=flag,
                            hint=exc.hint or "check the URL and that the server answers"
                            ) from None


def _not_itself(own: str, other: str, flag: str) -> None:
    from harness.store.sync import same_store

    if same_store(own, _resolved(other)):
        raise UsageError(f"names this command's own store ({_shown(other)})",
                         key=flag, hint="point --db / GATE_DB or the flag at another store")


@contextmanager
def _source(spec: str, db_url: str | None, dry_run: bool) -> Iterator[tuple[Store, str]]:
    """The store to read (--from): an evidence pack's store.sqlite (its files checked
    against the pack's manifest first, read from a temporary copy) or a store URL."""
    path = Path(spec).expanduser()
    if not (path.is_file() and tarfile.is_tarfile(path)):
        _not_itself(_resolved(db_url), spec, "--from")
        store = _other(spec, "--from", dry_run=dry_run, existing=True)
        try:
            yield store, _shown(spec)
        finally:
            store.close()
        return
    from harness.report.export import verify_pack
    from harness.store import Store

    verify_pack(path)  # a changed pack: exit 3 naming the files
    with tempfile.TemporaryDirectory(prefix="gate-sync-") as tmp, \
            tarfile.open(path, "r:*") as tar:
        names = [m for m in tar.getmembers() if m.isfile()
                 and PurePosixPath(m.name).name == "store.sqlite"
                 and len(PurePosixPath(m.name).parts) <= 2]
        raw = tar.extractfile(names[0]) if len(names) == 1 else None
        if raw is None:
            raise UsageError("the evidence pack holds no store.sqlite", file=str(path),
                             key="--from")
        copy = Path(tmp) / "store.sqlite"
        with raw, copy.open("wb") as out:
            while chunk := raw.read(1 << 20):
                out.write(chunk)
        store = Store(f"sqlite:///{copy}")  # a pack from an older harness: upgraded here
        try:
            yield store, f"{path} (evidence pack)"
        finally:
            store.close()


def _print(result: SyncResult, wide: bool) -> None:
    out = console(wide)
    rows: list[list[Cell | str]] = []
    for r in result.runs:
        rev = (f"{r.target_revision}->{r.revision}" if r.action == "updated"
               else str(r.revision))
        signed = f"{r.signoffs} sign-off{'s' if r.signoffs > 1 else ''} added" \
            if r.signoffs else ""
        rows.append([r.campaign, r.gate, r.uid, rev, Cell(r.action, STYLES[r.action]),
                     str(r.rows) if r.rows else "", "; ".join(x for x in (r.why, signed) if x)])
    title = f"{result.source} -> {result.target}" + (" (dry run: nothing written)"
                                                    if result.dry_run else "")
    if rows:
        render(out, COLUMNS, rows, title=title)
    else:
        out.print(f"{title}: no runs in the source", highlight=False, soft_wrap=True)
    counts = ", ".join(f"{a} {result.count(a)}" for a in ("added", "updated", "skipped",
                                                         "refused"))
    more = [f"{what} {n}" for what, n in (("sign-offs", sum(r.signoffs for r in result.runs)),
                                          ("sites", result.sites),
                                          ("campaigns", result.campaigns)) if n]
    tail = f"; new {', '.join(more)}" if more else ""
    out.print(f"runs: {counts}{tail}" + (" (dry run)" if result.dry_run else ""),
              highlight=False, soft_wrap=True)  # one line, whatever the width: for grep
