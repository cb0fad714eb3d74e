"""The running engine vs the software BOM (harness/g2/engine_version.py): same version
passes, another is a mismatch, and what cannot be compared is said, never passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config.inventory import load_inventory
from harness.config.models import Instance, Layout, SiteConfig
from harness.errors import MeasurementError
from harness.g2.engine_version import Ordered, RunningEngine, compare, identity, ordered
from harness.g2.serving_run import ServingBaseline
from harness.loadgen.engines import detect

ENGINES = Path(__file__).resolve().parents[1] / "fixtures" / "engines"
VLLM = Ordered("gates.g1.bom.gpu.software.packages", {"vllm": "0.6.3", "lmcache": "0.2.1"})


def test_same_version_compares_clean_and_another_is_a_mismatch() -> None:
    same = compare([RunningEngine("http://gpu1:8000", "gpu1", "vllm", "0.6.3")],
                   {"gpu1": VLLM})
    assert (same.mismatch, same.unknown) == ((), ())
    assert same.expected == "gpu1: vllm 0.6.3" and same.found == "http://gpu1:8000: vllm 0.6.3"
    other = compare([RunningEngine("http://gpu1:8000", "gpu1", "vllm", "0.6.3"),
                     RunningEngine("http://gpu1:8001", "gpu1", "vllm", "0.6.4.dev1")],
                    {"gpu1": VLLM})
    assert other.mismatch == ("http://gpu1:8001 runs vllm 0.6.4.dev1, the BOM orders 0.6.3",)


def test_what_cannot_be_compared_is_named() -> None:
    ollama = detect({"/api/version": json.loads(
        (ENGINES / "ollama-api-version_docs.json").read_text())})
    cases = {
        RunningEngine("http://a:1", "gpu1", ollama.name, ollama.version):
            "ollama is not a Python distribution",
        RunningEngine("http://a:2", "gpu1", "sglang", None): "sglang reports no version",
        RunningEngine("http://a:3", "gpu1", "llama-cpp-python", "0.3.36"):
            "the BOM orders no llama-cpp-python (gates.g1.bom.gpu.software.packages)",
    }
    for one, why in cases.items():
        result = compare([one], {"gpu1": VLLM})
        assert result.mismatch == () and why in result.unknown[0], result
    nobom = compare([RunningEngine("http://a:4", "gpu1", "vllm", "0.6.3")],
                    {"gpu1": Ordered("gates.g1.bom.gpu.software.packages", None)})
    assert "no software BOM orders its engine" in nobom.unknown[0]


def test_the_simulator_is_gates_own_distribution() -> None:
    sim = RunningEngine("http://127.0.0.1:8000", "gpu1", "vllm", "gate-sim 0.1.0")
    assert identity(sim) == ("gate-harness", "0.1.0")


def test_the_order_comes_from_the_hosts_group(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n"
                                        "[client]\nc1 ansible_connection=local\n")
    config = SiteConfig.model_validate({
        "site": {"name": "s"}, "campaign": {"name": "c"}, "model": {"name": "m"},
        "gates": {"g1": {"bom": {"gpu": {"software": {"packages": {"vllm": "0.6.3"}}}}}}})
    inventory = load_inventory(tmp_path / "hosts.ini")
    assert ordered(config, inventory, "g1") == VLLM.__class__(
        "gates.g1.bom.gpu.software.packages", {"vllm": "0.6.3"})
    assert ordered(config, inventory, "c1").packages is None


class _NoStart:
    """An arm control that must not be asked again (a real start can take minutes)."""

    def start(self, arm: str, layout: object) -> None:
        raise AssertionError("started a second time")


def test_an_arm_that_did_not_start_is_not_started_again() -> None:
    layout = Layout(name="TP8", tp=8, instances=[Instance(host="gpu1", port=8000)])
    serving = ServingBaseline(gate=None, control=_NoStart(), watch=None)  # type: ignore[arg-type]
    serving.engine_errors["TP8"] = "the arm did not start (health timeout)"
    with pytest.raises(MeasurementError, match="did not start"):
        serving.running_engines(layout)
    running = [RunningEngine("http://gpu1:8000", "gpu1", "vllm", "0.6.3")]
    serving.engines["TP8"] = running  # a later cell of the layout started and answered
    assert serving.running_engines(layout) == running
