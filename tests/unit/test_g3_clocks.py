"""Two clocks (harness/g3/clocks.py): the engines' own latency histograms and counters
against what the load client measured, on vLLM's real /metrics exposition (v0.25.1, idle,
tests/fixtures/prom/SOURCES.md) with the phase's values written into its own lines."""

from __future__ import annotations

import re
from pathlib import Path

from harness.g3.clocks import (
    client_clock,
    clock_problem,
    engine_saw_problem,
    has_server_clock,
    server_clock,
)
from harness.loadgen.records import RequestRecord
from harness.probes.prometheus import parse_metrics
from harness.serving.problems import ProblemKind

IDLE = (Path(__file__).parents[1] / "fixtures" / "prom" /
        "vllm-metrics_er0080_v0.25.1_idle.prom").read_text()


def vllm_after(requests: int, ttft_sum: float, e2e_sum: float, prompt: int) -> str:
    """The captured exposition with the phase's counts in vLLM's own sample lines."""
    text = IDLE
    for name, value in (("vllm:time_to_first_token_seconds_count", requests),
                        ("vllm:time_to_first_token_seconds_sum", ttft_sum),
                        ("vllm:e2e_request_latency_seconds_count", requests),
                        ("vllm:e2e_request_latency_seconds_sum", e2e_sum),
                        ("vllm:prompt_tokens_total", prompt)):
        text, n = re.subn(rf"^({re.escape(name)}\{{[^}}]*\}}) \S+$", rf"\g<1> {value}", text,
                          flags=re.M)
        assert n == 1, name
    return text


def test_server_clock_reads_vllms_histograms_as_means_over_the_phase() -> None:
    before = parse_metrics(IDLE)
    after = parse_metrics(vllm_after(64, 64 * 9.3, 64 * 21.0, 64 * 32000))
    seen = server_clock([before], [after])
    assert seen["server_ttft_mean_s"] == 9.3 and seen["server_e2e_mean_s"] == 21.0
    assert seen["engine_requests"] == 64 and seen["engine_prompt_tokens"] == 64 * 32000
    assert has_server_clock(seen)
    # two instances (TP4x2) sum before the mean
    two = server_clock([before, before],
                       [after, parse_metrics(vllm_after(32, 32 * 3.0, 32 * 9.0, 1000))])
    assert two["server_ttft_mean_s"] == (64 * 9.3 + 32 * 3.0) / 96
    assert two["engine_requests"] == 96
    # an engine with no histogram (llama.cpp) has no second clock
    plain = parse_metrics("# TYPE llamacpp:prompt_tokens_total counter\n"
                          "llamacpp:prompt_tokens_total 10\n")
    none = server_clock([plain], [plain])
    assert none["server_ttft_mean_s"] is None and not has_server_clock(none)
    assert none["engine_requests"] is None and none["engine_prompt_tokens"] == 0


def rec(ttft: float, e2e: float, ok: bool = True) -> RequestRecord:
    return RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0, sent=0.0,
                         ttft=ttft if ok else None, e2el=e2e if ok else None,
                         error_kind=None if ok else "http_500")


def test_client_clock_is_the_mean_over_completed_requests() -> None:
    said = client_clock([rec(1.0, 2.0), rec(3.0, 4.0), rec(0, 0, ok=False)])
    assert said == {"client_ttft_mean_s": 2.0, "client_e2e_mean_s": 3.0,
                    "client_completed": 2, "client_sent": 3}


def arm(server_ttft: float, client_ttft: float, server_e2e: float = 20.0,
        client_e2e: float = 20.0) -> dict[str, object]:
    return {"server_ttft_mean_s": server_ttft, "client_ttft_mean_s": client_ttft,
            "server_e2e_mean_s": server_e2e, "client_e2e_mean_s": client_e2e}


FLOORS = {"ttft": 0.25, "e2e": 0.29}


