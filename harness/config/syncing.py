"""`sync:`: where a site's store sends its finished runs by itself (harness/workflow/
autosync.py), so a weekly run lands where the whole team sees it without anyone typing
`gate sync`. The URL's form is checked here (the store opens it: only it imports
SQLAlchemy)."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from harness.config.base import Frozen


class Sync(Frozen):
    # A store URL (postgresql+psycopg://user@host/db, or sqlite:///path): after every run
    # the campaign's finished runs are merged into it, as `gate sync --to URL` does. A
    # target that cannot be reached is an event on the run, tried again after the next.
    # The password comes from PGPASSWORD or ~/.pgpass, never from this file.
    to: str | None = Field(default=None, min_length=1)

    @field_validator("to")
    @classmethod
    def _a_store_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            url = urlsplit(value)
            password = url.password
        except ValueError:
            url, password = urlsplit(""), None
        if "://" not in value or not url.scheme:
            raise PydanticCustomError("store_url", "a store URL (postgresql+psycopg://"
                                      "user@host/db or sqlite:///path)")
        if password is not None and not url.scheme.startswith("sqlite"):
            raise PydanticCustomError("store_url", "a store URL without its password (it "
                                      "comes from PGPASSWORD or ~/.pgpass, never from "
                                      "gate.yaml)")
        return value
