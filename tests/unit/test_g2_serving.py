"""G2's serving baseline, the pure parts: a repetition's figures from request records, the
sanity judgement (failed share and CV -> STOP-LOSS, a saturated client -> INCONCLUSIVE,
nothing completed never passes), the plan per G3 cell and the config checks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.config.inventory import Inventory, load_inventory
from harness.config.models import G2Serving, SiteConfig
from harness.errors import UsageError
from harness.g2.plan import expected_checks, serving_cells, validate, weakened
from harness.g2.serving import RepFigures, cv, judge, rep_figures
from harness.loadgen.records import RequestRecord
from harness.report.i18n import translator
from harness.report.reasons import say

ARM = {"start": {"command": ["true"]}, "stop": {"command": ["true"]}}


def site(tmp_path: Path, serving: dict[str, object] | None, *, simulated: bool = False,
         arms: bool = True) -> tuple[SiteConfig, Inventory]:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n")
    g2: dict[str, object] = {"gpu_health": False, "serving": serving}
    raw: dict[str, object] = {
        "site": {"name": "s"}, "campaign": {"name": "c"}, "inventory": "hosts.ini",
        "model": {"name": "m"}, "simulated": simulated,
        "layouts": [{"name": "TP8", "tp": 8, "instances": [{"host": "g1", "port": 8000}]},
                    {"name": "TP4", "tp": 4, "instances": [{"host": "g1", "port": 8001}]}],
        "gates": {"g2": g2, "g3": {"tiers": [4, 16]}}}
    if arms:
        raw["arms"] = {"baseline": ARM, "accelerated": ARM}
    return SiteConfig.model_validate(raw), load_inventory(tmp_path / "hosts.ini")


def serving_weakened(config: SiteConfig) -> list[str]:
    """The serving baseline's weakened lines (these sites measure no fio, no GPU health)."""
    return [w for w in weakened(config) if w.startswith("G2 serving")]


def record(i: int, *, ttft: float | None = 0.5, error: str | None = None,
           prompt: int | None = None) -> RequestRecord:
    return RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.0,
                         sent=0.0, ttft=None if error else ttft, prompt_tokens=prompt,
                         output_tokens=None if error else 16, usage_reported=error is None,
                         error_kind="http" if error else None, error=error,
                         finish_reason=None if error else "length")


def test_rep_figures_count_completed_requests_at_the_fixed_length() -> None:
    records = [record(0, ttft=0.2, prompt=1000), record(1, ttft=0.4),
               record(2, ttft=0.9, prompt=1000), record(3, error="HTTP 500")]
    figures = rep_figures(records, 2.0, 16, {0: 999, 1: 1000, 2: 999, 3: 1000})
    assert figures.ttft_p50_s == pytest.approx(0.4)
    assert figures.throughput_tps == pytest.approx(3 * 16 / 2.0)
    assert figures.prefill_tps == pytest.approx(3000 / 2.0)  # usage first, else calibrated
    assert (figures.requests, figures.failed) == (4, 1)


def test_cv() -> None:
    assert cv([1.0, 1.0, 1.0]) == 0.0
    assert cv([9.0, 11.0]) == pytest.approx(math.sqrt(2) / 10)
    assert math.isnan(cv([1.0])) and math.isnan(cv([0.0, 0.0]))


def rep(ttft: float = 1.0, thr: float = 100.0, failed: int = 0,
        saturation: str = "") -> RepFigures:
    return RepFigures(ttft, thr, 5000.0, 10, failed, saturation)


def test_steady_baseline_passes() -> None:
    j = judge([rep(1.0), rep(1.02), rep(0.99)], G2Serving())
    assert not j.missed and not j.undecided and j.prefill_tps == 5000.0
    assert "TTFT p50 1 s (CV 1.5%)" in j.measured([rep(1.0), rep(1.02), rep(0.99)])


def test_failures_and_noise_are_missed_criteria() -> None:
    j = judge([rep(failed=1), rep(1.5, thr=60.0)], G2Serving())
    assert j.missed == ("5.0% of 20 requests failed (at most 0.0%)",
                        "TTFT p50 CV 28.3% across repetitions (at most 10%)",
                        "throughput CV 35.4% across repetitions (at most 10%)")
    assert not judge([rep(failed=1), rep()],
                     G2Serving(max_failed_share=0.05)).missed
    en = translator("en")  # the reasons as codes say the same words (the report's zh)
    assert tuple(say(en, w) for w in j.missed_why) == j.missed
    reps = [rep(failed=1), rep(1.5, thr=60.0)]
    assert say(en, j.measured_why(reps)) == j.measured(reps)


def test_nothing_completed_never_passes_and_saturation_is_undecided() -> None:
    nan = float("nan")
    assert judge([rep(nan), rep(nan)], G2Serving()).missed  # nan CV misses
    j = judge([rep(), rep(3.0, saturation="loop lag 80 ms")], G2Serving())
    assert j.undecided == ("repetition 2: client saturated (loop lag 80 ms)",)
    assert tuple(say(translator("en"), w) for w in j.undecided_why) == j.undecided
    assert j.missed == ()  # its timings are the client's: the CV is not judged
    j = judge([rep(), rep(failed=2, saturation="lag")], G2Serving())
    assert j.missed == ("10.0% of 20 requests failed (at most 0.0%)",)  # the server's errors
    timeouts = RepFigures(1.0, 100.0, 5000.0, 10, 2, "lag", client_failed=2)
    assert judge([rep(), timeouts], G2Serving()).missed == ()


