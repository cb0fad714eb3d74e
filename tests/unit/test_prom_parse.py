"""parse_metrics / histograms / cache_evidence on captured vLLM and LMCache /metrics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.probes.prometheus import (
    cache_evidence,
    delta_buckets,
    histogram_quantile,
    parse_metrics,
    snapshot_samples,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "prom"
IDLE = FIX / "vllm-metrics_er0080_v0.25.1_idle.prom"


def text(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(FIX.glob("*.prom")), ids=lambda p: p.name)
def test_every_fixture_parses(path: Path) -> None:
    snap = parse_metrics(path.read_text(encoding="utf-8"), source=path.name)
    assert snap.samples, path.name
    assert snap.skipped == 0
    assert all(s.name for s in snap.samples)


def test_vllm_idle_families_and_values() -> None:
    snap = parse_metrics(IDLE.read_text(encoding="utf-8"))
    assert snap.value("vllm:prefix_cache_queries") == 0.0  # resolves to _total
    assert snap.value("vllm:prefix_cache_queries_total") == 0.0
    assert snap.value("vllm:kv_cache_usage_perc", model_name="opt-125m-tp2") == 0.0
    assert snap.value("vllm:num_requests_waiting_by_reason", reason="capacity") == 0.0
    assert snap.by_label("vllm:prompt_tokens_by_source", "source") == {
        "local_compute": 0.0, "local_cache_hit": 0.0, "external_kv_transfer": 0.0}
    assert snap.value("process_open_fds") == 49.0
    assert snap.value("python_gc_collections", generation="2") == 9.0
    assert snap.value("vllm:gpu_prefix_cache_hit_rate") is None  # removed in V1
    assert snap.types["vllm:time_to_first_token_seconds"] == "histogram"
    assert snap.value("vllm:cache_config_info", num_gpu_blocks="25028") == 1.0


def test_histogram_quantile_on_real_buckets() -> None:
    snap = parse_metrics(IDLE.read_text(encoding="utf-8"))
    # one /v1/models request, every bucket from le=0.01 holds it
    assert snap.quantile("http_request_duration_highr_seconds", 0.5) == pytest.approx(0.005)
    assert snap.quantile("vllm:time_to_first_token_seconds", 0.5) is None  # idle: empty


def test_partial_histogram_without_inf_bucket() -> None:
    snap = parse_metrics(text("lmcache-metrics_issue729_time-to-retrieve-histogram_PARTIAL.prom"))
    b = snap.buckets("lmcache:time_to_retrieve", worker_id="0")
    assert b[0] == (0.001, 1.0) and b[-1] == (0.25, 2.0)
    assert snap.quantile("lmcache:time_to_retrieve", 0.5) == pytest.approx(0.001)
    assert snap.quantile("lmcache:time_to_retrieve", 0.75) == pytest.approx(0.003)
    assert snap.value("lmcache:time_to_retrieve_sum") == pytest.approx(0.0019474029541015625)


def test_histogram_quantile_rules() -> None:
    assert histogram_quantile(0.5, []) is None
    buckets = [(0.1, 10.0), (0.2, 20.0), (float("inf"), 40.0)]
    assert histogram_quantile(0.25, buckets) == pytest.approx(0.1)
    assert histogram_quantile(0.375, buckets) == pytest.approx(0.15)
    assert histogram_quantile(0.9, buckets) == pytest.approx(0.2)  # +Inf bucket -> last bound


def test_lmcache_excerpts() -> None:
    four = parse_metrics(text("lmcache-metrics_pr1300_lookup-4workers_PARTIAL.prom"))
    assert four.sum("lmcache:num_lookup_requests") == 8.0
    assert four.value("lmcache:num_lookup_requests", worker_id="3") == 2.0
    api = parse_metrics(text("lmcache-metrics_pr1318_internal-api-server_PARTIAL.prom"))
    assert api.value("lmcache:num_retrieve_requests") == 0.0
    assert api.value("lmcache:num_requested_tokens") is None  # excerpt cut before the sample
    inv = parse_metrics(text("lmcache-metrics_pr1100_in-vllm-metrics_PARTIAL.prom"))
    assert inv.value("lmcache:num_hit_tokens") == 0.0


def test_damaged_line_is_skipped_not_fatal() -> None:
    damaged = IDLE.read_text(encoding="utf-8") + 'vllm:broken{engine="0",model_name="x\n'
    snap = parse_metrics(damaged)
    assert snap.skipped == 1
    assert snap.value("process_open_fds") == 49.0


def _set(t: str, metric: str, value: float, extra: str = "") -> str:
    pat = re.compile(rf'^({re.escape(metric)}{{[^}}]*{extra}[^}}]*}}) \S+$', re.M)
    out, n = pat.subn(lambda m: f"{m.group(1)} {value}", t)
    assert n >= 1, metric
    return out


def busy_text() -> str:
    t = IDLE.read_text(encoding="utf-8")
    for metric, v in (("vllm:prompt_tokens_total", 8000), ("vllm:prefix_cache_queries_total", 8000),
                      ("vllm:prefix_cache_hits_total", 6000),
                      ("vllm:external_prefix_cache_queries_total", 2000),
                      ("vllm:external_prefix_cache_hits_total", 1500)):
        t = _set(t, metric, v)
    for src, v in (("local_compute", 500), ("local_cache_hit", 6000),
                   ("external_kv_transfer", 1500)):
        t = _set(t, "vllm:prompt_tokens_by_source_total", v, f'source="{src}"')
    return t


def test_cache_evidence_deltas() -> None:
    before = parse_metrics(IDLE.read_text(encoding="utf-8"), source="http://e:8000")
    after = parse_metrics(busy_text(), source="http://e:8000")
    ev = cache_evidence(before, after)
    assert (ev.prompt_tokens, ev.prefix_queries, ev.prefix_hits) == (8000, 8000, 6000)
    assert (ev.external_queries, ev.external_hits) == (2000, 1500)
    assert ev.by_source == {"local_compute": 500, "local_cache_hit": 6000,
                            "external_kv_transfer": 1500}
    assert ev.external_hit_share == pytest.approx(1500 / 8000)
    assert ev.prefix_hit_share == pytest.approx(0.75)
    assert ev.exposes_external and not ev.counter_reset
    assert ev.lmcache_hit_tokens is None
    rows = ev.to_samples("http://e:8000", 1.0)
    share = [r for r in rows if r["metric"] == "evidence:external_hit_share"]
    assert share and share[0]["value"] == pytest.approx(0.1875)


def test_counter_reset_counts_from_zero() -> None:
    ev = cache_evidence(parse_metrics(busy_text()), parse_metrics(IDLE.read_text("utf-8")))
    assert ev.counter_reset
    assert ev.prefix_hits == 0.0


def test_lmcache_families_in_vllm_metrics() -> None:
    both = IDLE.read_text("utf-8") + text("lmcache-metrics_pr1100_in-vllm-metrics_PARTIAL.prom")
    after = both.replace('lmcache:num_hit_tokens_total{model_name="/mnt/models/Qwen-2.5-0.5b",'
                         'worker_id="0"} 0.0', 'lmcache:num_hit_tokens_total{model_name='
                         '"/mnt/models/Qwen-2.5-0.5b",worker_id="0"} 4096.0')
    ev = cache_evidence(parse_metrics(both), parse_metrics(after))
    assert ev.lmcache_hit_tokens == 4096.0 and ev.lmcache_requested_tokens == 0.0
    no_external = parse_metrics(text("lmcache-metrics_pr1300_lookup-4workers_PARTIAL.prom"))
    assert cache_evidence(no_external, no_external).exposes_external


def test_lmcache_worker_copies_count_once() -> None:
    """LMCache under TP4 exports the same totals on each worker (the real capture: 2.0 on
    workers 0-3); summed, hit tokens would be four times the tokens the tier served."""
    four = parse_metrics(text("lmcache-metrics_pr1300_lookup-4workers_PARTIAL.prom"))
    assert four.value("lmcache:num_lookup_requests") == 8.0
    assert four.value("lmcache:num_lookup_requests", copies="worker_id") == 2.0

    def tp4(hit: float, model: str = "m") -> str:
        return "".join(f'lmcache:num_hit_tokens_total{{model_name="{model}",worker_id="{w}"}} '
                       f"{hit}\n" for w in range(4))

    before = parse_metrics(tp4(1024.0))
    after = parse_metrics(tp4(5120.0))
    assert cache_evidence(before, after).lmcache_hit_tokens == 4096.0
    # Copies collapse per model: two models' counts still add up.
    both = parse_metrics(tp4(5120.0) + tp4(1000.0, model="other"))
    assert both.value("lmcache:num_hit_tokens", copies="worker_id") == 6120.0


def test_delta_buckets_and_series_rows() -> None:
    before = parse_metrics(IDLE.read_text("utf-8"))
    d = delta_buckets(before, before, "http_request_duration_highr_seconds")
    assert d and all(c == 0.0 for _, c in d)
    rows = snapshot_samples(before, "http://e:8000")
    names = {r["metric"] for r in rows}
    assert "vllm:kv_cache_usage_perc" in names
    assert "vllm:prefix_cache_hits_total" in names
    assert not any(n.endswith("_created") for n in names)
    assert all(r["source"] == "http://e:8000" for r in rows)
