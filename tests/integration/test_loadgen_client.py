"""The load generator against a real vLLM-shaped streaming server on loopback."""

from __future__ import annotations

import asyncio
import itertools
import socket

import pytest
from loadgen_support.server import ServerConfig, free_port, running_server

from harness.errors import EndpointError, UsageError
from harness.loadgen import (
    Endpoint,
    RequestRecord,
    RequestSpec,
    doc_qa,
    probe,
    require_model,
    run_phase,
    run_phase_async,
)
from harness.loadgen.sampler import MetricsSampler
from harness.probes.prometheus import cache_evidence, scrape

MODEL = "test-model"


def specs(n: int, prompt: str = "hello world", max_tokens: int = 8) -> list[RequestSpec]:
    return [RequestSpec(prompt, max_tokens, i) for i in range(n)]


FAULTS = {
    "http_400": ("http_400", 400), "http_503": ("http_503", 503), "cut": ("cut", 200),
    "bad_json": ("bad_chunk", 200), "empty": ("no_text", 200),
    "no_choices": ("no_choices", 200), "stream_error": ("stream_error", 200),
    "no_done": ("cut", 200),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_a_record_and_the_run_goes_on(fault: str) -> None:
    kind, status = FAULTS[fault]
    with running_server(ServerConfig(faults={2: fault})) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(6), concurrency=1, progress=False)
    assert len(res.records) == 6
    bad = [r for r in res.records if not r.ok]
    assert [r.idx for r in bad] == [2]
    assert (bad[0].error_kind, bad[0].status) == (kind, status)
    assert bad[0].error
    assert res.summary.completed == 5 and res.summary.failed_by_kind == {kind: 1}
    assert res.summary.ttft.n == 5


def test_completions_record_every_chunk_and_usage() -> None:
    with running_server(ServerConfig(itl=0.002)) as (url, srv):
        res = run_phase([Endpoint(url, MODEL)], specs(4, max_tokens=6), concurrency=2,
                        progress=False)
    for r in res.records:
        assert r.ok and r.status == 200 and r.usage_reported
        assert r.output_tokens == 6 and r.prompt_tokens == 2
        assert len(r.chunk_times) == 6
        assert r.ttft == r.chunk_times[0] == r.ttft_text and r.e2el == r.chunk_times[-1]
        # ITL is the gap between consecutive chunks. How long the gaps are is the
        # scheduler's business on a busy host (two chunks can land in one read).
        assert r.itl == pytest.approx([b - a for a, b in itertools.pairwise(r.chunk_times)])
        assert len(r.itl) == 5 and all(g >= 0 for g in r.itl)
        assert r.sent is not None and r.sent >= r.scheduled
    body = srv.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 6


def test_chat_ttft_is_the_role_chunk_and_text_comes_after() -> None:
    with running_server(ServerConfig(ttft=0.5, role_early=True)) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(2, max_tokens=4), concurrency=1,
                        api="chat", progress=False)
    for r in res.records:
        assert r.ok
        assert len(r.chunk_times) == 5  # role chunk + 4 tokens, all have `choices`
        assert r.ttft is not None and r.ttft_text is not None
        # vLLM's TTFT is the role-only chunk, sent 0.5 s before the text (a margin a
        # busy host's scheduling stalls do not eat)
        assert r.ttft_text - r.ttft >= 0.1
        assert r.output_tokens == 4  # from usage, not from chunks


def test_usage_missing_is_counted_and_flagged() -> None:
    with running_server(ServerConfig(faults={0: "no_usage"})) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(2, max_tokens=5), concurrency=1,
                        progress=False)
    r0, r1 = res.records
    assert r0.ok and not r0.usage_reported and r0.output_tokens == 5
    assert r1.usage_reported
    assert res.summary.usage_missing == 1


def test_one_megabyte_event() -> None:
    with running_server(ServerConfig(faults={0: "huge"})) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(1, max_tokens=3), concurrency=1,
                        progress=False)
    assert res.records[0].ok and len(res.records[0].chunk_times) == 3


