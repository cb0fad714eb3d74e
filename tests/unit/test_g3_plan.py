"""G3 plan, preflight comparison and evidence rules (pure parts of harness.g3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harness.config.loader import parse_config
from harness.config.models import Evidence
from harness.g3.plan import cells, doc_seed, dry_run, pair_order
from harness.g3.rules import check_evidence, compare_arms
from harness.g3.session import ArmRep

CONFIG = """\
site: {name: s}
campaign: {name: c}
model: {name: Qwen/Qwen2.5-32B-Instruct}
arms:
  baseline: {start: {command: [/bin/true]}, stop: {command: [/bin/true]}}
  accelerated: {start: {command: [/bin/true]}, stop: {command: [/bin/true]}}
layouts:
  - {name: TP8, tp: 8, instances: [{host: gpu1, port: 8000}]}
  - {name: TP4x2, tp: 4, instances: [{host: gpu1, port: 8000}, {host: gpu1, port: 8001}]}
gates: {g3: {tiers: [4, 16], repetitions: {min: 3, max: 5}}}
"""


def config() -> Any:
    return parse_config(CONFIG, "gate.yaml")[0]


def test_cells_are_layouts_times_tiers() -> None:
    assert [c.key for c in cells(config())] == ["TP8-c4", "TP8-c16", "TP4x2-c4", "TP4x2-c16"]


def test_pairs_alternate_abba_and_are_seeded() -> None:
    orders = [pair_order(7, "TP8-c4", rep) for rep in range(4)]
    assert orders[0] == orders[2] and orders[1] == orders[3]
    assert orders[0] == tuple(reversed(orders[1]))
    assert orders == [pair_order(7, "TP8-c4", rep) for rep in range(4)]
    firsts = {pair_order(seed, "TP8-c4", 0)[0] for seed in range(40)}
    assert firsts == {"baseline", "accelerated"}  # the seed decides who starts


def test_both_arms_of_a_pair_share_documents_each_rep_gets_new_ones() -> None:
    assert doc_seed(7, 0) == doc_seed(7, 0)
    assert doc_seed(7, 0) != doc_seed(7, 1)


def test_dry_run_lists_every_step_and_totals() -> None:
    steps, low, high = dry_run(config())
    assert len(steps) == 4 * 3 * 2 * 6  # cells x min reps x arms x steps
    assert {s.step for s in steps} == {"start", "warm", "restart", "drop_caches", "measured",
                                       "stop"}
    assert 0 < low < high


def card(model: str = "Qwen/Qwen2.5-32B-Instruct", tp: int | None = 8,
         version: str | None = "0.11") -> dict[str, Any]:
    return {"models": [model], "model": model, "max_model_len": 32768, "version": version,
            "tp": tp, "simulated": False}


def test_compare_arms_accepts_equal_arms_and_names_each_difference() -> None:
    cfg = config()
    tp8 = cfg.layout("TP8")
    assert compare_arms(cfg, tp8, {"baseline": [card()], "accelerated": [card()]}) == []
    problems = compare_arms(cfg, tp8, {"baseline": [card()],
                                       "accelerated": [card(model="other/model", tp=4,
                                                            version="0.12")]})
    text = " | ".join(problems)
    assert "served model differs" in text and "engine version differs" in text
    assert "does not serve Qwen/Qwen2.5-32B-Instruct" in text
    assert "tp=4" in text
    short = compare_arms(cfg, cfg.layout("TP4x2"),
                         {"baseline": [card(tp=4)], "accelerated": [card(tp=4)] * 2})
    assert any("1 instances answered" in p for p in short)


def rep(evidence: dict[str, Any]) -> ArmRep:
    return ArmRep(np.ones(4), 100, 1.0, evidence, 1)


@pytest.mark.parametrize(("acc", "base", "words"), [
    ({"exposes_external": True, "external_hit_share": 0.9}, {"external_hit_tokens": 0}, ""),
    ({"exposes_external": False, "external_hit_share": 0.0}, {}, "no external-cache counters"),
    ({"exposes_external": True, "external_hit_share": 0.2}, {}, "accelerator not exercised"),
    ({"exposes_external": True, "external_hit_share": 0.9}, {"external_hit_tokens": 512},
     "baseline contaminated"),
])
def test_evidence_rules(acc: dict[str, Any], base: dict[str, Any], words: str) -> None:
    problem = check_evidence({"accelerated": rep(acc), "baseline": rep(base)}, Evidence())
    assert (words in problem) if words else problem == ""


def test_failed_requests_and_warm_gpu_cache_block_a_decision() -> None:
    good = {"exposes_external": True, "external_hit_share": 0.9, "prompt_tokens": 1000.0,
            "by_source": {"local_cache_hit": 0.0}, "cold_restart": True}
    failing = ArmRep(np.array([1.0] * 97 + [np.inf] * 3), 100, 1.0, good, 1)
    pair = {"accelerated": rep(good), "baseline": failing}
    assert "baseline arm: 3 of 100 requests failed" in check_evidence(pair, Evidence())
    warm = {**good, "by_source": {"local_cache_hit": 400.0}}
    assert "not cold" in check_evidence({"accelerated": rep(good), "baseline": rep(warm)},
                                        Evidence())
    longer = ArmRep(np.ones(100), 100 * 140, 1.0, good, 1)
    shorter = ArmRep(np.ones(100), 100 * 128, 1.0, good, 1)
    assert "output lengths differ" in check_evidence(
        {"accelerated": longer, "baseline": shorter}, Evidence())
    not_restarted = {**good, "cold_restart": False}
    assert "restart was not cold" in check_evidence(
        {"accelerated": rep(not_restarted), "baseline": rep(good)}, Evidence())
