"""The results store (SQLAlchemy 2; SQLite by default). Only this package touches the DB."""

from harness.store.db import Store, resolve_url

__all__ = ["Store", "resolve_url"]
