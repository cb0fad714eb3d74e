"""`--set dotted.key=VALUE` through the real CLI: refused as one line (exit 4, no
traceback) when the file would be, visible when it takes effect, compared by resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG, GateRunner

from harness.config.loader import load_config
from harness.store import runs
from harness.store.db import Store
from harness.workflow.run_inputs import digest, run_inputs

G3_SITE = MINIMAL_CONFIG + """\
arms:
  baseline: {start: {command: [/bin/true]}, stop: {command: [/bin/true]}}
  accelerated: {start: {command: [/bin/true]}, stop: {command: [/bin/true]}}
layouts:
  - {name: TP8, tp: 8, instances: [{host: gpu1, port: 8000}]}
gates: {g3: {evidence: {devices: [nvme1n1]}}}
"""


def one_line(out: object, *needles: str) -> str:
    rc, err = out.returncode, out.stderr  # type: ignore[attr-defined]
    assert rc == 4, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("gate: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(("command", "item", "needles"), [
    (("run", "G3"), "gates.g3.evidence.max_failed_share=0.5",
     ("--set gates.g3.evidence.max_failed_share: 0.5 is outside the allowed range",
      "<= 0.05")),
    (("run", "G3"), "foo", ("--set: no '=' in 'foo'",)),
    (("run", "G3"), "gates.g3.tierz=[4]", ("--set gates.g3.tierz: unknown key",
                                          "did you mean `tiers`")),
    (("run", "G3", "--dry-run"), "gates.g3.confidence=0.5", ("--set gates.g3.confidence",
                                                             ">= 0.9")),
    (("campaign",), "gates.g4.window=0",
     ("--set gates.g4.window: 0 is outside the allowed range",)),
    (("resume", "1"), "report.lang=fr", ("--set report.lang",)),
])
def test_a_bad_set_is_one_line_exit_4(gate_cli: GateRunner, site_dir: Path,
                                      command: tuple[str, ...], item: str,
                                      needles: tuple[str, ...]) -> None:
    (site_dir / "gate.yaml").write_text(G3_SITE)
    if command[0] == "resume":
        store = Store(f"sqlite:///{site_dir / 'gate.db'}")
        runs.start_run(store, runs.NewRun(campaign="test-campaign", site="test-site",
                                          customer="", kind="gate", gate="G3"))
        store.close()
    one_line(gate_cli(*command, "--set", item), *needles)


def test_demo_refuses_a_bad_set_before_anything_runs(gate_cli: GateRunner,
                                                     tmp_path: Path) -> None:
    out = gate_cli("demo", "--out", str(tmp_path / "demo"),
                   "--set", "gates.g3.thresholds.throughput_gain=0.1")
    one_line(out, "--set gates.g3.thresholds.throughput_gain", ">= 0.29")
    assert not list((tmp_path / "demo").glob("*/gate.db"))  # no store: nothing ran


def test_dry_run_shows_the_override_took_effect(gate_cli: GateRunner, site_dir: Path) -> None:
    (site_dir / "gate.yaml").write_text(G3_SITE)
    plain = gate_cli("run", "G3", "--dry-run")
    assert plain.returncode == 0, plain.stderr
    assert "TP8-c4:" in plain.stdout and "TP8-c16:" in plain.stdout
    out = gate_cli("run", "G3", "--dry-run", "--set", "gates.g3.tiers=[ 16 ]",
                   "--set", "gates.g3.repetitions.max=5")
    assert out.returncode == 0, out.stderr
    assert "TP8-c16:" in out.stdout and "TP8-c4:" not in out.stdout
    assert "3..5 ABBA pairs" in out.stdout
    assert "--set gates.g3.tiers=[16]" in out.stdout  # normalised, as recorded


def test_resume_needs_the_same_set(gate_cli: GateRunner, site_dir: Path) -> None:
    """The run was started with --set gates.g3.tiers=[16]: a resume without it, or with
    another value, is refused; with it, the config check passes (and the next check,
    the inventory's hosts, is what stops this fake run)."""
    cfg = site_dir / "gate.yaml"
    cfg.write_text(G3_SITE)
    started = load_config(cfg, ["gates.g3.tiers=[16]"])
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    rid = runs.start_run(store, runs.NewRun(
        campaign="test-campaign", site="test-site", customer="", kind="gate", gate="G3",
        config_hash=digest(run_inputs(started)),
        config_json=started.config.model_dump(mode="json"),
        hosts=("elsewhere",)))
    store.close()
    line = one_line(gate_cli("resume", str(rid)), "differ from the ones run",
                    "given now: no --set", "the same --set options")
    assert str(cfg) in line
    one_line(gate_cli("resume", str(rid), "--set", "gates.g3.tiers=[8]"),
             "given now: --set gates.g3.tiers=[8]")
    one_line(gate_cli("resume", str(rid), "--set", "gates.g3.tiers=[16]"),
             "the inventory's hosts differ")
