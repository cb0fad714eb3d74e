"""G3 asks an engine only what its profile says it takes (one-cell simulated site, as in
test_g3_integrity.py): configured as llama-cpp-python, which does not honour ignore_eos,
the requests go without it, and an engine that then stops at EOS makes the cell
INCONCLUSIVE "output length not fixed", never a ratio."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from g3_site import Site, one_cell_site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def test_an_engine_without_ignore_eos_gets_standard_requests(site: Site) -> None:
    arms = {}
    for name in ("baseline", "accelerated"):
        start = dict(site.arm(name)["start"])  # type: ignore[call-overload]
        start["command"] = [*start["command"], "--eos-rate", "0.5"]
        arms[name] = {"start": start}
    site.edit({"engine": "llama-cpp-python", "arms": arms})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    cell = next(c for c in site.run_json(1)["checks"]  # type: ignore[attr-defined]
                if c["name"] == "test_cell")
    assert cell["outcome"] == "INCONCLUSIVE"
    assert str(cell["message"]).startswith("output length not fixed: ")
    assert "ignore_eos not sent: the engine's profile does not honour it" in str(
        cell["message"])
    params = [json.loads(str(p[0])) for p in site.query(
        "SELECT params FROM benchmark WHERE phase='measured'")]
    assert params and all(p["fixed_output"] == {"max_tokens": 128} for p in params)
    # where the report's versions table reads them
    assert all(p["engine"] == "llama-cpp-python" for p in params)
    assert all(p["engine_version"].startswith("gate-sim") for p in params)
    cards = [json.loads(str(v[0])) for v in site.query(
        "SELECT value FROM host_fact WHERE key LIKE 'engine %' "
        "AND key NOT LIKE 'engine identity%'")]
    assert cards and all(c["engine"] == "llama-cpp-python" for c in cards)