def test_unreachable_server_mid_phase_is_a_connect_record() -> None:
    port = free_port()
    res = run_phase([Endpoint(f"http://127.0.0.1:{port}", MODEL)], specs(2), concurrency=2,
                    progress=False, timeout=5)
    assert {r.error_kind for r in res.records} == {"connect"}
    assert res.summary.completed == 0


def test_timeout_is_a_record() -> None:
    with running_server(ServerConfig(ttft=3.0)) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(1), concurrency=1, progress=False,
                        timeout=0.5)
    assert res.records[0].error_kind == "timeout"


def test_two_instances_split_by_document_and_summed() -> None:
    with running_server() as (u0, s0), running_server() as (u1, s1):
        eps = [Endpoint(u0, MODEL, 0), Endpoint(u1, MODEL, 1)]
        res = run_phase(eps, specs(10), concurrency=4, progress=False)
    assert s0.arrivals == 5 and s1.arrivals == 5
    assert all(r.instance == r.doc_id % 2 for r in res.records)
    assert set(res.per_instance) == {0, 1}
    total = sum(p.request_throughput for p in res.per_instance.values())
    assert total == pytest.approx(res.summary.request_throughput)
    assert res.per_instance[0].completed == 5


def test_warmup_runs_first_is_kept_and_excluded() -> None:
    batches: list[list[RequestRecord]] = []
    with running_server() as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(8), concurrency=2, warmup=3,
                        progress=False, on_batch=batches.append)
    warm = [r for r in res.records if r.warmup]
    assert [r.idx for r in warm] == [0, 1, 2]
    last_warm_end = max((r.sent or 0) + (r.e2el or 0) for r in warm)
    assert all((r.sent or 0) >= last_warm_end for r in res.records if not r.warmup)
    assert res.summary.completed == 5 and res.summary.warmup_excluded == 3
    assert sorted(r.idx for b in batches for r in b) == list(range(8))


def test_open_loop_keeps_scheduled_and_shows_queueing() -> None:
    with running_server(ServerConfig(ttft=0.2)) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(6), concurrency=1, rate=50.0,
                        arrival="constant", progress=False)
    sched = [r.scheduled for r in res.records]
    assert sched == sorted(sched)
    gaps = [b - a for a, b in itertools.pairwise(sched)]
    assert all(g == pytest.approx(0.02, abs=0.005) for g in gaps)
    # one slot, 0.2 s per request: the later ones waited, and the records say so
    assert res.records[-1].queue is not None and res.records[-1].queue > 0.5
    assert res.summary.queue.p99 > 500


def test_duration_limits_the_phase() -> None:
    with running_server(ServerConfig(ttft=0.05)) as (url, _):
        res = run_phase([Endpoint(url, MODEL)], specs(1000), concurrency=2, duration=0.3,
                        progress=False)
    assert 2 <= len(res.records) < 40
    assert res.wall_time < 2


def test_doc_qa_calibrates_exactly_through_tokenize() -> None:
    with running_server() as (url, _):
        wl = doc_qa(3, 700, 30, seed=5, tokenize_url=url, model=MODEL, max_tokens=4)
        assert wl.calibrated and wl.exact
        assert [s.prompt_tokens for s in wl.specs] == [730, 730, 730]
        res = run_phase([Endpoint(url, MODEL)], wl.specs, concurrency=3, progress=False)
    assert [r.prompt_tokens for r in res.records] == [730, 730, 730]  # usage agrees


def test_doc_qa_without_tokenize_route_is_an_estimate() -> None:
    with running_server(ServerConfig(tokenizer=False)) as (url, _):
        wl = doc_qa(2, 200, 10, seed=5, tokenize_url=url, model=MODEL)
    assert not wl.calibrated and any("no tokenize" in n for n in wl.notes)


