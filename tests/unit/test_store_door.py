"""The store is the only door to the gate's database: no module outside harness/store
imports SQLAlchemy, Alembic or a database driver (psycopg) or reads SQL through pandas,
and no gate suite imports the store (suites record through the plugin's recorder,
`gate.recorder`). The simulator's own SQLite caches (harness/sim) use sqlite3 directly
and are its business."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DB_LIBRARIES = ("sqlalchemy", "alembic", "psycopg", "psycopg2")
SQL_CALLS = ("read_sql", "read_sql_query", "read_sql_table", "exec_driver_sql")


def imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def modules(*parts: str) -> list[Path]:
    return sorted(p for part in parts for p in (ROOT / part).rglob("*.py"))


def test_only_the_store_imports_database_libraries_or_runs_sql() -> None:
    found: list[str] = []
    checked = 0
    for path in modules("harness", "gates"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("harness/store/"):
            continue
        checked += 1
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{rel}: imports {n}" for n in imported(tree)
                  if n.split(".")[0] in DB_LIBRARIES]
        found += [f"{rel}: calls {node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr in SQL_CALLS]
    assert checked > 50  # the walk saw the harness, not an empty directory
    assert found == []


def test_gate_suites_record_through_the_plugin_not_the_store() -> None:
    suites = modules("gates")
    assert any(p.name == "conftest.py" for p in suites)
    found = [f"{p.relative_to(ROOT)}: imports {n}" for p in suites
             for n in imported(ast.parse(p.read_text(encoding="utf-8")))
             if n == "harness.store" or n.startswith("harness.store.")]
    assert found == []
