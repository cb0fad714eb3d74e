"""G4's skeleton (issue 25): a built suite found through its hooks alone, whose one check
says the soak is not built, so a G4 run is INCONCLUSIVE, never PASS, and says why in
both languages' words."""

from __future__ import annotations

import json
from pathlib import Path

from gate_testing import GateRunner

ARMS = """\
arms:
  baseline: {start: {command: ["true"]}, stop: {command: ["true"]}}
  accelerated: {start: {command: ["true"]}, stop: {command: ["true"]}}
layouts:
  - {name: TP1, tp: 1, instances: [{host: gpu1, port: 8000}]}
"""


def test_a_g4_run_is_inconclusive_until_its_soak_is_built(gate_cli: GateRunner,
                                                          site_dir: Path) -> None:
    config = site_dir / "gate.yaml"
    config.write_text(config.read_text() + ARMS)
    out = gate_cli("run", "G4", "--force")
    assert out.returncode == 2, out.stdout + out.stderr  # INCONCLUSIVE
    assert "G4 run 1: INCONCLUSIVE" in out.stdout, out.stdout
    (run,) = json.loads(gate_cli("runs", "list", "--json").stdout)
    assert (run["gate"], run["effective_verdict"], run["forced"]) == ("G4", "INCONCLUSIVE",
                                                                     True)
    shown = json.loads(gate_cli("runs", "show", str(run["id"]), "--json").stdout)
    (check,) = shown["checks"]
    assert check["name"] == "test_soak" and check["outcome"] == "INCONCLUSIVE"
    assert "soak is not built in this version" in check["message"]
    dry = gate_cli("run", "G4", "--dry-run")  # a suite without a dry_run hook says so
    assert dry.returncode == 4 and "G4 has no phases to estimate" in dry.stderr, dry.stderr
