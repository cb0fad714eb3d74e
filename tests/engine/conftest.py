"""One real CPU engine a test module (tests/engine/llama_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine.llama_server import serve


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("engine") / "server.log") as url:
        yield url
