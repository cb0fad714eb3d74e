"""Opening a store at head reads the head from the migration files' text and imports no
Alembic (harness.store.heads.quick_head: ~0.1-0.2 s of every store command, `gate fleet`'s
start-up); a store that needs migrating is still found and migrated, and a migration
file the quick reading cannot be sure of leaves the decision to Alembic."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command

from harness.store import heads
from harness.store.db import Store, _alembic_config, known_revisions
from harness.store.heads import quick_head

OPEN = """
import sys
from harness.store import Store
store = Store(sys.argv[1])
print(store.revision(), "alembic" in sys.modules)
"""


def opened(url: str) -> tuple[str, bool]:
    out = subprocess.run([sys.executable, "-c", OPEN, url], capture_output=True, text=True,
                         check=True)
    revision, imported = out.stdout.split()
    return revision, imported == "True"


def test_the_quick_head_is_alembics() -> None:
    assert quick_head() == known_revisions()[1]


def test_a_store_at_head_opens_without_alembic_and_one_behind_is_migrated(
        store_url: str) -> None:
    head = known_revisions()[1]
    store = Store(store_url)
    store.close()
    assert opened(store_url) == (head, False)
    previous = sorted(known_revisions()[0])[-2]
    store = Store(store_url)
    with store.engine.begin() as conn:
        command.downgrade(_alembic_config(conn), previous)
    store.close()
    assert opened(store_url) == (head, True)  # found behind, migrated through Alembic


@pytest.mark.parametrize("change", [
    (r'^down_revision = "(\w+)"', r'down_revision = ("\1", "0001")'),  # a merge
    (r'^revision = "(\w+)"', r'revision: str = "\1"'),  # annotated
])
def test_a_migration_file_not_plainly_read_leaves_it_to_alembic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: tuple[str, str]) -> None:
    copy = tmp_path / "migrations"
    shutil.copytree(heads.MIGRATIONS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    newest = max((copy / "versions").glob("[0-9]*.py"))
    text, n = re.subn(change[0], change[1], newest.read_text(), flags=re.MULTILINE)
    assert n == 1, newest
    newest.write_text(text)
    monkeypatch.setattr(heads, "MIGRATIONS", copy)
    quick_head.cache_clear()
    try:
        assert quick_head() is None
    finally:
        quick_head.cache_clear()  # the real migrations' head for the tests after this
