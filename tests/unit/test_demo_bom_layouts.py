"""Every demo scenario's bill of materials orders the GPUs its layouts need (issue 27 item
7): the BOM's GPU count is read from the GPU host's nvidia-smi capture
(harness/workflow/demo_hardware.py) and the layouts (harness/workflow/demo_site.py) ask
tp x instances of gpu1; only `bad-arrival`, whose GPU host is one T4 on purpose (G1
stops the campaign there), may not fit. The demo's own gate.yaml and hosts.ini are
written and loaded as `gate demo` writes and loads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.inventory import load_inventory
from harness.config.loader import load_config
from harness.demo import write_site
from harness.serving.layout_fit import misfits, ordered_gpus
from harness.workflow.demo_site import SCENARIOS


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_boms_gpus_fit_every_layout(scenario: str, tmp_path: Path) -> None:
    site = write_site(tmp_path, scenario)
    try:
        loaded = load_config(site.config)
        config = loaded.config
        gpus = ordered_gpus(config.gates.g1, load_inventory(site.root / "hosts.ini"))
    finally:
        site.ports.release()
    assert gpus["gpu1"].count >= 1
    short = [m.text() for layout in config.layouts for m in misfits(layout, gpus)]
    if scenario == "bad-arrival":  # one T4: G1 stops the campaign before any layout runs
        assert gpus["gpu1"].count == 1 and short
    else:
        assert short == [], short
        needed = max(layout.tp * len(layout.instances) for layout in config.layouts)
        assert gpus["gpu1"].count == needed == 8  # eight V100S, TP8 and TP4x2 on gpu1
