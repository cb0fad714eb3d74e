"""After every run, a site with `sync.to:` sends its campaign's finished runs there by
itself (a weekly scheduled run lands where the whole team sees it, nobody types `gate
sync`). Never a failed run: a target that cannot be reached, or a run it refuses, is an
event on the run that just ended, and the next run's sync tries again (it sends every
finished run of the campaign the target does not hold at its revision)."""

from __future__ import annotations

from harness.config.loader import LoadedConfig
from harness.errors import GateError
from harness.store import runs as store_runs
from harness.store.db import Store


def after_run(loaded: LoadedConfig, store: Store, run_id: int) -> str | None:
    """Sync the run's campaign to `sync.to`; a line saying what happened, or None when
    the site does not sync."""
    url = loaded.config.sync.to
    if url is None:
        return None
    from harness.store.sync import shown_url, sync_stores

    where = shown_url(url)
    run = store_runs.get_run(store, run_id)
    ref = next((c for c in store_runs.find_campaigns(
        store, f"{loaded.config.site.name}/{loaded.config.campaign.name}")
        if c.id == run.campaign_id), None)
    try:
        target = Store(url)
        try:
            result = sync_stores(store, target, campaign_uid=ref.uid if ref else None,
                                 quick=True)
        finally:
            target.close()
    except (GateError, OSError) as exc:
        said = exc.one_line() if isinstance(exc, GateError) else str(exc)
        store_runs.add_event(store, run_id, source="harness", name="sync", host=None,
                             status="failed", message=f"{where}: {said}"[:2000])
        return f"sync to {where} failed (tried again after the next run): {said}"
    counts = {a: result.count(a) for a in ("added", "updated", "skipped", "refused")}
    summary = ", ".join(f"{a} {n}" for a, n in counts.items())
    refused = "; ".join(r.line() for r in result.refused)
    store_runs.add_event(store, run_id, source="harness", name="sync", host=None,
                         status="failed" if refused else "ok",
                         message=f"{where}: {summary}" + (f"; refused: {refused}"
                                                          if refused else ""))
    return f"synced to {where}: {summary}" + (f" (refused: {refused})" if refused else "")
