"""load.health in gate.yaml: bounded, and a looser bound weakens G3 (needs a sign-off)."""

from __future__ import annotations

import pytest

from harness.config.decision import deviations
from harness.config.loader import parse_config
from harness.errors import ConfigError
from harness.loadgen.health import HealthBounds

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"


def test_looser_health_bounds_weaken_g3_and_tighter_ones_do_not() -> None:
    cfg, _ = parse_config(BASE + "load: {health: {max_loop_lag_p99_ms: 250,\n"
                          "                   max_late_share: 0.01}}\n", "site/gate.yaml")
    found = {d.key: d for d in deviations(cfg.model_dump(mode="json"))}
    assert found["load.health.max_loop_lag_p99_ms"].weakened
    assert not found["load.health.max_late_share"].weakened
    assert "load generator" in found["load.health.max_loop_lag_p99_ms"].why


def test_the_config_model_and_the_loadgen_bounds_agree() -> None:
    cfg, _ = parse_config(BASE, "site/gate.yaml")
    assert HealthBounds.from_dict(cfg.load.health.model_dump()) == HealthBounds()


def test_a_health_bound_past_its_limit_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + "load: {health: {max_late_share: 2}}\n", "site/gate.yaml")
    assert err.value.key == "load.health.max_late_share" and "<= 1" in err.value.one_line()