def test_probe_reads_the_model_card() -> None:
    cfg = ServerConfig(max_model_len=4096, extra_card={"gate_sim": {"tp": 4}})
    with running_server(cfg) as (url, _):
        info = asyncio.run(probe(url + "/v1/"))
    assert info.models == [MODEL] and info.max_model_len == 4096
    assert info.version == "0.0.0-test" and info.raw["gate_sim"] == {"tp": 4}
    assert require_model(info, MODEL)["id"] == MODEL
    with pytest.raises(UsageError, match="it serves: test-model"):
        require_model(info, "other/model")


def test_probe_errors_before_any_load() -> None:
    with pytest.raises(EndpointError, match="unreachable"):
        asyncio.run(probe(f"http://127.0.0.1:{free_port()}", timeout=2))
    with running_server(ServerConfig(openai=False)) as (url, _), \
            pytest.raises(EndpointError, match="not an OpenAI-compatible"):
        asyncio.run(probe(url))
    with socket.socket() as s:  # accepts, never answers
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(EndpointError, match="no answer"):
            asyncio.run(probe(f"http://127.0.0.1:{s.getsockname()[1]}", timeout=0.5))


def test_metrics_evidence_local_then_external_after_restart() -> None:
    import urllib.request

    with running_server(ServerConfig(external_tier=True)) as (url, srv):
        wl = doc_qa(2, 320, 0, seed=2)
        ep = [Endpoint(url, MODEL)]
        with MetricsSampler([url], interval=0.05) as warm:
            run_phase(ep, wl.specs, concurrency=2, progress=False)
        ev_warm = warm.scrapes[0].evidence()
        assert ev_warm is not None and ev_warm.prefix_hits == 0
        assert ev_warm.external_hit_share == 0.0
        urllib.request.urlopen(urllib.request.Request(url + "/_restart", method="POST"))
        before = scrape(url)
        run_phase(ep, wl.specs, concurrency=2, progress=False)
        after = scrape(url)
    ev = cache_evidence(before, after)
    assert ev.exposes_external
    assert ev.prefix_hits == 0  # the GPU cache went with the restart
    assert ev.external_hits is not None and ev.external_hits > 500
    assert ev.external_hit_share is not None and ev.external_hit_share > 0.9
    assert ev.lmcache_hit_tokens == ev.external_hits
    assert srv.arrivals == 4


def test_a_failing_store_stops_the_phase_with_its_error() -> None:
    calls: list[int] = []

    def broken(batch: list[RequestRecord]) -> None:
        calls.append(len(batch))
        raise RuntimeError("disk full")

    with running_server(ServerConfig(ttft=0.01)) as (url, _), \
            pytest.raises(RuntimeError, match="disk full"):
        run_phase([Endpoint(url, MODEL)], specs(400), concurrency=2, progress=False,
                  on_batch=broken)
    assert calls


def test_the_pre_phase_heap_is_frozen_only_while_the_phase_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A full garbage collection of the harness's heap stops the loop ~90 ms (in someone's
    TTFT): during a phase the heap from before it is out of the collector's reach
    (benchmarks/gc_pause.py measures the stalls), and it is handed back afterwards, also
    when the phase fails."""
    import gc

    seen: list[int] = []
    before = gc.get_freeze_count()
    with running_server(ServerConfig(ttft=0.01)) as (url, _):
        asyncio.run(run_phase_async(  # batch_size 1: rows are handed over during the phase
            [Endpoint(url, MODEL)], doc_qa(6, 50, 0, seed=1).specs, concurrency=2,
            progress=False, batch_size=1,
            on_batch=lambda rows: seen.append(gc.get_freeze_count())))
    assert len(seen) >= 3 and max(seen) > before
    assert gc.get_freeze_count() == before
    import harness.loadgen.engine as engine

    def broken_session(timeout: float, concurrency: int) -> None:
        raise RuntimeError("session failed inside the phase")

    monkeypatch.setattr(engine.client, "new_session", broken_session)
    with pytest.raises(RuntimeError, match="inside the phase"):
        run_phase([Endpoint("http://127.0.0.1:9", MODEL)], doc_qa(2, 50, 0, seed=1).specs,
                  concurrency=1, progress=False)
    assert gc.get_freeze_count() == before
