"""A one-cell simulated G3 site for integration tests (TP8, tier 4, 3-5 pairs, speed 30),
with its own store and engine spawner."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from gate_testing import GATE

from harness.demo import write_site
from harness.sim.spawn_client import start_spawner, stop_spawner
from harness.workflow.demo_site import spawner_socket


class Site:
    """A one-cell simulated site with its own store and engine spawner."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "gate.yaml"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("GATE_DB", "GATE_CONFIG")}
        return {**env, "GATE_DB": f"sqlite:///{self.root / 'gate.db'}", **extra}

    def gate(self, *args: str, timeout: float = 600,
             **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*GATE, *args], cwd=self.root, env=self.env(**env),
                              capture_output=True, text=True, timeout=timeout)

    def edit(self, change: dict[str, object]) -> None:
        """Merge `change` into gate.yaml (nested dicts merge, other values replace)."""
        cfg = yaml.safe_load(self.config.read_text())

        def merge(into: dict[str, object], more: dict[str, object]) -> None:
            for k, v in more.items():
                if isinstance(v, dict) and isinstance(into.get(k), dict):
                    merge(into[k], v)  # type: ignore[arg-type]
                else:
                    into[k] = v

        merge(cfg, change)
        self.config.write_text(yaml.safe_dump(cfg, sort_keys=False))

    def arm(self, name: str) -> dict[str, object]:
        return dict(yaml.safe_load(self.config.read_text())["arms"][name])

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(self.root / "gate.db") as conn:
            return list(conn.execute(sql))

    def run_json(self, run_id: int) -> dict[str, object]:
        out = self.gate("runs", "show", str(run_id), "--json")
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))


@contextmanager
def one_cell_site(tmp_path: Path, scenario: str = "default") -> Iterator[Site]:
    made = write_site(tmp_path, scenario)
    s = Site(made.root)
    s.edit({"gates": {"g3": {"tiers": [4], "layouts": ["TP8"],
                             "repetitions": {"min": 3, "max": 5}}}})
    start_spawner(spawner_socket(made.root), made.root / "spawner.log", idle_exit=600)
    try:
        yield s
    finally:
        from harness.demo import _stop_leftovers

        _stop_leftovers(made.root)
        stop_spawner(spawner_socket(made.root))
        made.ports.release()
