"""G3's "arms match the declared layout" holds each layout against the GPUs its host has,
on the simulated lab (one-cell site: TP8 on gpu1): the engines report tp=8 whatever the
host holds, so only the count decides. Without a G1 record the BOM's count stands in; a
G1 run's nvidia-smi count comes first. TP8 on a host with two GPUs is ERROR naming host,
layout, tp, instances and GPUs found, never PASS.

Only the layout check runs (`-k declared_layout`: a PARTIAL run, never the gate's PASS);
the G1 runs are the demo's own, with the GPU host's captures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from g3_site import Site, one_cell_site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def layout_check(site: Site, run: int) -> dict[str, str]:
    out = site.gate("run", "G3", "--force", "--", "-k", "declared_layout")
    assert out.returncode in (2, 3), out.stdout + out.stderr[-2000:]
    (check,) = [c for c in site.run_json(run)["checks"]  # type: ignore[attr-defined]
                if c["name"] == "test_arms_match_the_declared_layout"]
    return dict(check)


def bom_count(site: Site, count: int) -> None:
    cfg = yaml.safe_load(site.config.read_text())
    cfg["gates"]["g1"]["bom"]["gpu"]["gpu"]["count"] = count
    site.config.write_text(yaml.safe_dump(cfg, sort_keys=False))


def test_the_layout_is_held_against_the_gpus_g1_found_else_the_bom(site: Site) -> None:
    # 1. no G1 run, a BOM of two GPUs: TP8 does not fit, said from the BOM
    bom_count(site, 2)
    check = layout_check(site, 1)
    assert check["outcome"] == "ERROR"
    assert ("layout TP8 needs 8 GPUs on gpu1 (tp=8 x 1 instance(s)), 2 found (the gpu "
            "group's BOM; no G1 record)") in check["message"]
    # 2. G1 counts the host's eight V100S (its BOM item misses: 8 found, 2 ordered):
    # G1's count comes first, and TP8 fits
    g1 = site.gate("run", "G1")
    assert g1.returncode == 1, g1.stdout + g1.stderr[-2000:]
    assert layout_check(site, 3)["outcome"] == "PASS"
    # 3. the host answers as a two-GPU workstation: G1 counts two, TP8 is ERROR
    inventory = site.root / "hosts.ini"
    inventory.write_text(inventory.read_text().replace("gate_sim_hardware=gpu-8xv100s",
                                                       "gate_sim_hardware=gpu-2xa5000"))
    assert site.gate("run", "G1").returncode == 1
    check = layout_check(site, 5)
    assert check["outcome"] == "ERROR"
    assert ("layout TP8 needs 8 GPUs on gpu1 (tp=8 x 1 instance(s)), 2 found (G1 run 4, "
            "nvidia-smi)") in check["message"]
    assert "within the GPUs G1 found on each host" in check["expected"]


def test_config_validate_holds_the_layouts_against_the_bom(tmp_path: Path) -> None:
    import subprocess

    from gate_testing import GATE

    from harness.demo import write_site

    made = write_site(tmp_path, "default")
    try:
        def validate(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*GATE, "config", "validate", "-c", str(made.config),
                                   *extra], capture_output=True, text=True, timeout=120)

        assert validate().returncode == 0  # the demo's 8 V100S hold TP8 and TP4x2
        short = validate("--set", "gates.g1.bom.gpu.gpu.count=4")
        assert short.returncode == 4 and "Traceback" not in short.stderr
        assert ("layouts[0]: layout TP8 needs 8 GPUs on gpu1 (tp=8 x 1 instance(s)), 4 "
                "found (the gpu group's BOM; no G1 record)") in short.stderr
    finally:
        made.ports.release()
