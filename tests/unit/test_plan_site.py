"""The planner's reading of a site and of G2's facts, moved below the workflow so the G3
report can use it: the two serving rules it restates agree with harness.serving.cells,
G2's facts read out of the store's own Fact type, and the predictions set beside a
measurement (which read bandwidth, which error)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.config.models import SiteConfig
from harness.plan.g2 import G2Measured, Serving, fact_keys, from_facts
from harness.plan.site import WhatIf, build, docs_for, g3_layout_names
from harness.plan.versus import predictions, read_bandwidth, relative_error
from harness.serving import cells
from harness.store.lookups import Fact

BASE: dict[str, Any] = {
    "site": {"name": "s"}, "campaign": {"name": "c"}, "model": {"name": "m"},
    "layouts": [{"name": "TP8", "tp": 8, "instances": [{"host": "gpu1", "port": 8000}]},
                {"name": "TP4x2", "tp": 4, "instances": [{"host": "gpu1", "port": 8000},
                                                         {"host": "gpu1", "port": 8001}]}],
    "gates": {"g3": {"tiers": [4, 16]}},
}


def site(**gates: Any) -> SiteConfig:
    return SiteConfig.model_validate({**BASE, "gates": {**BASE["gates"], **gates}})


@pytest.mark.parametrize("g3", [{"tiers": [4, 16]}, {"tiers": [8], "layouts": ["TP4x2"]}])
def test_the_restated_serving_rules_are_the_serving_layers(g3: dict[str, Any]) -> None:
    cfg = site(g3=g3)
    assert g3_layout_names(cfg) == [layout.name for layout in cells.layouts(cfg)]
    for tier, per, least in [(4, 4, 64), (16, 4, 64), (32, 4, 0), (3, 7, 10)]:
        assert docs_for(tier, per, least) == cells.docs_for(tier, per, least)


def test_g2s_facts_are_read_from_the_stores_fact_type() -> None:
    """fio MB/s -> bytes / s (the worst host), the serving baseline's medians; a cell that
    completed nothing is left out with a note."""
    cfg = site(g2={"fio": [{"name": "volume", "path": "/kv/fio"}]})
    keys = fact_keys(cfg, [4, 16])
    assert keys[:3] == ["fio volume seq-read", "fio volume seq-write", "gdsio read GiB/s"]
    assert "serving prefill TP4x2-c16" in keys
    facts = {"fio volume seq-read": {"gpu1": Fact(2, 5000.0, False),
                                     "st1": Fact(2, 4000.0, False)},
             "serving prefill TP8-c16": {"gpu1": Fact(2, {"ttft_p50_s": [3.0, 5.0, 4.0],
                                                          "throughput_tps": [90, 110]},
                                                  False)},
             "serving prefill TP8-c4": {"gpu1": Fact(2, {"ttft_p50_s": [float("nan")],
                                                         "throughput_tps": [1.0]}, False)}}
    g2 = from_facts(cfg, facts, [4, 16])
    assert g2.serving == {"TP8-c16": Serving("gpu1", 2, 4.0, 100.0, False)}
    assert any("'serving prefill TP8-c4'" in n for n in g2.notes)
    # a host of the layout measured it: the storage host's lower figure is not the layout's
    assert read_bandwidth(("gpu1",), g2).value == pytest.approx(5e9)
    assert read_bandwidth((), g2).value == pytest.approx(4e9)


def test_predictions_read_fio_before_gdsio_and_say_the_error() -> None:
    """TP8, c=16, prefill from G2 (16 x 32 064 / 4 s): the baseline gives G2's 4 s back;
    the accelerated arm is 16 x 64 / P + 16 x 32 000 x kvb / read (GDS: no host copy);
    gdsio reads only where fio did not."""
    cfg = site(g2={"gds": True})
    gdsio = {"gpu1": Fact(2, 10.0, False)}  # GiB/s
    g2 = G2Measured(campaign="c", volume=None, seq_read={}, seq_write={}, gdsio=gdsio,
                    serving={"TP8-c16": Serving("gpu1", 3, 4.0, 100.0, False)}, notes=())
    planned = build(WhatIf(concurrency=(16,)), cfg, None, g2)
    tp8, tp4 = predictions(planned, g2)
    prefill = 16 * 32_064 / 4.0
    kvb = 64 * 8 * 128 * 2 * 2  # the default model: R1's Qwen2.5-32B
    assert tp8.baseline_s == pytest.approx(4.0)
    assert tp8.read.value == pytest.approx(10 * 2**30)
    assert tp8.accelerated_s == pytest.approx(16 * 64 / prefill + 16 * 32_000 * kvb
                                              / (10 * 2**30))
    assert tp4.baseline_s is None and tp4.accelerated_s is None  # G2 served no TP4x2
    with_fio = G2Measured(**{**g2.__dict__, "seq_read": {"gpu1": Fact(2, 3000.0, False)}})
    (first, _) = predictions(planned, with_fio)
    assert first.read.value == pytest.approx(3e9)
    assert relative_error(4.4, 4.0) == pytest.approx(0.1)
    assert relative_error(1.0, 0.0) is None and relative_error(1.0, float("inf")) is None
