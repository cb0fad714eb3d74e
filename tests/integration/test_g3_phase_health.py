"""A G3 phase's own health and timeout against the simulated lab (one-cell site as in
test_g3_integrity.py): a saturated client cannot decide a cell (INCONCLUSIVE "client
saturated"), a phase past gates.g3.phase_timeout is ERROR with what it measured kept."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from gate_testing import GATE

from harness.demo import SPAWNER_SOCKET, write_site
from harness.sim.spawn_client import start_spawner, stop_spawner

pytestmark = pytest.mark.slow


class Site:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "gate.yaml"

    def gate(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("GATE_DB", "GATE_CONFIG")}
        env["GATE_DB"] = f"sqlite:///{self.root / 'gate.db'}"
        return subprocess.run([*GATE, *args], cwd=self.root, env=env, capture_output=True,
                              text=True, timeout=600)

    def edit(self, g3: dict[str, object], load: dict[str, object] | None = None) -> None:
        cfg = yaml.safe_load(self.config.read_text())
        cfg["gates"]["g3"].update(g3)
        if load is not None:
            cfg.setdefault("load", {}).update(load)
        self.config.write_text(yaml.safe_dump(cfg, sort_keys=False))

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(self.root / "gate.db") as conn:
            return list(conn.execute(sql))

    def cell_check(self) -> dict[str, object]:
        out = self.gate("runs", "show", "1", "--json")
        assert out.returncode == 0, out.stderr
        return dict(next(c for c in json.loads(out.stdout)["checks"]
                         if c["name"] == "test_cell"))


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    made = write_site(tmp_path, "default")
    s = Site(made.root)
    s.edit({"tiers": [4], "layouts": ["TP8"], "repetitions": {"min": 3, "max": 5}})
    start_spawner(made.root / SPAWNER_SOCKET, made.root / "spawner.log", idle_exit=600)
    try:
        yield s
    finally:
        from harness.demo import _stop_leftovers

        _stop_leftovers(made.root)
        stop_spawner(made.root / SPAWNER_SOCKET)


def test_a_saturated_client_makes_the_cell_inconclusive(site: Site) -> None:
    """A loop-lag bound no client can meet stands for a starved load generator."""
    site.edit({}, load={"health": {"max_loop_lag_p99_ms": 0.000001}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    cell = site.cell_check()
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
    site.edit({"phase_timeout": 0.05})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 3, out.stdout + out.stderr[-2000:]
    cell = site.cell_check()
    assert cell["outcome"] == "ERROR" and "phase_timeout" in str(cell["message"])
    (bid, summary), = site.query("SELECT id, summary FROM benchmark WHERE status='TIMEOUT'")
    assert "phase_timeout (0.05 s) reached" in json.loads(str(summary))["stopped"]
    kinds = site.query(f"SELECT error_kind FROM request WHERE benchmark_id={bid}")
    assert kinds and any(k == ("cancelled",) for k in kinds)
