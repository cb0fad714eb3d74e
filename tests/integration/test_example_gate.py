"""docs/gates.md's example suite, run as a user would: every outcome it documents is the
one the harness stores, and its plan hook names exactly what it collects."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from gate_testing import REPO, GateRunner

from harness.config.inventory import load_inventory
from harness.config.loader import load_config
from harness.store import Store
from harness.store.queries import run_tables

EXAMPLE = REPO / "docs" / "example_gate"
INVENTORY = """\
[gpu]
gpu1 ansible_connection=local gate_sim_hardware=gpu-a100
gpu2 ansible_connection=local gate_sim_hardware=gpu-2xa5000
"""


def example_package() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_gate", EXAMPLE / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("example_gate", module)
    spec.loader.exec_module(module)
    return module


def test_the_example_suite_gives_each_documented_outcome(gate_cli: GateRunner,
                                                        site_dir: Path) -> None:
    (site_dir / "hosts.ini").write_text(INVENTORY)
    with (site_dir / "gate.yaml").open("a") as f:
        f.write("gates: {g1: {optional: [test_gds_is_ready]}}\n")
    out = gate_cli("run", "G1", "--suite", str(EXAMPLE))
    assert out.returncode == 1, out.stderr  # a STOP-LOSS decides the gate
    show = json.loads(gate_cli("runs", "show", "1", "--json").stdout)
    outcomes = {(c["name"], c["host"]): c["outcome"] for c in show["checks"]}
    assert outcomes == {
        ("test_gpu_driver_is_on_record", "gpu1"): "PASS",
        ("test_gpu_driver_is_on_record", "gpu2"): "PASS",
        ("test_gpus_as_ordered", "gpu1"): "PASS",  # 4 x A100
        ("test_gpus_as_ordered", "gpu2"): "STOP-LOSS",  # 2 x A5000
        ("test_gds_is_ready", None): "SKIPPED",
        ("test_volume_throughput_is_measurable", None): "INCONCLUSIVE",
    }
    tables = run_tables(Store(f"sqlite:///{site_dir / 'gate.db'}"), 1)
    facts = {(r.host, r.key): r.value for r in tables.facts.itertuples()}
    assert facts[("gpu1", "gpu driver")] and facts[("gpu2", "gpu driver")]
    assert list(tables.artifacts["kind"]) == ["run inputs", "fio"]  # the runner's, the suite's

    # Not optional any more: the same skip is an ERROR, never a quiet pass-over.
    (site_dir / "gate.yaml").write_text((site_dir / "gate.yaml").read_text().replace(
        "optional: [test_gds_is_ready]", "optional: []"))
    gate_cli("run", "G1", "--suite", str(EXAMPLE))
    again = json.loads(gate_cli("runs", "show", "2", "--json").stdout)
    assert {c["name"]: c["outcome"] for c in again["checks"]}["test_gds_is_ready"] == "ERROR"


def test_the_example_plan_names_what_the_suite_collects(site_dir: Path) -> None:
    (site_dir / "hosts.ini").write_text(INVENTORY)
    loaded = load_config(site_dir / "gate.yaml")
    inventory = load_inventory(site_dir / "hosts.ini")
    plan = example_package().expected_checks(loaded.config, inventory)
    source = (EXAMPLE / "test_example.py").read_text()
    defined = {line.split("(")[0][4:] for line in source.splitlines()
               if line.startswith("def test_")}
    assert {p.split("[")[0] for p in plan} == defined
    assert sorted(p for p in plan if "[" in p) == [
        "test_gpu_driver_is_on_record[gpu1]", "test_gpu_driver_is_on_record[gpu2]",
        "test_gpus_as_ordered[gpu1]", "test_gpus_as_ordered[gpu2]"]
