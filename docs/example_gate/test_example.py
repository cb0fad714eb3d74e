"""The example suite's checks: each shows one way a check becomes a verdict."""

from __future__ import annotations

import re

import pytest

from harness.config.models import SiteConfig
from harness.errors import Inconclusive
from harness.pytest_plugin import CheckRecorder, GateContext
from harness.transport import Transport

EXPECTED_GPUS = 4  # a real suite reads this from the site's bill of materials (gates.g1.bom)


@pytest.mark.hosts("gpu")
def test_gpu_driver_is_on_record(gate: GateContext, host: Transport,
                                 check: CheckRecorder) -> None:
    """PASS, and a host fact on record: the driver each GPU host runs."""
    out = host.run(["nvidia-smi", "-q", "-x"], timeout=30).check("nvidia-smi").stdout
    found = re.search(r"<driver_version>([^<]+)</driver_version>", out)
    check.expect("a driver version")
    check.measure(found.group(1) if found else "none")
    assert found, "nvidia-smi reports no driver version"
    gate.recorder.host_fact(host=host.host, key="gpu driver", value=found.group(1))


@pytest.mark.hosts("gpu")
def test_gpus_as_ordered(host: Transport, check: CheckRecorder) -> None:
    """STOP-LOSS when the host has fewer GPUs than ordered: a failed assertion in the
    suite's own code is a measured miss. A command that cannot run is ERROR instead
    (.check raises an infrastructure error)."""
    out = host.run(["nvidia-smi", "-q", "-x"], timeout=30).check("nvidia-smi").stdout
    found = re.search(r"<attached_gpus>(\d+)</attached_gpus>", out)
    count = int(found.group(1)) if found else 0
    check.expect(f">= {EXPECTED_GPUS} GPUs")
    check.measure(count)
    assert count >= EXPECTED_GPUS, f"{count} GPUs, {EXPECTED_GPUS} ordered"


def test_gds_is_ready(site: SiteConfig) -> None:
    """SKIPPED when the config lists the check under gates.<gate>.optional; any other
    skip is ERROR (a check that did not run proves nothing)."""
    pytest.skip("no GDS on this site")


def test_volume_throughput_is_measurable(gate: GateContext, check: CheckRecorder) -> None:
    """INCONCLUSIVE: the measurement ran but cannot decide (too noisy, too short). The
    artifact it leaves is kept with the run."""
    samples = [812.0, 1490.0, 640.0]  # MB/s, from a real fio run in a real suite
    spread = (max(samples) - min(samples)) / min(samples)
    report = gate.artifact_dir / "volume-throughput.txt"
    report.write_text("\n".join(f"{s:.0f} MB/s" for s in samples) + "\n", encoding="utf-8")
    gate.recorder.artifact(report, kind="fio")
    check.measure(f"spread {spread:.0%}")
    if spread > 0.25:
        raise Inconclusive(f"throughput spread {spread:.0%} > 25 %: repeat on a quiet volume")
