"""G3: with vs without the accelerator, same model, same TP layout, long-context cold
recovery. Preflight checks per layout, then one check per layout x concurrency cell.
The checks are listed in harness.g3.plan (PREFLIGHT, expected_checks): the runner
holds the stored results against that plan."""

from __future__ import annotations

import pytest

from harness.config.models import Layout
from harness.errors import Inconclusive, MeasurementError, NeedsSignoff
from harness.g3.preflight import layout_gpu_problems
from harness.g3.session import G3Session
from harness.pytest_plugin import CheckRecorder
from harness.reasons import Reason, per_arm
from harness.serving.cells import Cell
from harness.serving.problems import ProblemKind, joined, not_compared, why


def _preflight(reason: Reason) -> Reason:
    """A MeasurementError's message at stage preflight ("stage preflight: ...")."""
    return Reason("stage", {"stage": "preflight", "reason": reason})


def test_arms_serve_the_same_model(g3: G3Session, layout: Layout,
                                   check: CheckRecorder) -> None:
    pre = g3.preflight(layout)
    check.expect(f"both arms serve {g3.config.model.name} with the same max_model_len "
                 "and engine version",
                 Reason("g3.same_model_expected", {"model": g3.config.model.name}))
    models = {arm: sorted({str(c["model"]) for c in cards}) for arm, cards in pre.cards.items()}
    check.measure(models, per_arm(models))
    if pre.of(ProblemKind.MODEL):
        check.explain(_preflight(Reason("g3.not_comparable",
                                        parts=tuple(map(why, pre.of(ProblemKind.MODEL))))))
        raise MeasurementError("arms are not comparable: " + joined(pre.of(ProblemKind.MODEL)),
                               stage="preflight")


def test_arms_match_the_declared_layout(g3: G3Session, layout: Layout,
                                        check: CheckRecorder) -> None:
    pre = g3.preflight(layout)
    check.expect(f"tp={layout.tp}, {len(layout.instances)} instance(s) on both arms, within "
                 "the GPUs G1 found on each host (else its BOM's)",
                 Reason("g3.layout_expected", {"tp": layout.tp, "n": len(layout.instances)}))
    tps = {arm: [c["tp"] for c in cards] for arm, cards in pre.cards.items()}
    check.measure(tps, per_arm(tps))
    misfit = layout_gpu_problems(g3.gate.store, g3.gate.run_id, g3.config, g3.gate.inventory,
                                 layout)
    if misfit:  # more GPUs than the host has, or none counted: never a PASS
        check.explain(_preflight(Reason("g3.layout_misfit", parts=tuple(map(why, misfit)))))
        raise MeasurementError("the layout does not fit its hosts' GPUs: " + joined(misfit),
                               stage="preflight")
    if pre.of(ProblemKind.LAYOUT):
        check.explain(_preflight(Reason("g3.not_comparable",
                                        parts=tuple(map(why, pre.of(ProblemKind.LAYOUT))))))
        raise MeasurementError("arms are not comparable: " + joined(pre.of(ProblemKind.LAYOUT)),
                               stage="preflight")


def test_arms_differ_only_by_the_accelerator(g3: G3Session, layout: Layout,
                                             check: CheckRecorder) -> None:
    pre = g3.preflight(layout)
    allowed = g3.config.arms.accelerated.differs_by if g3.config.arms else []
    check.expect("the engines' argv, environment and reported config are equal, except: "
                 + (", ".join(allowed) or "nothing"),
                 Reason("g3.differ_expected",
                        {"allowed": ", ".join(allowed) or Reason("g3.nothing")}))
    check.measure(pre.identity.summary(), pre.identity.summary_why())
    if pre.unreadable:
        raise MeasurementError("engines not verified: " + "; ".join(pre.unreadable),
                               stage="preflight")
    if not pre.identity.equal:
        raise MeasurementError(pre.identity.summary(), stage="preflight")


