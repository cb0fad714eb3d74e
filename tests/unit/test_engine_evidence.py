"""KV-tier evidence beyond vLLM + LMCache: SGLang's HiCache storage counter, llama.cpp's
(none), and storage-side evidence only where the config allows it.

The SGLang and llama.cpp "before" scrapes are real captures (tests/fixtures/engines); the
"after" scrapes add what a phase would add. `sglang:prefetched_tokens_total` has no
published capture: its name and type are SGLang's own definition
(sglang/srt/metrics/collector.py StorageMetricsCollector), the values are ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.config.decision import weakened
from harness.config.models import Evidence
from harness.g3.preflight import exposes_external
from harness.g3.records import ArmRep
from harness.g3.rules import check_evidence, restarted
from harness.loadgen.capabilities import RouteCheck, assess, tier_families
from harness.loadgen.engines import PROFILES
from harness.probes.prometheus import cache_evidence, parse_metrics
from harness.serving.phases import PhaseTokens
from harness.serving.problems import ProblemKind

FIX = Path(__file__).parents[1] / "fixtures" / "engines"
SGLANG = (FIX / "sglang-metrics_pr1853_PARTIAL.prom").read_text()
LLAMACPP = (FIX / "llamacpp-metrics_issue13196_PARTIAL.prom").read_text()
NAME = ('name="/shared/public/elr-models/meta-llama/Llama-3.2-3B/'
        '5cc0ffe09ee49f7be6ca7c794ee6bd7245e84e60/"')


def sglang_after(prompt: float, prefetched: float | None) -> str:
    """The capture with a phase's prompt tokens added and, when HiCache has a storage
    backend, its prefetched-token counter."""
    text = SGLANG.replace(f"sglang:prompt_tokens_total{{{NAME}}} 230794.0",
                          f"sglang:prompt_tokens_total{{{NAME}}} {230794.0 + prompt}")
    if prefetched is not None:
        text += ("# HELP sglang:prefetched_tokens_total Number of prefetched prompt tokens.\n"
                 "# TYPE sglang:prefetched_tokens_total counter\n"
                 f"sglang:prefetched_tokens_total{{{NAME}}} {prefetched}\n")
    return text


def with_prefetch_zero() -> str:
    return sglang_after(0, 0.0)


def rep(evidence: dict[str, Any]) -> ArmRep:
    t = np.ones(4)
    return ArmRep(t, PhaseTokens(128, 4, 4, 0), 1.0, {"cold_restart": True, **evidence}, 1)


def test_sglang_prefetched_tokens_prove_the_tier_was_read() -> None:
    before = parse_metrics(with_prefetch_zero())
    after = parse_metrics(sglang_after(8000, 7200.0))
    ev = cache_evidence(before, after)
    assert ev.prompt_tokens == 8000 and ev.external_hits == 7200
    assert ev.exposes_external and ev.external_hit_share == 0.9
    assert exposes_external(after)
    # the baseline (no storage backend) shows no such family and no tier hits
    plain = cache_evidence(parse_metrics(SGLANG), parse_metrics(sglang_after(8000, None)))
    assert not plain.exposes_external and plain.external_hit_share is None
    assert plain.prompt_tokens == 8000
    # an SGLang restart: its prompt-token counter went back
    assert restarted(after, parse_metrics(SGLANG)) is True


def test_llamacpp_exposes_no_tier_counter_so_g3_says_so() -> None:
    snap = parse_metrics(LLAMACPP)
    assert not exposes_external(snap) and tier_families(snap.names()) == []
    ev = cache_evidence(snap, snap).to_dict()
    problem = check_evidence({"accelerated": rep(ev), "baseline": rep(ev)}, Evidence())
    assert problem is not None and problem.kind is ProblemKind.NOT_EXERCISED
    assert "no engine counter" in problem.text and "allow_storage_evidence" in problem.text


def test_storage_evidence_only_when_allowed_and_only_one_way() -> None:
    allowed = Evidence(allow_storage_evidence=True)
    kv = {"client_prompt_tokens": 64 * 32000.0, "kv_bytes_per_token": 262144.0}  # 537 GB

    def pair(acc_bytes: float, base_bytes: float, errors: tuple[str, ...] = (),
             hosts: float = 1.0) -> Any:
        return check_evidence(
            {"accelerated": rep({"storage": {"bytes_read": acc_bytes, "hosts": hosts},
                                 **kv}),
             "baseline": rep({"storage": {"bytes_read": base_bytes, "hosts": hosts},
                              "storage_errors": list(errors), **kv})}, allowed)

    assert pair(400e9, 0.0) is None
    assert pair(400e9, 1e9) is None  # a little baseline read (logs, metadata) is tolerated
    contaminated = pair(400e9, 100e9)
    assert contaminated.kind is ProblemKind.CONTAMINATED and "100.00 GB" in contaminated.text
    idle = pair(0.0, 0.0)
    assert idle.kind is ProblemKind.NOT_EXERCISED and "read nothing" in idle.text
    # a background read of a storage host is no tier read: the phase moved 537 GB of KV
    trickle = pair(4096.0, 0.0)
    assert trickle.kind is ProblemKind.NOT_EXERCISED
    assert "0% of the 536.87 GB of KV it recovered cold" in trickle.text
    # a tenth of it, the old floor, is not enough either: the devices must read half
    tenth = pair(60e9, 0.0)
    assert tenth.kind is ProblemKind.NOT_EXERCISED and "another tier (memory?) served 89%" \
        in tenth.text
    assert pair(270e9, 0.0) is None  # 50 %: the floor
    # a tier that stores KV compressed reads less: a weaker setting, and it counts
    assert pair(140e9, 0.0) is not None
    assert check_evidence(
        {"accelerated": rep({"storage": {"bytes_read": 140e9, "hosts": 1.0}, **kv,
                             "kv_compression": 2.0}),
         "baseline": rep({"storage": {"bytes_read": 0.0, "hosts": 1.0}, **kv})},
        allowed) is None
    assert [d.key for d in weakened({"gates": {"g3": {"evidence": {"kv_compression": 2}}}})] \
        == ["gates.g3.evidence.kv_compression"]
    # a baseline whose storage hosts could not be read did not read "nothing"
    blind = pair(400e9, 0.0, errors=("fx100: ssh: connection reset",))
    assert blind.kind is ProblemKind.NOT_EXERCISED and "connection reset" in blind.text
    # nothing sampled at all (no storage host): no evidence, not "read nothing"
    assert "no device of the accelerator was sampled" in pair(0.0, 0.0, hosts=0.0).text
    # the setting is a weaker one: a PASS it allowed needs a reviewer's sign-off
    raw = {"gates": {"g3": {"evidence": {"allow_storage_evidence": True}}}}
    assert [d.key for d in weakened(raw)] == ["gates.g3.evidence.allow_storage_evidence"]
    # Without the setting none of this stands in for an engine's counter.
    assert check_evidence({"accelerated": rep({"storage": {"bytes_read": 400e9,
                                                           "hosts": 1.0}, **kv}),
                           "baseline": rep({})}, Evidence()).kind is ProblemKind.NOT_EXERCISED


def test_engine_counters_need_device_reads_in_proportion_to_the_hits_they_count() -> None:
    """Counters count hits from any external tier; one in memory survives the engine's
    restart too. The accelerator's devices must have read at least half of the KV bytes
    the counted hits stand for, whatever the engine says."""
    counted = {"exposes_external": True, "external_hit_share": 0.9,
               "external_hit_tokens": 64 * 30000.0, "kv_bytes_per_token": 262144.0}  # 503 GB
    unread = {**counted, "storage": {"bytes_read": 0.0, "hosts": 1.0}}
    problem = check_evidence({"accelerated": rep(unread), "baseline": rep({})}, Evidence())
    assert problem.kind is ProblemKind.NOT_EXERCISED
    assert "devices read nothing" in problem.text
    # the review's route: a 4 KiB read every half second beside a KV store in memory
    trickle = {**counted, "storage": {"bytes_read": 4096.0 * 120, "hosts": 1.0}}
    problem = check_evidence({"accelerated": rep(trickle), "baseline": rep({})}, Evidence())
    assert problem.kind is ProblemKind.NOT_EXERCISED and "served 100%" in problem.text
    read = {**counted, "storage": {"bytes_read": 400e9, "hosts": 1.0}}
    assert check_evidence({"accelerated": rep(read), "baseline": rep({})}, Evidence()) is None
    # the baseline read from the accelerator's devices too: more than 5 % is contamination
    base = {"storage": {"bytes_read": 30e9, "hosts": 1.0}}
    problem = check_evidence({"accelerated": rep(read), "baseline": rep(base)}, Evidence())
    assert problem.kind is ProblemKind.CONTAMINATED
    # no device sampled (no host in the storage groups): the counters alone prove nothing
    problem = check_evidence({"accelerated": rep(counted), "baseline": rep({})}, Evidence())
    assert problem.kind is ProblemKind.NOT_EXERCISED
    assert "no device of the accelerator was sampled" in problem.text


def test_a_tier_in_front_of_the_accelerator_is_named() -> None:
    from harness.g3.devices import other_tier_note

    counted = {"exposes_external": True, "external_hit_tokens": 1000.0,
               "kv_bytes_per_token": 1e6}  # 1 GB cold
    assert other_tier_note({**counted, "storage": {"bytes_read": 0.95e9}}) is None
    note = other_tier_note({**counted, "storage": {"bytes_read": 0.6e9}})
    assert note is not None and note[1].startswith("another tier in front of the accelerator")
    assert note[2].params == {"share": "40%", "read": "60%"}


def test_probe_assessment_says_what_g3_can_prove() -> None:
    ok = [RouteCheck("/v1/completions", "completion (1 token)", True, usage_reported=True)]
    sglang = assess(url="u", profile=PROFILES["sglang"], version=None, why=[], models=["m"],
                    max_model_len=None, routes=ok,
                    metric_names=parse_metrics(sglang_after(1, 1.0)).names())
    assert sglang.g3_can_decide
    assert any("sglang:prefetched_tokens" in g for g in sglang.g3)
    lcp = assess(url="u", profile=PROFILES["llama-cpp-python"], version="0.3.36", why=[],
                 models=["m"], max_model_len=2048, routes=ok, metric_names=set())
    assert not lcp.g3_can_decide
    assert any("does not honour ignore_eos" in g for g in lcp.g3)
    assert lcp.evidence == ["no /metrics: no engine counters at all"]
    llama = assess(url="u", profile=PROFILES["llama.cpp"], version=None, why=[], models=["m"],
                   max_model_len=None, routes=ok, metric_names=parse_metrics(LLAMACPP).names(),
                   allow_storage_evidence=True)
    assert llama.g3_can_decide and any("storage read bandwidth" in g for g in llama.g3)


def test_g3_waits_on_the_configured_engines_health_route() -> None:
    from harness.config.loader import parse_config
    from harness.serving.arms import health_path

    base = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"
    assert health_path(parse_config(base, "gate.yaml")[0]) == "/health"
    lcp = parse_config(base + "engine: llama-cpp-python\n", "gate.yaml")[0]
    assert health_path(lcp) == "/v1/models"  # it has no /health
    ollama = parse_config(base + "engine: ollama\n", "gate.yaml")[0]
    assert health_path(ollama) == "/api/version"


MOONCAKE = (FIX / "mooncake-master-metrics_pr2422_PARTIAL.prom").read_text()


def mooncake_master(lookups: int, found: int, mem_bytes: int, ssd_bytes: int) -> str:
    """The captured master exposition with its read counters appended. The names and
    types are Mooncake's own (master_metric_manager.cpp serialize_metrics, see
    tests/fixtures/engines/SOURCES.md); the values are ours."""
    text = MOONCAKE
    for name, doc, value in (
            ("mem_cache_hit_bytes_total", "Total bytes of GetReplicaList results served "
             "from the memory pool", mem_bytes),
            ("file_cache_hit_bytes_total", "Total bytes of GetReplicaList results served "
             "from the SSD cache", ssd_bytes),
            ("valid_get_nums_", "Total number of GetReplicaList operations that returned at "
             "least one completed replica", found),
            ("total_get_nums_", "Total number of GetReplicaList operations", lookups)):
        text += f"# HELP {name} {doc}\n# TYPE {name} counter\n{name} {value}\n"
    return text


def test_mooncake_master_counters_prove_the_store_served_the_phase() -> None:
    captured = parse_metrics(MOONCAKE)
    assert captured.value("master_key_count") == 4 and not exposes_external(captured)
    before = parse_metrics(mooncake_master(100, 90, 10_000, 0))
    after = parse_metrics(mooncake_master(1100, 890, 2_010_000, 500_000))
    assert exposes_external(before)  # the counter is there even before any read
    ev = cache_evidence(before, after)
    assert (ev.store_lookups, ev.store_found, ev.store_hit_bytes) == (1000, 800, 2_500_000)
    assert ev.external_hit_share == 0.8  # no token counter: found / looked up
    assert ev.prompt_tokens is None and not ev.counter_reset
    assert cache_evidence(after, before).counter_reset  # a master restarted mid-phase


def test_mooncake_counters_are_storage_side_evidence_not_an_engines_word() -> None:
    """A store's master counts for every client and counts memory-pool hits: with an
    engine that has no tier counter (llama.cpp) it stands in only where storage-side
    evidence is allowed (a sign-off), and then its served bytes must be of the phase's
    order."""
    from harness.g3.evidence import summed_evidence

    llama = parse_metrics(LLAMACPP)
    idle = parse_metrics(mooncake_master(100, 90, 10_000, 0))
    read = parse_metrics(mooncake_master(1100, 990, 8_010_000, 0))
    acc = summed_evidence([llama, idle], [llama, read], cache_evidence, engines=1)
    assert not acc["exposes_external"] and acc["store_exposes"]
    assert acc["store_found"] == 900
    still = summed_evidence([llama, read], [llama, read], cache_evidence, engines=1)
    problem = check_evidence({"accelerated": rep(acc), "baseline": rep(still)}, Evidence())
    assert problem is not None and problem.kind is ProblemKind.NOT_EXERCISED
    assert "no engine counter" in problem.text
    allowed = Evidence(allow_storage_evidence=True)
    small = {"client_prompt_tokens": 8.0, "kv_bytes_per_token": 262144.0}  # 2 MB of KV
    disk = {"storage": {"bytes_read": 2e6, "hosts": 1.0}}
    nodisk = {"storage": {"bytes_read": 0.0, "hosts": 1.0}}
    assert check_evidence({"accelerated": rep({**acc, **small, **disk}),
                           "baseline": rep({**still, **nodisk})}, allowed) is None
    # the store's counters never stand in for the devices' reads: without them, nothing
    problem = check_evidence({"accelerated": rep({**acc, **small}), "baseline": rep(still)},
                             allowed)
    assert problem is not None and "no device of the accelerator was sampled" in problem.text
    # the store found nothing for the accelerated arm although the devices were read
    empty = summed_evidence([llama, idle], [llama, idle], cache_evidence, engines=1)
    problem = check_evidence({"accelerated": rep({**empty, **small, **disk}),
                              "baseline": rep({**still, **nodisk})}, allowed)
    assert problem is not None and "KV store found nothing" in problem.text
    # the baseline's phase found objects in the store: contaminated
    served = summed_evidence([llama, idle], [llama, read], cache_evidence, engines=1)
    problem = check_evidence({"accelerated": rep({**acc, **small, **disk}),
                              "baseline": rep({**served, **nodisk})}, allowed)
    assert problem is not None and problem.kind is ProblemKind.CONTAMINATED
    assert "KV store found 900 objects" in problem.text
