"""Two clocks, and proof the engine inspected is the one that served: G3's cross-checks
of the load client against the engine's own counters.

Why: every timing G3 decides on comes from the load client, and with
`load.placement: client` that runs on a host the vendor controls; an agent that delays
only the baseline's requests would buy a gain the engines never showed. Where the engine
exports server-side latency histograms (vLLM's `vllm:time_to_first_token_seconds` and
`vllm:e2e_request_latency_seconds`, SGLang's `sglang:` twins), the A/B gain the client
measured must agree with the one the engines' own clocks show: means over the phase
(`_sum / _count` deltas: exact, where a percentile from wide buckets is not), per arm,
compared as gains. And the engine's request and prompt-token counters must show the
requests the gate sent: an endpoint whose load went to another engine (a proxy) leaves
the inspected one's counters still.

Pure functions over scrapes and records; harness.g3.session stores what they return in
the phase's evidence, so a resumed run judges the same numbers again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.loadgen.records import RequestRecord
from harness.probes.prometheus import PROMPT_TOKENS, SERVER_E2E, SERVER_TTFT, MetricsSnapshot
from harness.reasons import Reason
from harness.serving.problems import JSONDict, Problem, ProblemKind

# An A/B gain of the client and of the engines may differ by this share of the larger
# gain (or of the criterion's threshold, whichever is larger: near a null result a
# relative tolerance would be no tolerance at all).
MAX_CLOCK_DISAGREEMENT = 0.10
# The engines' counters must show the requests the gate sent within this share (a
# request the client cancelled may or may not have been counted; nothing else may
# reach a measured engine).
MAX_COUNT_DISAGREEMENT = 0.02


def _delta(before: MetricsSnapshot, after: MetricsSnapshot, name: str) -> float | None:
    a, b = before.value(name), after.value(name)
    if a is None or b is None or b < a:
        return None
    return b - a


def _histogram(befores: Sequence[MetricsSnapshot], afters: Sequence[MetricsSnapshot],
               families: Sequence[str]) -> tuple[float, float] | None:
    """(sum, count) of the first family every instance exposes, over the phase."""
    for family in families:
        total_sum = total_count = 0.0
        for before, after in zip(befores, afters, strict=True):
            s = _delta(before, after, f"{family}_sum")
            c = _delta(before, after, f"{family}_count")
            if s is None or c is None:
                break
            total_sum += s
            total_count += c
        else:
            if befores:
                return total_sum, total_count
    return None


def server_clock(befores: Sequence[MetricsSnapshot],
                 afters: Sequence[MetricsSnapshot]) -> JSONDict:
    """What the engines' own clocks and counters say of the phase (summed over the
    layout's instances): `server_ttft_mean_s`, `server_e2e_mean_s` (None: no histogram)
    and `engine_requests` (the e2e histogram's count), `engine_prompt_tokens`."""
    out: JSONDict = {}
    for key, families in (("ttft", SERVER_TTFT), ("e2e", SERVER_E2E)):
        found = _histogram(befores, afters, families)
        out[f"server_{key}_mean_s"] = found[0] / found[1] if found and found[1] > 0 else None
        if key == "e2e":
            out["engine_requests"] = found[1] if found else None
    prompt: float | None = 0.0
    for before, after in zip(befores, afters, strict=True):
        name = after.first(PROMPT_TOKENS) or before.first(PROMPT_TOKENS)
        d = _delta(before, after, name) if name else None
        prompt = None if d is None or prompt is None else prompt + d
    out["engine_prompt_tokens"] = prompt if befores else None
    return out


def client_clock(records: Sequence[RequestRecord]) -> JSONDict:
    """The client's means over the same requests the server histograms observe (those
    that completed), and how many requests it sent."""
    done = [r for r in records if r.ok and not r.warmup]
    ttft = [r.ttft for r in done if r.ttft is not None]
    e2e = [r.e2el for r in done if r.e2el is not None]
    return {"client_ttft_mean_s": float(np.mean(ttft)) if ttft else None,
            "client_e2e_mean_s": float(np.mean(e2e)) if e2e else None,
            "client_completed": len(done),
            "client_sent": sum(1 for r in records if not r.warmup and r.sent is not None)}


def _num(ev: Mapping[str, object], key: str) -> float | None:
    v = ev.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def engine_saw_problem(arm: str, ev: Mapping[str, object]) -> Problem | None:
    """None when the inspected engines counted the requests and prompt tokens the gate
    sent them (or do not count them: `has_server_clock` says so); else the endpoint the
    load went to is not the engine inspected."""
    sent, done = _num(ev, "client_sent"), _num(ev, "client_completed")
    seen = _num(ev, "engine_requests")
    kind = ProblemKind.NOT_INSPECTED
    if seen is not None and sent is not None and done is not None:
        low, high = done * (1 - MAX_COUNT_DISAGREEMENT), sent * (1 + MAX_COUNT_DISAGREEMENT)
        if not low <= seen <= high:
            return Problem(kind, f"{kind}: {arm} arm: the engines counted {seen:.0f} "
                                 f"requests in the measured phase, the gate sent {sent:.0f} "
                                 f"({done:.0f} completed): the load did not go (only) to the "
                                 "engines inspected",
                           Reason("g3.engine_requests_differ", {
                               "arm": arm, "seen": f"{seen:.0f}", "sent": f"{sent:.0f}",
                               "completed": f"{done:.0f}"}))
    tokens, client = _num(ev, "engine_prompt_tokens"), _num(ev, "client_prompt_tokens")
    if tokens is not None and client is not None and client > 0 \
            and abs(tokens - client) > MAX_COUNT_DISAGREEMENT * client:
        return Problem(kind, f"{kind}: {arm} arm: the engines counted {tokens:.0f} prompt "
                             f"tokens in the measured phase, the gate's completed requests "
                             f"hold {client:.0f}: the load did not go (only) to the engines "
                             "inspected",
                       Reason("g3.engine_tokens_differ", {
                           "arm": arm, "seen": f"{tokens:.0f}", "sent": f"{client:.0f}"}))
    return None


def _gain(measure: str, base: float, acc: float) -> float:
    """TTFT as a drop (1 - acc/base); e2e as the throughput it implies at a fixed
    concurrency (base/acc - 1), the scale of its criterion."""
    return 1.0 - acc / base if measure == "ttft" else base / acc - 1.0


def _client_error(measure: str, base: float, acc: float, err_b: float,
                  err_a: float) -> float:
    """How far the client's own known error (its event-loop lag p99 in each arm's phase:
    a ready chunk waits that long to be stamped) can move the client's gain: the first
    order bound of _gain under means off by err_b / err_a. A real site's TTFT is seconds
    and this is ~0; on a compressed simulator it is what a busy host adds, and a client
    whose error is large against what it measures is judged saturated anyway
    (harness/loadgen/health.py)."""
    if measure == "ttft":
        return err_a / base + err_b * acc / base ** 2
    return err_b / acc + err_a * base / acc ** 2


def clock_problem(pair: Mapping[str, Mapping[str, object]],
                  floors: Mapping[str, float]) -> Problem | None:
    """None when, for every latency both arms' engines report, the A/B gain of the
    engines' clock is within MAX_CLOCK_DISAGREEMENT of the client's; else INCONCLUSIVE
    "client and engine disagree". `floors`: the criterion's threshold per measure
    (ttft, e2e), the least a tolerance is relative to."""
    base, acc = pair["baseline"], pair["accelerated"]
    for measure in ("ttft", "e2e"):
        sb, sa = _num(base, f"server_{measure}_mean_s"), _num(acc, f"server_{measure}_mean_s")
        cb, ca = _num(base, f"client_{measure}_mean_s"), _num(acc, f"client_{measure}_mean_s")
        if None in (sb, sa, cb, ca) or min(v for v in (sb, sa, cb, ca) if v is not None) <= 0:
            continue
        assert sb is not None and sa is not None and cb is not None and ca is not None
        client, server = _gain(measure, cb, ca), _gain(measure, sb, sa)
        scale = max(abs(client), abs(server), floors.get(measure, 0.0))
        known = _client_error(measure, cb, ca, _num(base, "client_lag_p99_s") or 0.0,
                              _num(acc, "client_lag_p99_s") or 0.0)
        if abs(client - server) > MAX_CLOCK_DISAGREEMENT * scale + known:
            kind = ProblemKind.CLOCKS_DISAGREE
            what = "TTFT drop" if measure == "ttft" else "e2e-implied throughput gain"
            return Problem(kind, f"{kind}: {what} {client:.1%} by the load client, "
                                 f"{server:.1%} by the engines' own clocks (mean "
                                 f"{measure}, client / engine: baseline {cb:.3f} / {sb:.3f} s, "
                                 f"accelerated {ca:.3f} / {sa:.3f} s; > "
                                 f"{MAX_CLOCK_DISAGREEMENT:.0%} apart beyond the client's "
                                 f"own error of {known:.1%})",
                           Reason(f"g3.clocks_disagree_{measure}", {
                               "client": f"{client:.1%}", "server": f"{server:.1%}",
                               "cb": f"{cb:.3f}", "sb": f"{sb:.3f}", "ca": f"{ca:.3f}",
                               "sa": f"{sa:.3f}", "max": f"{MAX_CLOCK_DISAGREEMENT:.0%}",
                               "known": f"{known:.1%}"}))
    return None


def has_server_clock(ev: Mapping[str, object]) -> bool:
    return _num(ev, "server_ttft_mean_s") is not None or _num(ev, "server_e2e_mean_s") is not None
