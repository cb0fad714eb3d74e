"""Reading `vllm bench serve --save-result` files: every captured variant, and the
per-request recomputation (arrays in vLLM's --save-detailed layout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.loadgen.engine import PhaseResult
from harness.loadgen.metrics import summarize
from harness.loadgen.records import RequestRecord
from harness.loadgen.report import to_vllm_json
from harness.loadgen.vllm_import import (
    benchmark_params,
    import_outcome,
    parse_vllm_bench,
    records_from_arrays,
    request_counts,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"
SERVE = FIX / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json"
RUN0 = FIX / "vllm-bench-sweep-run0_er0080_v0.25.1.json"
SWEEP = FIX / "vllm-bench-sweep-summary_er0080_v0.25.1.json"


def test_serve_result() -> None:
    runs = parse_vllm_bench(SERVE.read_text(), SERVE.name)
    assert len(runs) == 1
    r = runs[0]
    assert r.scalars["completed"] == 8 and r.scalars["request_rate"] == "inf"
    assert r.scalars["median_ttft_ms"] == pytest.approx(55.68139649994919)
    assert not r.has_arrays and r.warnings == [] and r.records == []
    params = benchmark_params(r)
    assert params["model_id"] == "facebook/opt-125m" and params["max_concurrency"] == 2
    assert "median_ttft_ms" not in params and "completed" not in params


def test_sweep_run_and_summary() -> None:
    run0 = parse_vllm_bench(RUN0.read_text(), RUN0.name)
    assert len(run0) == 1 and run0[0].scalars["run_number"] == 0
    sweep = parse_vllm_bench(SWEEP.read_text(), SWEEP.name)
    assert [r.scalars["run_number"] for r in sweep] == [0, 1]
    assert sweep[1].scalars["median_e2el_ms"] == pytest.approx(157.98742300103186)
    assert sweep[0].scalars == run0[0].scalars


def test_append_result_json_lines() -> None:
    lines = SERVE.read_text().strip().replace("\n", " ") + "\n" + RUN0.read_text().replace(
        "\n", " ") + "\n"
    runs = parse_vllm_bench(lines, "appended.json")
    assert [r.scalars["backend"] for r in runs] == ["vllm", "openai"]


@pytest.mark.parametrize("body, needle", [
    ('{"foo": 1}', "not a vllm bench serve result"),
    ("[1, 2]", "item 0 is a int"),
    ("this is not json\n", "not JSON"),
    ("", "empty file"),
])
def test_unknown_shapes_are_one_line_usage_errors(body: str, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_vllm_bench(body, "weird.json")
    assert needle in str(err.value)
    assert str(err.value).startswith("weird.json")
    assert "\n" not in err.value.one_line()


def _records() -> list[RequestRecord]:
    out = []
    for i in range(6):
        chunks = [0.05 + 0.01 * i + 0.004 * k for k in range(5 + i)]
        r = RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.1 * i,
                          sent=0.1 * i, ttft=chunks[0], ttft_text=chunks[0], e2el=chunks[-1],
                          chunk_times=chunks, prompt_tokens=100 + i, output_tokens=len(chunks),
                          usage_reported=True, status=200)
        out.append(r)
    out[4].error_kind, out[4].error, out[4].status = "http_503", "overloaded", 503
    return out


def detailed() -> dict[str, object]:
    recs = _records()
    s = summarize(recs, 1.5)
    res = PhaseResult(records=recs, wall_time=1.5, started_at=1.7e9, per_instance={0: s},
                      summary=s)
    return to_vllm_json(res, model="m", concurrency=4, rate=None)


def test_per_request_arrays_recompute_without_warnings() -> None:
    doc = detailed()
    runs = parse_vllm_bench(json.dumps(doc), "detailed.json")
    r = runs[0]
    assert r.has_arrays and r.warnings == []
    assert r.recomputed["completed"] == 5 and r.recomputed["failed"] == 1
    assert r.recomputed["median_ttft_ms"] == pytest.approx(doc["median_ttft_ms"])
    assert len(r.records) == 6 and r.records[4].error_kind == "vllm_error"
    assert r.records[2].itl == pytest.approx(_records()[2].itl)


def test_disagreement_with_the_files_summary_is_a_warning() -> None:
    doc = detailed()
    doc["median_ttft_ms"] = float(doc["median_ttft_ms"]) + 5.0  # type: ignore[arg-type]
    doc["completed"] = 6
    runs = parse_vllm_bench(json.dumps(doc), "tampered.json")
    text = " | ".join(runs[0].warnings)
    assert "median_ttft_ms" in text and "completed" in text
    assert all(w.startswith("tampered.json[0]") for w in runs[0].warnings)


def test_arrays_without_errors_or_latencies_use_vllm_identities() -> None:
    recs = records_from_arrays({"ttfts": [0.1, 0.0], "itls": [[0.02, 0.03], []],
                                "input_lens": [10, 10], "output_lens": [3, 0]})
    assert recs[0].ok and recs[0].e2el == pytest.approx(0.15)  # ttft + sum(itl)
    assert not recs[1].ok  # no errors array: a zero TTFT never streamed


def test_arrays_of_different_lengths_warn() -> None:
    doc = detailed()
    doc["ttfts"] = doc["ttfts"][:-1]  # type: ignore[index]
    runs = parse_vllm_bench(json.dumps(doc), "short.json")
    assert runs[0].warnings and "differ in length" in runs[0].warnings[0]


def test_an_import_has_no_verdict_unless_nothing_completed() -> None:
    """An import is not a gate: no verdict, whatever its numbers; ERROR only when no
    request in the file completed (nothing was measured)."""
    sweep = json.loads(SWEEP.read_text())
    assert import_outcome(parse_vllm_bench(json.dumps(sweep), "s.json"), "s.json") == (
        None, "16 requests completed; imported 2 vllm bench result(s) from s.json", "")
    sweep[1].update(completed=0, failed=8)  # one point of the sweep failed outright
    verdict, reason, problem = import_outcome(parse_vllm_bench(json.dumps(sweep)), "s.json")
    assert verdict is None and problem == "8 of 16 requests failed (1 of 2 results completed none)"
    assert reason == f"{problem}; imported 2 vllm bench result(s) from s.json"
    sweep[0].update(completed=0, failed=8)
    verdict, _, problem = import_outcome(parse_vllm_bench(json.dumps(sweep)), "s.json")
    assert verdict == "ERROR" and problem == "every request failed (completed 0 of 16)"


def test_failed_counts_without_vllms_failed_field() -> None:
    doc = json.loads(SERVE.read_text())
    del doc["failed"]
    doc["completed"] = 5
    (run,) = parse_vllm_bench(json.dumps(doc))
    assert request_counts(run) == (5, 3)  # num_prompts 8 - completed 5


@pytest.mark.parametrize("bad", ['"8"', "-1", "true", "NaN"])
def test_counts_that_are_not_numbers_are_usage_errors(bad: str) -> None:
    text = SERVE.read_text().replace('"completed": 8', f'"completed": {bad}')
    assert f'"completed": {bad}' in text
    with pytest.raises(UsageError, match=r"item 0: completed is .*, not a count / seconds"):
        parse_vllm_bench(text, "f.json")