def test_accelerated_arm_exposes_external_cache(g3: G3Session, layout: Layout,
                                                check: CheckRecorder) -> None:
    pre = g3.preflight(layout)
    check.expect("vllm:external_prefix_cache_*, lmcache:* or sglang:prefetched_tokens on "
                 "every accelerated instance", Reason("g3.exposes_expected"))
    storage_ok = g3.config.gates.g3.evidence.allow_storage_evidence
    words, code = (("present", "g3.present") if pre.accelerated_exposes_external else
                   ("absent; storage-side evidence allowed", "g3.absent_storage_ok")
                   if storage_ok else ("absent", "g3.absent"))
    check.measure(words, Reason(code))
    if not pre.accelerated_exposes_external and not storage_ok:
        raise Inconclusive("the accelerated arm exposes no counter that proves the tier was "
                           "read (llama.cpp, TGI and Ollama have none): nothing would prove "
                           "the tier was hit; gates.g3.evidence.allow_storage_evidence lets "
                           "storage read bandwidth or a KV store's counters stand in")


def test_cell(g3: G3Session, cell: Cell, check: CheckRecorder) -> None:
    pre = g3.preflight(cell.layout)
    if pre.problems:
        check.explain(_preflight(not_compared(pre.problems)))
        raise MeasurementError("not compared: preflight found " + joined(pre.problems),
                               stage="preflight")
    t = g3.config.gates.g3.thresholds
    confidence = g3.config.gates.g3.confidence
    check.expect(f"TTFT p50 drop >= {t.ttft_p50_drop:.0%} and throughput gain >= "
                 f"{t.throughput_gain:.0%} (band top {t.band_top:.0%}), whole "
                 f"{confidence:.0%} CI",
                 Reason("g3.cell_expected", {
                     "drop": f"{t.ttft_p50_drop:.0%}", "gain": f"{t.throughput_gain:.0%}",
                     "top": f"{t.band_top:.0%}", "confidence": f"{confidence:.0%}"}))
    decision, problem = g3.run_cell(cell)
    note, signoff = g3.cell_notes(cell)
    if decision is not None:
        d = decision
        shown = {"drop": f"{d.drop.value:.1%}", "drop_lo": f"{d.drop.lo:.1%}",
                 "drop_hi": f"{d.drop.hi:.1%}", "gain": f"{d.gain.value:.1%}",
                 "gain_lo": f"{d.gain.lo:.1%}", "gain_hi": f"{d.gain.hi:.1%}"}
        measured = Reason("g3.cell_measured", {**shown, "pairs": d.repetitions})
        check.measure(f"drop {shown['drop']} [{shown['drop_lo']}, {shown['drop_hi']}], gain "
                      f"{shown['gain']} [{shown['gain_lo']}, {shown['gain_hi']}], "
                      f"{d.repetitions} pairs" + (f"; {note[0]}" if note else ""),
                      Reason("g3.cell_measured_note", {"measured": measured, "note": note[1]})
                      if note else measured)
    if problem is not None:
        if decision is not None:
            g3.store_cell(cell, decision, [], override=problem)
        check.explain(why(problem))
        raise Inconclusive(problem.text)
    if decision is None:  # no look was reached: nothing was decided
        raise MeasurementError("no decision was reached for the cell", stage="decision")
    verdict = decision.verdict.value
    if decision.why is not None:
        check.explain(decision.why if verdict != "STOP-LOSS" else
                      Reason("cell.stop_loss", {"reason": decision.why}))
    if decision.needs_signoff:
        raise NeedsSignoff(decision.reason)
    if verdict == "PASS" and signoff is not None:
        check.explain(signoff[1])
        raise NeedsSignoff(signoff[0])
    if verdict == "INCONCLUSIVE":
        raise Inconclusive(decision.reason)
    if verdict == "STOP-LOSS":
        pytest.fail(f"STOP-LOSS: {decision.reason}", pytrace=False)
    if verdict != "PASS":
        raise MeasurementError(f"unexpected cell verdict {verdict}", stage="decision")
