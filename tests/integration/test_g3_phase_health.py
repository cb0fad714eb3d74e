"""A G3 phase's own health and timeout against the simulated lab (one-cell site as in
test_g3_integrity.py): a saturated client cannot decide a cell (INCONCLUSIVE "client
saturated"), a phase past gates.g3.phase_timeout is ERROR with what it measured kept."""

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


def cell_check(site: Site) -> dict[str, object]:
    checks = site.run_json(1)["checks"]
    assert isinstance(checks, list)
    return dict(next(c for c in checks if c["name"] == "test_cell"))


def test_a_saturated_client_makes_the_cell_inconclusive(site: Site) -> None:
    """A loop-lag bound no client can meet stands for a starved load generator."""
    site.edit({"load": {"health": {"max_loop_lag_p99_ms": 0.000001}}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    cell = cell_check(site)
    assert cell["outcome"] == "INCONCLUSIVE"
    assert str(cell["message"]).startswith("client saturated: event-loop lag p99 ")
    # decided at the first pair: no ratio was computed from a starved phase
    rows = site.query("SELECT verdict, reason, gain FROM cell")
    assert rows == [] or all(r[0] != "PASS" for r in rows)
    health = [json.loads(str(s[0]))["health"] for s in site.query(
        "SELECT summary FROM benchmark WHERE phase='measured' AND status='FINISHED'")]
    assert len(health) == 2 and all(h["saturated"] for h in health)
    # The disturbed pair was measured again twice before the cell gave up; the earlier
    # attempts stay on record, out of every count.
    assert site.query("SELECT count(*) FROM benchmark WHERE phase='measured' "
                      "AND status='SUPERSEDED'") == [(4,)]
    again = site.query("SELECT name FROM event WHERE name LIKE '%measured again'")
    assert len(again) == 2


def test_a_phase_past_phase_timeout_is_error_and_keeps_its_requests(site: Site) -> None:
    site.edit({"gates": {"g3": {"phase_timeout": 0.05}}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 3, out.stdout + out.stderr[-2000:]
    cell = cell_check(site)
    assert cell["outcome"] == "ERROR" and "phase_timeout" in str(cell["message"])
    (bid, summary), = site.query("SELECT id, summary FROM benchmark WHERE status='TIMEOUT'")
    assert "phase_timeout (0.05 s) reached" in json.loads(str(summary))["stopped"]
    kinds = site.query(f"SELECT error_kind FROM request WHERE benchmark_id={bid}")
    assert kinds and any(k == ("cancelled",) for k in kinds)
