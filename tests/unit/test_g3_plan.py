"""G3 plan, preflight comparison and evidence rules (pure parts of harness.g3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harness.config.loader import parse_config
from harness.config.models import Evidence
from harness.g3.plan import dry_run, expected_checks, pair_order
from harness.g3.records import ArmRep
from harness.g3.rules import check_evidence, compare_cards, length_problem
from harness.loadgen.records import RequestRecord
from harness.serving.cells import cells, doc_seed
from harness.serving.phases import PhaseTokens, phase_tokens
from harness.serving.problems import Problem, ProblemKind

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
    plan = dry_run(config())
    assert len(plan.steps) == 4 * 3 * 2 * 6  # cells x min reps x arms x steps
    assert {s.step for s in plan.steps} == {"start", "warm", "restart", "drop_caches",
                                            "measured", "stop"}
    assert 0 < plan.total_min_s < plan.total_max_s
    assert len(plan.notes) == 4
    assert plan.notes[0] == "TP8-c4: 64 documents of 32000 tokens per phase, 3..5 ABBA pairs"


def card(model: str = "Qwen/Qwen2.5-32B-Instruct", tp: int | None = 8,
         version: str | None = "0.11") -> dict[str, Any]:
    return {"models": [model], "model": model, "max_model_len": 32768, "version": version,
            "tp": tp, "simulated": False}


def test_the_plan_is_every_preflight_check_and_every_cell() -> None:
    plan = expected_checks(config())
    assert plan[:4] == ["test_arms_serve_the_same_model[TP8]",
                        "test_arms_match_the_declared_layout[TP8]",
                        "test_arms_differ_only_by_the_accelerator[TP8]",
                        "test_accelerated_arm_exposes_external_cache[TP8]"]
    assert plan[-4:] == ["test_cell[TP8-c4]", "test_cell[TP8-c16]", "test_cell[TP4x2-c4]",
                         "test_cell[TP4x2-c16]"]
    assert len(plan) == len(set(plan)) == 2 * 4 + 4


def test_compare_cards_accepts_equal_arms_and_names_each_difference() -> None:
    cfg = config()
    tp8 = cfg.layout("TP8")
    assert compare_cards(cfg, tp8, {"baseline": [card()], "accelerated": [card()]}) == []
    found = compare_cards(cfg, tp8, {"baseline": [card()],
                                     "accelerated": [card(model="other/model", tp=4,
                                                          version="0.12")]})
    model = [p.text for p in found if p.kind is ProblemKind.MODEL]
    shape = [p.text for p in found if p.kind is ProblemKind.LAYOUT]
    text = " | ".join(model)
    assert "served model differs" in text and "engine version differs" in text
    assert "does not serve Qwen/Qwen2.5-32B-Instruct" in text
    assert any("tp=4" in p for p in shape) and not any("tp=" in p for p in model)
    short = compare_cards(cfg, cfg.layout("TP4x2"),
                          {"baseline": [card(tp=4)], "accelerated": [card(tp=4)] * 2})
    assert [p.kind for p in short] == [ProblemKind.LAYOUT]
    assert "1 instances answered" in short[0].text


def kind(problem: Problem | None) -> ProblemKind | None:
    return problem.kind if problem is not None else None


def rep(evidence: dict[str, Any], ttft: np.ndarray | None = None,
        lengths: PhaseTokens | None = None) -> ArmRep:
    t = np.ones(4) if ttft is None else ttft
    return ArmRep(t, lengths or PhaseTokens(128, t.size, t.size, 0), 1.0,
                  {"cold_restart": True, **evidence}, 1)


def record(finish: str | None = "length", tokens: int | None = 128, ok: bool = True,
           usage: bool = True) -> RequestRecord:
    return RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0,
                         ttft=0.1 if ok else None, output_tokens=tokens, usage_reported=usage,
                         finish_reason=finish, error_kind=None if ok else "http_500")


def test_throughput_counts_the_fixed_length_not_the_servers_word() -> None:
    """A proxy that inflates usage.completion_tokens cannot raise the throughput: it
    counts 128 x responses that ended at the fixed length; the inflated count only
    makes the phase disagree."""
    honest = phase_tokens([record()] * 99 + [record(ok=False)], 128)
    assert (honest.tokens, honest.completed, honest.disagree) == (99 * 128, 99, 0)
    inflated = phase_tokens([record(tokens=134)] * 99, 128)
    assert inflated.tokens == honest.tokens and inflated.disagree == 99
    assert kind(length_problem("accelerated", inflated, 0.01)) is ProblemKind.TOKENS_DISAGREE
    assert length_problem("baseline", honest, 0.01) is None
    early = phase_tokens([record(finish="stop", tokens=40)] + [record()] * 63, 128)
    assert early.tokens == 63 * 128
    assert kind(length_problem("baseline", early, 0.01)) is ProblemKind.LENGTH_NOT_FIXED
    no_usage = phase_tokens([record(usage=False, tokens=None)] * 10, 128)
    assert kind(length_problem("baseline", no_usage, 0.01)) is ProblemKind.TOKENS_DISAGREE


DEVICES = {"storage": {"bytes_read": 1e9, "hosts": 1.0}, "external_hit_tokens": 1000.0,
           "kv_bytes_per_token": 1e6}  # the accelerator's devices read the 1 GB cold KV


@pytest.mark.parametrize(("acc", "base", "words"), [
    ({"exposes_external": True, "external_hit_share": 0.9, **DEVICES},
     {"external_hit_tokens": 0}, ""),
    ({"exposes_external": True, "external_hit_share": 0.9}, {"external_hit_tokens": 0},
     "no device of the accelerator was sampled"),
    ({"exposes_external": False, "external_hit_share": 0.0}, {}, "no engine counter"),
    ({"exposes_external": True, "external_hit_share": 0.2}, {}, "accelerator not exercised"),
    ({"exposes_external": True, "external_hit_share": 0.9}, {"external_hit_tokens": 512},
     "baseline contaminated"),
])
def test_evidence_rules(acc: dict[str, Any], base: dict[str, Any], words: str) -> None:
    problem = check_evidence({"accelerated": rep(acc), "baseline": rep(base)}, Evidence())
    assert (words in str(problem)) if words else problem is None


def test_failed_requests_and_warm_gpu_cache_block_a_decision() -> None:
    good = {"exposes_external": True, "external_hit_share": 0.9, "prompt_tokens": 1000.0,
            "by_source": {"local_cache_hit": 0.0}, "cold_restart": True}
    failing = rep(good, np.array([1.0] * 97 + [np.inf] * 3))
    pair = {"accelerated": rep(good), "baseline": failing}
    failed = check_evidence(pair, Evidence())
    assert kind(failed) is ProblemKind.REQUESTS_FAILED
    assert "baseline arm: 3 of 100 requests failed" in str(failed)
    said = rep({**good, "first_failure": "HTTP 400: (empty body) x3"},
               np.array([1.0] * 97 + [np.inf] * 3))
    assert str(check_evidence({"accelerated": rep(good), "baseline": said}, Evidence())
               ).endswith("(first: HTTP 400: (empty body) x3)")
    warm = {**good, "by_source": {"local_cache_hit": 400.0}}
    assert kind(check_evidence({"accelerated": rep(good), "baseline": rep(warm)},
                               Evidence())) is ProblemKind.NOT_COLD
    lying = rep(good, np.ones(100), PhaseTokens(128, 100, 100, 100))
    assert kind(check_evidence({"accelerated": lying, "baseline": rep(good)},
                               Evidence())) is ProblemKind.TOKENS_DISAGREE
    not_restarted = {**good, "cold_restart": False}
    assert "restart was not cold" in str(check_evidence(
        {"accelerated": rep(not_restarted), "baseline": rep(good)}, Evidence()))
    unverified = {**good, "cold_restart": None}
    problem = check_evidence({"accelerated": rep(good), "baseline": rep(unverified)},
                             Evidence())
    assert kind(problem) is ProblemKind.NOT_COLD
    assert "baseline arm: the restart could not be verified" in str(problem)


def test_a_replaced_process_proves_a_restart_where_metrics_cannot() -> None:
    from harness.g3.rules import processes_replaced

    assert processes_replaced([(10, 500), (11, 501)], [(20, 900), (21, 901)]) is True
    assert processes_replaced([(10, 500), (11, 501)], [(20, 900), (11, 501)]) is False
    assert processes_replaced([(10, 500)], [None]) is None  # unreadable after
    assert processes_replaced([], []) is None  # nothing observed
    # a reused pid is another process: its start ticks differ
    assert processes_replaced([(10, 500)], [(10, 777)]) is True


def test_g3_phases_measure_again_past_a_ten_percent_simulator_stall() -> None:
    """G3 tightens load.health's simulator bound to 10 % and never loosens it; G2
    (sim_lag_cap=None) keeps the site's."""
    from harness.serving.phases import phase_spec

    site = config()
    assert phase_spec(site, 4, [], [], sim_lag_cap=None).health.max_sim_lag_share == 0.25
    assert phase_spec(site, 4, [], []).health.max_sim_lag_share == 0.10
    stricter = site.model_copy(update={"load": site.load.model_copy(update={
        "health": site.load.health.model_copy(update={"max_sim_lag_share": 0.05})})})
    assert phase_spec(stricter, 4, [], []).health.max_sim_lag_share == 0.05