def test_plan_is_g3s_cells_or_the_named_subset(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {})
    validate(config, inv)
    assert [c for c in expected_checks(config, inv) if c.startswith("test_serving")] == [
        "test_serving[TP8-c4]", "test_serving[TP8-c16]", "test_serving[TP4-c4]",
        "test_serving[TP4-c16]"]
    # one engine-version check per layout the serving baseline starts
    assert [c for c in expected_checks(config, inv) if c.startswith("test_engine")] == [
        "test_engine_version[TP8]", "test_engine_version[TP4]"]
    assert serving_weakened(config) == []
    config, inv = site(tmp_path, {"layouts": ["TP8"], "tiers": [16, 8], "max_cv": 0.2})
    assert [c.key for c in serving_cells(config)] == ["TP8-c16", "TP8-c8"]
    assert expected_checks(config, inv)[-1] == "test_engine_version[TP8]"
    assert serving_weakened(config) == ["G2 serving: G3's cells TP4-c16, TP4-c4, TP8-c4 have no "
                                "baseline (gates.g2.serving.layouts / tiers)",
                                "G2 serving: max_cv 0.2 (default 0.1)"]
    assert weakened(site(tmp_path, {"max_cv": 0.2}, simulated=True)[0]) == []


def test_not_measured_is_weakened_at_a_real_site(tmp_path: Path) -> None:
    config, _ = site(tmp_path, None)
    assert serving_cells(config) == []
    assert serving_weakened(config) == ["G2 serving baseline not measured (gates.g2.serving: null)"]
    config, _ = site(tmp_path, {}, arms=False)  # nothing to serve yet: not planned, and said
    assert serving_cells(config) == []
    assert serving_weakened(config) == ["G2 serving baseline not measured (no arms configured)"]


@pytest.mark.parametrize(("serving", "key"), [
    ({"layouts": ["TP2"]}, "gates.g2.serving.layouts"),
    ({"tiers": [0]}, "gates.g2.serving.tiers")])
def test_bad_serving_config_names_the_key(tmp_path: Path, serving: dict[str, object],
                                          key: str) -> None:
    config, inv = site(tmp_path, serving)
    with pytest.raises(UsageError) as err:
        validate(config, inv)
    assert err.value.key == key and err.value.exit_code == 4


def test_limits_have_bounds() -> None:
    for bad in ({"max_cv": 0.3}, {"max_failed_share": 0.1}, {"repetitions": 1}):
        with pytest.raises(ValueError):
            G2Serving.model_validate(bad)


def test_progress_names_a_g2_repetition_not_a_pair() -> None:
    from harness.cli.progress import progress_line

    d = {"gate": "G2", "layout": "TP8", "tier": 8, "arm": "baseline", "repetition": 1,
         "phase": "serving", "done": 0, "total": 8, "phase_no": 3, "phases_planned": 3}
    assert progress_line(d, 4.0).startswith("G2 · TP8 · c=8 · baseline · rep 2 · serving: ")


def test_a_phase_that_measured_nothing_is_an_error_quoting_the_server() -> None:
    """Every request failed (or the phase timed out): nothing to judge, so ERROR (a
    MeasurementError), never a STOP-LOSS on a 100 % failed share, never a PASS."""
    from types import SimpleNamespace

    from harness.errors import MeasurementError
    from harness.serving.phase_checks import ended_in_time, measured_something

    config = SiteConfig.model_validate({"site": {"name": "s"}, "campaign": {"name": "c"},
                                        "inventory": "hosts.ini", "model": {"name": "m"}})
    failed = [record(i, error="HTTP 500: engine broken") for i in range(3)]
    with pytest.raises(MeasurementError, match=r"every request of the baseline serving "
                       r"phase failed \(3x\), e\.g\. .*HTTP 500: engine broken"):
        measured_something(failed, "baseline serving", "g2 serving serving", config)
    with pytest.raises(MeasurementError, match=r"returned no request records"):
        measured_something([], "baseline serving", "g2 serving serving", config)
    stopped = SimpleNamespace(status="TIMEOUT",
                              result=SimpleNamespace(params={"phase_timeout": 5.0}))
    with pytest.raises(MeasurementError, match=r"ran past gates\.g3\.phase_timeout \(5 s\)"):
        ended_in_time(stopped, "baseline warm", "g2 serving warm")  # type: ignore[arg-type]
    measured_something([*failed, record(9)], "baseline serving", "g2 serving serving",
                       config)  # one answered: judged by the failed share


def test_fewer_documents_than_g3_or_looser_client_health_weakens_g2(tmp_path: Path) -> None:
    """G2 judges its serving phases with G3's load.health bounds and G3's documents: one
    request a repetition, or a starved load generator, is not the baseline G3 relies on."""
    config, _ = site(tmp_path, {"docs": 1})
    assert serving_weakened(config) == ["G2 serving: docs 1 a repetition, fewer than G3 asks "
                                        "at c=4, 16"]
    config, _ = site(tmp_path, {"docs": 64})  # G3: max(4 x c, 64) documents
    assert serving_weakened(config) == []
    raw = site(tmp_path, {})[0].model_dump(mode="json")
    raw["load"]["health"]["max_loop_lag_p99_ms"] = 1000
    assert serving_weakened(SiteConfig.model_validate(raw)) == [
        "G2 serving: load.health.max_loop_lag_p99_ms = 1000 (default 100) (weaker: needs a "
        "reviewer's sign-off)"]
