"""The store's errors say what happened without naming a command; the command line adds its
commands and flags (harness.cli.context.worded), so a user sees the same lines as before
the store stopped speaking CLI. Real SQLite files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import update

from harness.cli.context import worded
from harness.errors import (
    GateError,
    LockError,
    NotFoundError,
    RunStateError,
    StoreDamagedError,
    StoreUrlError,
)
from harness.store import runs as store_runs
from harness.store.db import Store
from harness.store.schema import RunLockRow, RunRow

CLI_WORDS = ("gate ", "--", "GATE_DB", "`")


def neutral(err: GateError) -> str:
    text = str(err)
    for word in CLI_WORDS:
        assert word not in text, (word, text)
    return text


def gate_run(store: Store) -> int:
    return store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G3"))


def test_a_busy_campaign_names_the_holder_and_the_cli_says_how_to_end_it(
        tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    first = gate_run(store)
    with pytest.raises(LockError) as err:
        gate_run(store)
    assert err.value.run_id == first and not err.value.gone
    assert neutral(err.value).startswith(f"campaign is busy: run {first} (pid ")
    assert str(worded(err.value)).endswith(
        f"is running (wait for it, or if its process is gone: gate runs abort {first})")

    dead = subprocess.Popen(["true"])
    dead.wait()
    with store.session() as s:  # the holder's process is gone now
        s.execute(update(RunLockRow).values(pid=dead.pid))
        s.execute(update(RunRow).values(pid=dead.pid))
    with pytest.raises(LockError) as err:
        gate_run(store)
    assert err.value.gone
    assert neutral(err.value).endswith("whose process is gone")
    assert str(worded(err.value)).endswith(
        f"whose process is gone (continue it with `gate resume {first}` (G3, G4), or end it "
        f"with `gate runs abort {first}` (results kept))")
    store.close()


def test_missing_runs_and_campaigns_and_a_fresh_heartbeat_elsewhere(tmp_path: Path) -> None:
    from harness.store.queries import campaign_info

    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    with pytest.raises(NotFoundError) as err:
        store_runs.get_run(store, 77)
    assert neutral(err.value) == f"no run 77 in {store.url}"
    assert str(worded(err.value)) == f"no run 77 in {store.url} (see `gate runs list`)"
    with pytest.raises(NotFoundError) as err:
        campaign_info(store, "nope")
    assert str(worded(err.value)) == (f"--campaign: no campaign 'nope' in {store.url} "
                                      "(see `gate status` or `gate runs list`)")

    run = gate_run(store)
    with store.session() as s:  # alive on another host, by its heartbeat
        s.execute(update(RunRow).values(hostname="elsewhere.invalid"))
    with pytest.raises(RunStateError) as err:
        store_runs.abort_run(store, run)
    assert neutral(err.value).endswith("(abort it there)")
    assert str(worded(err.value)).endswith("(abort it there, or pass --force)")
    assert err.value.exit_code == 4
    store.close()


def test_a_damaged_file_and_a_bad_url(tmp_path: Path) -> None:
    path = tmp_path / "gate.db"
    path.write_bytes(b"not a database at all" * 512)
    with pytest.raises(StoreDamagedError) as err:
        Store(f"sqlite:///{path}")
    assert neutral(err.value).endswith("(restore it from a backup)")
    assert str(worded(err.value)).endswith(
        "(restore it from a backup or a `gate export` pack, or point --db / GATE_DB at "
        "another store)")
    with pytest.raises(StoreUrlError) as url_err:
        Store(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    assert url_err.value.exit_code == 4 and url_err.value.key is None
    assert str(worded(url_err.value)).startswith("--db: directory ")
