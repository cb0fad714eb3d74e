"""/metrics names, types and label sets against the captured vLLM 0.25.1 exposition and
the LMCache excerpts (tests/fixtures/sim), parsed with prometheus_client's parser."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from harness.sim.engine import Engine, Rates
from harness.sim.metrics import Identity, build_registry, render
from harness.sim.profiles import get_profile
from harness.sim.tier import MemoryTierIndex

FIX = Path(__file__).parents[1] / "fixtures" / "sim"


def _families(text: str) -> dict[str, tuple[str, set[frozenset[str]]]]:
    """family name -> (type, label-name sets of its samples, `le` dropped)."""
    out: dict[str, tuple[str, set[frozenset[str]]]] = {}
    for fam in text_string_to_metric_families(text):
        labels = {frozenset(k for k in s.labels if k != "le") for s in fam.samples}
        out[fam.name] = (fam.type, labels)
    return out


def _exposition(tier: bool, tp: int = 1, tier_counters: bool = True) -> str:
    async def main() -> str:
        p = get_profile("r1-qwen32b")
        engine = Engine(Rates.of(p, tp), tier=MemoryTierIndex(10**6) if tier else None,
                        speed=1.0, seed=0, salt="x")
        await engine.start()
        ident = Identity("Qwen/Qwen2.5-32B-Instruct", p.name, tp, 0, tier, 50.0,
                         p.max_model_len, tier_counters)
        return render(build_registry(engine, ident)).decode()

    return asyncio.run(main())


def test_vllm_families_match_the_capture() -> None:
    ours = _families(_exposition(tier=False))
    real = _families((FIX / "vllm-metrics_er0080_v0.25.1_idle.prom").read_text())
    vllm = [n for n in ours if n.startswith("vllm:")]
    assert len(vllm) >= 25
    for name in vllm:
        assert name in real, name
        assert ours[name] == real[name], name  # cache_config_info: all 29 labels
    for must in ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
                 "vllm:external_prefix_cache_queries", "vllm:external_prefix_cache_hits",
                 "vllm:prompt_tokens_by_source", "vllm:num_requests_running",
                 "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"):
        assert must in ours


def test_tier_counters_off_hides_what_tells_a_tier_read_from_a_recompute() -> None:
    from harness.probes.prometheus import exposes_tier, parse_metrics

    hidden = _exposition(tier=True, tier_counters=False)
    names = set(_families(hidden))
    assert not exposes_tier(parse_metrics(hidden))
    assert not names & {"vllm:prompt_tokens_by_source", "vllm:prompt_tokens_cached",
                        "vllm:external_prefix_cache_hits"}
    assert not any(n.startswith("lmcache:") for n in names)
    assert {"vllm:prompt_tokens", "vllm:prefix_cache_hits"} <= names  # the rest stays
    assert exposes_tier(parse_metrics(_exposition(tier=True)))


def test_histogram_buckets_are_vllms() -> None:
    def bounds(text: str, name: str) -> list[str]:
        for fam in text_string_to_metric_families(text):
            if fam.name == name:
                return [s.labels["le"] for s in fam.samples if s.name.endswith("_bucket")]
        raise AssertionError(name)

    real = (FIX / "vllm-metrics_er0080_v0.25.1_idle.prom").read_text()
    ours = _exposition(tier=False)
    for name in ("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"):
        assert bounds(ours, name) == bounds(real, name)


def test_lmcache_only_with_the_tier_and_named_as_lmcache_does() -> None:
    assert not [n for n in _families(_exposition(tier=False)) if n.startswith("lmcache:")]
    ours = _families(_exposition(tier=True, tp=4))
    real: dict[str, tuple[str, set[frozenset[str]]]] = {}
    names = set()
    for f in FIX.glob("lmcache-*.prom"):
        text = f.read_text()
        names |= {line.split("{")[0] for line in text.splitlines() if line.startswith("lmcache:")}
        real |= _families(text)
    for n in ("lmcache:num_retrieve_requests_total", "lmcache:num_store_requests_total",
              "lmcache:num_requested_tokens_total", "lmcache:num_hit_tokens_total",
              "lmcache:num_lookup_requests_total", "lmcache:time_to_retrieve_bucket"):
        assert n in names  # the capture has it ...
        assert n.removesuffix("_total").removesuffix("_bucket") in ours  # ... and so do we
    workers = {dict(s.labels)["worker_id"] for fam in text_string_to_metric_families(
        _exposition(tier=True, tp=4)) if fam.name == "lmcache:num_hit_tokens"
        for s in fam.samples}
    assert workers == {"0", "1", "2", "3"}  # one series per TP worker, as in PR 1300
    assert ours["lmcache:num_hit_tokens"][1] == {frozenset({"model_name", "worker_id"})}


def test_the_simulator_says_so() -> None:
    for fam in text_string_to_metric_families(_exposition(tier=True)):
        if fam.name == "gate_sim_speed_factor":
            assert fam.samples[0].value == 50.0
            break
    else:
        raise AssertionError("no gate_sim_speed_factor")
