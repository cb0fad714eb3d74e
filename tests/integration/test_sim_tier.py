"""The KV tier across real engine processes: a cold restart empties the GPU prefix cache
and keeps the tier, --tier-reset empties it, two instances share one tier dir, the
modelled I/O lands in the diskstats file, and less bandwidth means a longer TTFT."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import aiohttp
from sim_support import document, engine, metrics, post_json, stream, total

from harness.probes.diskstats import parse_diskstats
from harness.sim.control import engine_url, restart_engine, start_engine, stop_engine
from harness.sim.profiles import get_profile
from harness.sim.spec import EngineSpec

BPT = get_profile("r1-qwen32b").kv_bytes_per_token


def _ask(url: str, prompt: str, max_tokens: int = 2) -> float:
    """One streamed request; its TTFT (s)."""
    async def main() -> float:
        async with aiohttp.ClientSession() as s:
            r = await stream(s, url, {"prompt": prompt, "max_tokens": max_tokens})
        assert r.done and r.ttft is not None, r.error
        return r.ttft

    return asyncio.run(main())


def _stored(url: str, requests: int) -> dict[str, object]:
    """The engine's metrics once its write-behind committed `requests` stores to the tier
    (it commits after the modelled write time, on the engine's own loop: a busy machine
    answers the next request first)."""
    import time

    deadline = time.monotonic() + 30
    while True:
        m = metrics(url)
        done = total(m, "lmcache:num_store_requests_total", worker_id="0")
        if done >= requests or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


def _tokens(url: str, prompt: str) -> int:
    return int(post_json(url + "/tokenize", {"prompt": prompt})[1]["count"])


def test_gpu_prefix_hits_for_a_shared_prefix(tmp_path: Path) -> None:
    doc = document(600, 1)
    with engine(EngineSpec(port=0, speed=500.0, tp=8), tmp_path / "e") as url:
        n_doc = _tokens(url, doc)
        _ask(url, doc + " first question?")
        before = metrics(url)
        _ask(url, doc + " second one?")
        hits = total(metrics(url), "vllm:prefix_cache_hits_total") - total(
            before, "vllm:prefix_cache_hits_total")
    assert n_doc // 16 * 16 - 16 <= hits <= n_doc // 16 * 16 + 16  # the document's blocks


def test_cold_restart_keeps_the_tier_and_reset_empties_it(tmp_path: Path) -> None:
    doc = document(3000, 2)
    state = tmp_path / "acc"
    spec = EngineSpec(port=0, speed=200.0, tp=8, external_tier=True, tier_dir=tmp_path / "tier")
    start_engine(spec, state)
    try:
        url = engine_url(state)
        n = _tokens(url, doc)
        _ask(url, doc)  # warm: computed, stored behind
        m = _stored(url, 1)
        assert total(m, "vllm:external_prefix_cache_queries_total") == n
        assert total(m, "vllm:external_prefix_cache_hits_total") == 0
        assert total(m, "lmcache:num_store_requests_total", worker_id="0") == 1
        _ask(url, doc)  # same process: the GPU cache answers
        m = metrics(url)
        assert total(m, "vllm:prefix_cache_hits_total") == (n - 1) // 16 * 16
        restart_engine(state)
        url = engine_url(state)
        _ask(url, doc)  # new process: GPU cache empty, the tier answers
        m = metrics(url)
        assert total(m, "vllm:prefix_cache_hits_total") == 0
        ext = total(m, "vllm:external_prefix_cache_hits_total")
        assert ext == n // 256 * 256  # whole LMCache chunks
        assert total(m, "vllm:prompt_tokens_by_source_total", source="external_kv_transfer") == ext
        assert total(m, "lmcache:num_hit_tokens_total", worker_id="0") == ext
        assert total(m, "lmcache:num_remote_read_bytes_total", worker_id="0") == ext * BPT
    finally:
        stop_engine(state)
    start_engine(replace(spec, tier_reset=True), state)
    try:
        url = engine_url(state)
        _ask(url, doc)
        assert total(metrics(url), "vllm:external_prefix_cache_hits_total") == 0
    finally:
        stop_engine(state)


def test_two_instances_share_one_tier(tmp_path: Path) -> None:
    doc = document(2000, 3)
    base = dict(port=0, speed=200.0, tp=4, external_tier=True, tier_dir=tmp_path / "tier")
    with engine(EngineSpec(instance=0, **base), tmp_path / "i0") as u0, \
            engine(EngineSpec(instance=1, **base), tmp_path / "i1") as u1:
        n = _tokens(u0, doc)
        _ask(u0, doc)  # instance 0 computes and stores
        _stored(u0, 1)  # ... behind the answer
        _ask(u1, doc)  # instance 1, another process, reads it
        m1 = metrics(u1)
        assert total(m1, "vllm:prefix_cache_hits_total") == 0
        assert total(m1, "vllm:external_prefix_cache_hits_total") == n // 256 * 256
        assert total(m1, "gate_sim_info", instance="1") == 1


def test_tier_traffic_shows_in_diskstats(tmp_path: Path) -> None:
    doc = document(3000, 4)
    disk = tmp_path / "storage" / "diskstats"
    state = tmp_path / "acc"
    start_engine(EngineSpec(port=0, speed=200.0, tp=8, external_tier=True,
                            tier_dir=tmp_path / "tier", diskstats=disk), state)
    try:
        url = engine_url(state)
        n = _tokens(url, doc)
        _ask(url, doc)
        restart_engine(state)  # the stop flushes the writes' sectors
        written = parse_diskstats(disk.read_text())["nvme9n1"].bytes_written
        assert written == n // 256 * 256 * BPT
        _ask(engine_url(state), doc)
    finally:
        stop_engine(state)
    c = parse_diskstats(disk.read_text())["nvme9n1"]
    assert c.bytes_read == n // 256 * 256 * BPT
    assert c.bytes_written == written  # nothing new to store
    assert len(disk.read_text().splitlines()) == 1


def test_half_the_bandwidth_lengthens_ttft(tmp_path: Path) -> None:
    doc = document(4000, 5)  # ~1 GB of KV: a 0.15 s read at 6.9 GB/s, twice that at half
    ttft = {}
    for gbps in (6.9, 3.45):
        spec = EngineSpec(port=0, speed=1.0, tp=1, external_tier=True, tier_read_gbps=gbps,
                          tier_dir=tmp_path / f"tier-{gbps}")
        state = tmp_path / f"e-{gbps}"
        start_engine(spec, state)
        try:
            _ask(engine_url(state), doc)
            restart_engine(state)
            ttft[gbps] = _ask(engine_url(state), doc)
        finally:
            stop_engine(state)
    assert ttft[3.45] > ttft[6.9] * 1.4


def test_tp_workers_copies_are_counted_once_as_evidence(tmp_path: Path) -> None:
    """The engine exports LMCache's totals once per TP worker, as LMCache does; the G3
    evidence must count the tier's hit tokens once, not TP times."""
    from harness.probes.prometheus import cache_evidence, scrape

    doc = document(3000, 3)
    state = tmp_path / "acc"
    spec = EngineSpec(port=0, speed=200.0, tp=4, external_tier=True, tier_dir=tmp_path / "tier")
    start_engine(spec, state)
    try:
        _ask(engine_url(state), doc)  # warm: stored behind
        restart_engine(state)
        url = engine_url(state)
        before = scrape(url + "/metrics")
        _ask(url, doc)
        after = scrape(url + "/metrics")
    finally:
        stop_engine(state)
    workers = {dict(s.labels).get("worker_id") for s in after.samples
               if s.name == "lmcache:num_hit_tokens_total"}
    assert workers == {"0", "1", "2", "3"}
    ev = cache_evidence(before, after)
    assert ev.external_hits and ev.lmcache_hit_tokens == ev.external_hits
    assert ev.external_hit_share is not None and ev.external_hit_share <= 1.0
