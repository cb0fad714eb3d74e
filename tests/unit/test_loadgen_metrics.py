"""summarize() follows vllm/benchmarks/serve.py calculate_metrics, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.loadgen.metrics import percentile_inf, summarize, tpot_of
from harness.loadgen.records import RequestRecord, pack_chunks, unpack_chunks


def rec(idx: int, chunks: list[float], out: int, prompt: int, *, sent: float = 0.0,
        kind: str | None = None, warmup: bool = False) -> RequestRecord:
    r = RequestRecord(idx=idx, instance=0, doc_id=idx, warmup=warmup, scheduled=sent, sent=sent,
                      chunk_times=list(chunks), prompt_tokens=prompt, output_tokens=out,
                      usage_reported=True, status=200, error_kind=kind)
    if chunks:
        r.ttft, r.e2el, r.ttft_text = chunks[0], chunks[-1], chunks[0]
    return r


@pytest.fixture
def records() -> list[RequestRecord]:
    return [
        rec(0, [0.1, 0.15, 0.2, 0.3], 4, 10, sent=0.0),
        rec(1, [0.2, 0.4], 2, 20, sent=0.1),
        rec(2, [0.5], 1, 5, sent=1.0),
        rec(3, [], 0, 7, sent=0.2, kind="http_500"),
        rec(4, [9.0, 9.5], 2, 100, sent=0.0, warmup=True),
    ]


def test_counts_and_throughput_exclude_failures_and_warmup(records: list[RequestRecord]) -> None:
    s = summarize(records, 2.0)
    assert (s.completed, s.failed, s.warmup_excluded) == (3, 1, 1)
    assert s.failed_by_kind == {"http_500": 1}
    assert (s.total_input_tokens, s.total_output_tokens) == (35, 7)
    assert s.request_throughput == pytest.approx(1.5)
    assert s.output_throughput == pytest.approx(3.5)
    assert s.total_token_throughput == pytest.approx(21.0)


def test_latency_distributions_in_ms(records: list[RequestRecord]) -> None:
    s = summarize(records, 2.0)
    assert s.ttft.mean == pytest.approx(266.6667, rel=1e-5)
    assert s.ttft.median == pytest.approx(200.0)
    assert s.ttft.p99 == pytest.approx(494.0)  # numpy linear: 200 + 0.98 * 300
    assert s.ttft.std == pytest.approx(float(np.std([100, 200, 500])))
    # TPOT only for output_tokens > 1: (0.3-0.1)/3 and (0.4-0.2)/1
    assert s.tpot.n == 2
    assert s.tpot.mean == pytest.approx((200 / 3 + 200) / 2)
    # ITL: every gap between choice chunks of successful requests
    assert s.itl.n == 4
    assert s.itl.median == pytest.approx(75.0)
    assert s.e2el.median == pytest.approx(400.0)


def test_gate_variant_counts_failures_as_infinite_ttft(records: list[RequestRecord]) -> None:
    s = summarize(records, 2.0)
    assert s.ttft_p50_with_failures_inf == pytest.approx(350.0)  # [100, 200, 500, inf]
    assert math.isinf(s.ttft_p99_with_failures_inf)
    assert s.to_dict()["ttft_p99_with_failures_inf"] == "inf"


def test_goodput_uses_vllms_rules(records: list[RequestRecord]) -> None:
    assert summarize(records, 2.0, slo={"ttft": 250}).request_goodput == pytest.approx(1.0)
    # TPOT is 0 for a one-token answer (vLLM's all_tpots); r1's 200 ms TPOT misses 150
    both = summarize(records, 2.0, slo={"ttft": 250, "tpot": 150})
    assert both.request_goodput == pytest.approx(0.5)
    assert summarize(records, 2.0).request_goodput is None
    with pytest.raises(ValueError, match="unknown SLO"):
        summarize(records, 2.0, slo={"itl": 5})


def test_peaks_follow_vllm(records: list[RequestRecord]) -> None:
    s = summarize(records, 2.0)
    assert s.max_concurrent_requests == 2  # [0, .3) overlaps [.1, .5); [1, 1.5) alone
    assert s.max_output_tokens_per_s == 6.0  # six token chunks land in second 0


def test_empty_phase_gives_vllm_zeros() -> None:
    s = summarize([], 1.0)
    assert (s.completed, s.ttft.mean, s.ttft.p99, s.itl.median) == (0, 0.0, 0.0, 0.0)
    assert math.isinf(s.ttft_p50_with_failures_inf)


def test_percentile_inf_matches_numpy_when_finite() -> None:
    xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    for q in (0, 10, 50, 90, 99, 100):
        assert percentile_inf(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    assert percentile_inf([1.0, math.inf, math.inf], 50) == math.inf
    assert percentile_inf([1.0, 2.0, math.inf], 50) == 2.0


def test_tpot_of_short_answers() -> None:
    assert tpot_of(rec(0, [0.1], 1, 1)) == 0.0
    assert tpot_of(rec(0, [0.1, 0.3], 3, 1)) == pytest.approx(0.1)


def test_chunks_blob_roundtrip_and_row(records: list[RequestRecord]) -> None:
    blob = pack_chunks([0.1, 0.15, 1234.5])
    assert len(blob) == 12
    assert unpack_chunks(blob).tolist() == pytest.approx([0.1, 0.15, 1234.5], rel=1e-6)
    assert unpack_chunks(None).size == 0
    row = records[0].to_row()
    assert row["ttft"] == 0.1 and row["output_tokens"] == 4
    back = RequestRecord.from_row(row)
    assert back.itl == pytest.approx(records[0].itl, abs=1e-6)
    assert records[3].to_row()["chunks"] is None


def test_record_values_are_its_row_in_column_order(records: list[RequestRecord]) -> None:
    """values() is the writer thread's shortcut past to_row(): the same row, in the order
    insert_request_values takes, the chunks blob byte for byte (list and array packing)."""
    from harness.store.writer import REQUEST_COLUMNS

    for rec in records:
        row = rec.to_row()
        assert rec.values() == tuple(row[c] for c in REQUEST_COLUMNS)
    times = [0.1, 0.15, 1234.5]
    assert pack_chunks(times) == pack_chunks(np.array(times))


def test_vectorised_itl_and_peaks_match_the_plain_definitions() -> None:
    rng = np.random.default_rng(4)
    recs = []
    for i in range(200):
        gaps = rng.exponential(0.02, size=int(rng.integers(1, 30)))
        recs.append(rec(i, list(0.1 + np.cumsum(gaps)), len(gaps), 10,
                        sent=float(rng.uniform(0, 5))))
    s = summarize(recs, 6.0)
    plain = np.concatenate([r.itl for r in recs]) * 1000
    assert s.itl.n == plain.size
    assert s.itl.mean == pytest.approx(float(plain.mean()))
    assert s.itl.p99 == pytest.approx(float(np.percentile(plain, 99)))
    events = sorted([(r.sent or 0.0, 1) for r in recs]
                    + [((r.sent or 0.0) + (r.e2el or 0.0), -1) for r in recs])
    cur = peak = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    assert s.max_concurrent_requests == peak
    t_min = min(r.sent or 0.0 for r in recs)
    buckets: dict[int, int] = {}
    for r in recs:
        for t in r.chunk_times:
            k = int((r.sent or 0.0) + t - t_min)
            buckets[k] = buckets.get(k, 0) + 1
    assert s.max_output_tokens_per_s == max(buckets.values())
