"""`gate runs show` lists the decision settings a run's stored config moved off their
defaults, asked of the run's gate suite (its `deviations` hook), never by gate name: a
G3 run with a weaker confidence shows it; a G1 run with the very same config shows none,
since G1 has no decision settings."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from gate_testing import GATE
from report_support import fill

from harness.store import Store


def test_runs_show_lists_a_g3_runs_moved_settings_and_none_for_g1(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gate.db'}"
    store = Store(url)
    g3 = fill.new_run(store, "G3", config=fill.WEAK_CONFIG)
    g1 = fill.new_run(store, "G1", config=fill.WEAK_CONFIG)
    store.close()
    env = {**os.environ, "GATE_DB": url}

    def show(run_id: int, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*GATE, "runs", "show", str(run_id), *extra], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    doc = json.loads(show(g3, "--json").stdout)
    keys = {s["key"]: s for s in doc["settings"]}
    assert keys["gates.g3.confidence"]["weakened"] is True, keys
    text = show(g3).stdout
    assert "decision setting gates.g3.confidence" in text, text
    assert json.loads(show(g1, "--json").stdout)["settings"] == []
    assert "decision setting" not in show(g1).stdout