def test_a_client_that_slows_only_the_baseline_disagrees_with_the_engines() -> None:
    # the seed's R1 numbers, both clocks alike (the client adds 20 ms to each request)
    honest = {"baseline": arm(37.97, 37.99), "accelerated": arm(9.30, 9.32)}
    assert clock_problem(honest, FLOORS) is None
    # the engines saw no gain; a client host that holds the baseline's requests 5 s
    # "measures" a drop of 0.12 where the engines measured none
    lying = {"baseline": arm(9.30, 14.3, 21.0, 26.0), "accelerated": arm(9.30, 9.32, 21.0, 21.0)}
    problem = clock_problem(lying, FLOORS)
    assert problem is not None and problem.kind is ProblemKind.CLOCKS_DISAGREE
    assert problem.text.startswith("client and engine disagree: TTFT drop 34.8% by the load "
                                   "client, 0.0% by the engines' own clocks")
    # near a null result the tolerance is relative to the threshold, not to ~0
    null = {"baseline": arm(10.0, 10.05), "accelerated": arm(9.9, 10.0)}
    assert clock_problem(null, FLOORS) is None
    # the e2e clock alone can disagree too (a client that stamps the last chunk late)
    slow_tail = {"baseline": arm(37.97, 37.99, 60.0, 80.0),
                 "accelerated": arm(9.30, 9.32, 40.0, 40.0)}
    problem = clock_problem(slow_tail, FLOORS)
    assert problem is not None and problem.why is not None
    assert problem.why.code == "g3.clocks_disagree_e2e"
    # an engine without histograms: nothing to compare, no problem here (the sign-off
    # for placement: client is the session's)
    assert clock_problem({"baseline": {}, "accelerated": {}}, FLOORS) is None


def test_the_engines_inspected_must_have_served_the_load() -> None:
    counted = {"client_sent": 64, "client_completed": 64, "engine_requests": 64.0,
               "client_prompt_tokens": 64 * 32000.0, "engine_prompt_tokens": 64 * 32000.0}
    assert engine_saw_problem("accelerated", counted) is None
    # a proxy sent the load to another engine: the inspected one counted nothing
    idle = {**counted, "engine_requests": 0.0, "engine_prompt_tokens": 0.0}
    problem = engine_saw_problem("accelerated", idle)
    assert problem is not None and problem.kind is ProblemKind.NOT_INSPECTED
    assert "counted 0 requests in the measured phase, the gate sent 64" in problem.text
    # somebody else's load reached the measured engine too
    busy = {**counted, "engine_prompt_tokens": 2 * 64 * 32000.0, "engine_requests": 64.0}
    problem = engine_saw_problem("baseline", busy)
    assert problem is not None and "prompt tokens" in problem.text
    # an engine that counts neither: nothing to hold against (the structural check, the
    # listener on the endpoint's port, still holds)
    assert engine_saw_problem("baseline", {"client_sent": 64, "client_completed": 64}) is None


def test_the_clients_own_known_error_is_not_a_disagreement() -> None:
    """A busy 2-core host running the simulator at speed 30 (TTFT of 13-40 ms): the
    client stamped the accelerated arm's first chunks 6 ms late, 2 ms the baseline's
    (measured in this repo's lab under load). With its event-loop lag p99 of 5 ms on
    record that is the client's known error, not a lie; with no lag on record it is not
    explained, and the cell cannot be decided."""
    busy = {"baseline": arm(0.040, 0.042, 0.113, 0.114),
            "accelerated": arm(0.013, 0.019, 0.081, 0.085)}
    unexplained = clock_problem(busy, FLOORS)
    assert unexplained is not None and "own error of 0.0%" in unexplained.text
    lagged = {k: {**v, "client_lag_p99_s": 0.005} for k, v in busy.items()}
    assert clock_problem(lagged, FLOORS) is None
    # at a real site's scale the same lag explains nothing: 5 s held on the baseline
    lying = {"baseline": {**arm(9.30, 14.3), "client_lag_p99_s": 0.005},
             "accelerated": {**arm(9.30, 9.32), "client_lag_p99_s": 0.005}}
    assert clock_problem(lying, FLOORS) is not None
