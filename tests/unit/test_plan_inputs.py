"""Where each of `gate plan`'s inputs comes from: a flag, then the site's plan:, then G2's
measurement, then G3's criteria; and which fio target is the accelerator's volume."""

from __future__ import annotations

from typing import Any

import pytest

from harness.config.models import SiteConfig
from harness.plan.g2 import G2Measured, Serving, measured_for, volume_target
from harness.plan.site import WhatIf, build
from harness.store.lookups import Fact

BASE: dict[str, Any] = {
    "site": {"name": "s"}, "campaign": {"name": "c"}, "model": {"name": "m"},
    "layouts": [{"name": "TP8", "tp": 8, "instances": [{"host": "gpu1", "port": 8000}]},
                {"name": "TP4x2", "tp": 4, "instances": [{"host": "gpu1", "port": 8000},
                                                         {"host": "gpu1", "port": 8001}]}],
    "gates": {"g3": {"tiers": [4, 16]}},
}


def site(**more: Any) -> SiteConfig:
    return SiteConfig.model_validate({**BASE, **more})


def g2(serving: dict[str, Serving], **facts: dict[str, Fact]) -> G2Measured:
    return G2Measured(campaign="c", volume=None, seq_read=facts.get("read", {}),
                      seq_write=facts.get("write", {}), gdsio={}, serving=serving, notes=())


def test_g2_s_baseline_gives_the_prefill_speed_and_g3_s_targets() -> None:
    """TP8 at c=16: 16 x 32 064 tokens in a 4 s TTFT p50 is 128 256 tok/s; G3 asks 25 %
    off that TTFT and 29 % on that throughput. c=4 takes the prefill speed of the nearest
    tier measured and G3's drop on the baseline predicted from it."""
    measured = g2({"TP8-c16": Serving("gpu1", 3, 4.0, 100.0, False)})
    planned = build(WhatIf(), site(), "gate.yaml", measured)
    tp8 = planned.inputs[0]
    c4, c16 = tp8.tiers
    assert c16.prefill_tok_s.value == pytest.approx(16 * 32_064 / 4.0)
    assert c16.prefill_tok_s.source == "G2 run 3 TP8-c16"
    assert c16.ttft_p50_s.value == pytest.approx(3.0)
    assert c16.throughput_tps.value == pytest.approx(129.0)
    assert c4.prefill_tok_s.source == "G2 run 3 TP8-c16, the nearest tier measured"
    assert c4.ttft_p50_s.value == pytest.approx(0.75 * 4 * 32_064 / (16 * 32_064 / 4.0))
    assert "predicted baseline" in c4.ttft_p50_s.source
    assert c4.throughput_tps.value is None  # no criterion on another tier's baseline
    # TP4x2 was not measured: nothing from TP8's engines
    assert all(t.prefill_tok_s.value is None for t in planned.inputs[1].tiers)
    assert planned.inputs[1].instances_per_host == 2


def test_flags_win_then_the_site_s_plan_then_g2() -> None:
    measured = g2({"TP8-c16": Serving("gpu1", 3, 4.0, 100.0, False)})
    cfg = site(plan={"ttft_p50": 2.0, "throughput": 50, "prefill_tok_s": 1000})
    c16 = build(WhatIf(), cfg, "gate.yaml", measured).inputs[0].tiers[1]
    assert (c16.ttft_p50_s.source, c16.throughput_tps.source) == ("plan.ttft_p50",
                                                                   "plan.throughput")
    assert c16.prefill_tok_s.source == "G2 run 3 TP8-c16"  # measured before configured
    flags = WhatIf(ttft_p50_s=1.0, throughput_tps=70.0, prefill_tok_s=9000.0)
    c16 = build(flags, cfg, "gate.yaml", measured).inputs[0].tiers[1]
    assert [f.source for f in (c16.ttft_p50_s, c16.throughput_tps, c16.prefill_tok_s)] == [
        "--ttft-p50", "--throughput", "--prefill-tok-s"]


def test_a_what_if_layout_replaces_the_site_s_and_takes_no_serving_figure() -> None:
    measured = g2({"TP8-c16": Serving("gpu1", 3, 4.0, 100.0, False)})
    planned = build(WhatIf(tp=8), site(), "gate.yaml", measured)
    (only,) = planned.inputs
    assert (only.layout, planned.hosts) == ("TP8", ((),))
    assert all(t.prefill_tok_s.value is None for t in only.tiers)


def test_gds_and_retention_defaults() -> None:
    planned = build(WhatIf(), site(gates={"g3": {"tiers": [4, 32]}, "g2": {"gds": True}}),
                    "gate.yaml", None)
    assert planned.inputs[0].gds and not any("no GDS" in n for n in planned.notes)
    assert [t.retention_docs for t in planned.inputs[0].tiers] == [64, 128]  # max(4c, 64)


def test_the_worst_host_of_the_layout_and_the_volume_target() -> None:
    measured = g2({}, read={"gpu1": Fact(2, 900.0, False), "gpu2": Fact(2, 800.0, False),
                            "st1": Fact(2, 100.0, True)})
    assert measured_for(["gpu1"], measured).seq_read.value == pytest.approx(900e6)
    assert measured_for([], measured).seq_read.value == pytest.approx(100e6)
    assert "simulated" in measured_for([], measured).seq_read.source
    fio = [{"name": "local", "path": "/mnt/a", "mount": "/mnt/a"},
           {"name": "fx100", "path": "/mnt/fx/t", "mount": "/mnt/fx"}]
    named = site(gates={"g2": {"fio": fio}}, plan={"volume": "local"})
    assert volume_target(named) is not None and volume_target(named).name == "local"  # type: ignore[union-attr]
    kv = {"evidence": {"kv_volume": {"path": "/mnt/fx/kv", "mount": "/mnt/fx"}}}
    by_mount = site(gates={"g2": {"fio": fio}, "g3": kv})
    assert volume_target(by_mount).name == "fx100"  # type: ignore[union-attr]
    assert volume_target(site(gates={"g2": {"fio": fio}})) is None
    assert volume_target(site(gates={"g2": {"fio": fio[:1]}})).name == "local"  # type: ignore[union-attr]
