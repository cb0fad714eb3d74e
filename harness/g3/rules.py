"""Pure judgments G3 makes on what it measured: are the arms comparable (preflight
cards), was the restart cold, did the accelerated arm use the tier and the baseline not,
did too many requests fail, was every output the fixed length. Each returns the reason a
cell cannot be decided, or ''."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from harness.config.models import Evidence, G3Thresholds, Layout, SiteConfig
from harness.g3.clocks import clock_problem, engine_saw_problem, has_server_clock
from harness.g3.devices import (
    device_problem,
    number,
    numbers,
    other_tier_note,
    store_problem,
)
from harness.probes.prometheus import PROMPT_TOKENS, MetricsSnapshot
from harness.reasons import Reason
from harness.serving.cells import ARMS
from harness.serving.phases import PhaseTokens
from harness.serving.problems import JSON, JSONDict, Problem, ProblemKind


class MeasuredArm(Protocol):
    """What the evidence rules read of one arm's measured phase (harness.g3.records.ArmRep)."""

    @property
    def ttft(self) -> np.ndarray: ...
    @property
    def lengths(self) -> PhaseTokens: ...
    @property
    def evidence(self) -> JSONDict: ...
    @property
    def saturation(self) -> str: ...


def length_problem(arm: str, t: PhaseTokens, tolerance: float) -> Problem | None:
    """None when every completed response ran to the fixed length and the server's count
    agrees on all but `tolerance` of them; else why the cell cannot be decided."""
    if not t.completed:
        return None
    early = t.completed - t.at_length
    if early > tolerance * t.completed:
        kind = ProblemKind.LENGTH_NOT_FIXED
        return Problem(kind, f"{kind}: {arm} arm: {early} of {t.completed} responses did not "
                             f"end with finish_reason 'length' at {t.fixed} tokens (ignore_eos "
                             "not honoured?)",
                       Reason("g3.length_not_fixed", {"arm": arm, "early": early,
                                                      "completed": t.completed,
                                                      "fixed": t.fixed}))
    if t.disagree > tolerance * t.completed:
        kind = ProblemKind.TOKENS_DISAGREE
        return Problem(kind, f"{kind}: {arm} arm: the server's usage.completion_tokens is not "
                             f"{t.fixed} on {t.disagree} of {t.completed} responses "
                             f"(> {tolerance:.0%})",
                       Reason("g3.tokens_disagree", {
                           "arm": arm, "fixed": t.fixed, "disagree": t.disagree,
                           "completed": t.completed, "share": f"{tolerance:.0%}"}))
    return None


def check_evidence(pair: Mapping[str, MeasuredArm], rules: Evidence,
                   thresholds: G3Thresholds | None = None) -> Problem | None:
    """None when the pair's evidence is sound, else why the cell cannot be decided.
    `thresholds` scale the tolerance of the two clocks' comparison (harness.g3.clocks)."""
    acc, base = pair["accelerated"].evidence, pair["baseline"].evidence
    min_share = rules.min_external_hit_share
    for arm in ARMS:
        # A starved load generator compresses both arms toward its own limit: the ratio
        # would describe the client, not the tier.
        if pair[arm].saturation:
            kind = ProblemKind.CLIENT_SATURATED
            return Problem(kind, f"{kind}: {pair[arm].saturation} ({arm} arm)",
                           Reason("g3.client_saturated",
                                  {"arm": arm, "detail": pair[arm].saturation}))
    for arm in ARMS:
        t = pair[arm].ttft
        failed = int(np.sum(~np.isfinite(t)))
        if t.size and failed / t.size > rules.max_failed_share:
            first = pair[arm].evidence.get("first_failure")
            said = f" (first: {first})" if isinstance(first, str) else ""
            params: dict[str, str | int | float | Reason] = {
                "arm": arm, "failed": failed, "total": int(t.size),
                "share": f"{rules.max_failed_share:.0%}"}
            return Problem(ProblemKind.REQUESTS_FAILED,
                           f"{arm} arm: {failed} of {t.size} requests failed (> "
                           f"{rules.max_failed_share:.0%}): failures would bias the "
                           f"comparison{said}",
                           Reason("g3.requests_failed_first", {**params, "first": first})
                           if isinstance(first, str) else Reason("g3.requests_failed", params))
    for arm in ARMS:
        # Throughput counts output tokens: an arm that talks longer would look faster.
        problem = length_problem(arm, pair[arm].lengths, rules.max_token_disagreement)
        if problem is not None:
            if pair[arm].evidence.get("ignore_eos_sent") is False:
                why = problem.why
                if why is not None and why.code == "g3.length_not_fixed":
                    why = Reason("g3.length_not_fixed_unsent", why.params)
                return Problem(problem.kind, problem.text.replace(
                    "(ignore_eos not honoured?)", "(ignore_eos not sent: the engine's "
                    "profile does not honour it; name the engine in gate.yaml `engine:` if "
                    "it does)"), why)
            return problem
    for arm in ARMS:
        # The endpoint measured must be the engine inspected: its counters show the load.
        problem = engine_saw_problem(arm, pair[arm].evidence)
        if problem is not None:
            return problem
    if acc.get("counter_reset") or base.get("counter_reset"):
        return Problem(ProblemKind.COUNTERS_RESET, "engine counters reset during a measured "
                                                   "phase (did an engine restart?)",
                       Reason("g3.counters_reset"))
    for arm, ev in (("accelerated", acc), ("baseline", base)):
        if ev.get("cold_restart") is False:
            return Problem(ProblemKind.NOT_COLD,
                           f"{arm} arm: the restart was not cold (counters did not restart)",
                           Reason("g3.not_cold", {"arm": arm}))
        if ev.get("cold_restart") is None:
            # A restart that left the GPU prefix cache warm would make a tier look fast;
            # one nobody could verify cannot decide a cell.
            return Problem(ProblemKind.NOT_COLD,
                           f"{arm} arm: the restart could not be verified (the engine's "
                           "/metrics show neither process_start_time_seconds nor a "
                           "prompt-token counter, and its process could not be read)",
                           Reason("g3.not_verified", {"arm": arm}))
        local = numbers(ev, "by_source").get("local_cache_hit", 0.0)
        prompt = number(ev, "prompt_tokens")
        if prompt > 0 and local / prompt > rules.max_local_hit_share:
            return Problem(ProblemKind.NOT_COLD,
                           f"{arm} arm: GPU prefix cache served {local / prompt:.0%} of prompt "
                           "tokens after the restart: the restart was not cold",
                           Reason("g3.not_cold_local", {"arm": arm,
                                                        "share": f"{local / prompt:.0%}"}))
    kind = ProblemKind.NOT_EXERCISED
    if not acc.get("exposes_external"):
        if not rules.allow_storage_evidence:
            return Problem(kind, f"{kind}: no engine counter on the accelerated arm proves "
                                 "the tier was read (gates.g3.evidence.allow_storage_evidence "
                                 "lets the accelerator's devices' reads stand in)",
                           Reason("g3.no_tier_counter"))
    else:
        share = number(acc, "external_hit_share")
        if share < min_share:
            return Problem(kind, f"{kind}: external hits {share:.0%} of prompt tokens < "
                                 f"{min_share:.0%}",
                           Reason("g3.low_external_share", {"share": f"{share:.0%}",
                                                            "min": f"{min_share:.0%}"}))
    contamination = number(base, "external_hit_tokens")
    if contamination > 0:
        kind = ProblemKind.CONTAMINATED
        return Problem(kind, f"{kind}: {contamination:.0f} external hit tokens",
                       Reason("g3.contaminated_tokens", {"tokens": f"{contamination:.0f}"}))
    th = thresholds or G3Thresholds()
    return device_problem(acc, base, rules) or store_problem(acc, base) or clock_problem(
        {"baseline": base, "accelerated": acc},
        {"ttft": th.ttft_p50_drop, "e2e": th.throughput_gain})


# Words said two ways: the English sentence and its Reason (the report's languages).
Said = tuple[str, Reason]


def cell_notes(pairs: Sequence[Mapping[str, MeasuredArm]], *,
               client_placement: bool) -> tuple[Said | None, Said | None]:
    """What a decided cell says beside its numbers, and why its PASS would need a
    reviewer's sign-off (None: nothing to say).

    The note: a tier in front of the accelerator that served part of the cold KV (the
    worst pair's share). The sign-off: that tier's prefixes are not the accelerator's
    work, yet they count in the gain; or, with the load on the client host, an engine
    with no latency histogram leaves nothing to hold that host's timings against."""
    notes = [n for p in pairs if (n := other_tier_note(p["accelerated"].evidence))]
    worst = max(notes, key=lambda n: n[0], default=None)
    note = (worst[1], worst[2]) if worst else None
    if client_placement and any(not has_server_clock(p[arm].evidence)
                                for p in pairs for arm in ARMS):
        return note, ("PASS measured by the client host alone (load.placement: client) on "
                      "an engine with no server-side latency histogram to hold its timings "
                      "against: needs sign-off", Reason("g3.client_clock_only"))
    if worst:
        return note, (f"PASS with {worst[0]:.0%} of the cold KV served by another tier in "
                      "front of the accelerator: needs sign-off",
                      Reason("g3.other_tier_signoff", {"share": f"{worst[0]:.0%}"}))
    return note, None


def restarted(warmed: MetricsSnapshot, fresh: MetricsSnapshot) -> bool | None:
    """Did the engine really restart? Its process start time moved, or its prompt-token
    counter went back (a new process counts from zero). None: it exposes neither."""
    a, b = warmed.value("process_start_time_seconds"), fresh.value("process_start_time_seconds")
    if a is not None and b is not None and b != a:
        return True
    name = fresh.first(PROMPT_TOKENS) or warmed.first(PROMPT_TOKENS) or PROMPT_TOKENS[0]
    pa, pb = warmed.value(name), fresh.value(name)
    if pa is None or pb is None:
        return None if a is None or b is None else False
    return bool(pb < pa)


def all_restarted(warmed: list[MetricsSnapshot], fresh: list[MetricsSnapshot]) -> bool | None:
    seen = [restarted(w, f) for w, f in zip(warmed, fresh, strict=True)]
    if any(s is False for s in seen):
        return False
    return True if seen and all(seen) else None


def processes_replaced(before: Sequence[tuple[int, int] | None],
                       after: Sequence[tuple[int, int] | None]) -> bool | None:
    """Did every instance's engine process change across the restart (pid and start
    ticks, read on its host)? The fallback where the engine's /metrics tell neither its
    start time nor a prompt-token counter. False when one is the same process; None when
    one could not be read."""
    if not before or len(before) != len(after):
        return None
    if any(b is not None and b == a for b, a in zip(before, after, strict=True)):
        return False
    return True if all(b is not None and a is not None
                       for b, a in zip(before, after, strict=True)) else None


# What the servers report they serve (harness.g3.session.card): served models, model,
# max_model_len, version, tp, simulated.
Card = dict[str, JSON]


def compare_cards(config: SiteConfig, layout: Layout,
                  cards: dict[str, list[Card]]) -> list[Problem]:
    """What the servers say they serve must be equal: MODEL problems (served model,
    max_model_len, engine version) and LAYOUT problems (TP, instance count), each named."""
    problems: list[Problem] = []
    base, acc = cards.get("baseline", []), cards.get("accelerated", [])
    for key, label in (("model", "served model"), ("max_model_len", "max_model_len"),
                       ("version", "engine version"), ("engine", "engine")):
        b = sorted({str(c[key]) for c in base if c.get(key) is not None})
        a = sorted({str(c[key]) for c in acc if c.get(key) is not None})
        if b and a and b != a:
            problems.append(Problem(ProblemKind.MODEL,
                                    f"{label} differs: baseline {', '.join(b)} vs "
                                    f"accelerated {', '.join(a)}",
                                    Reason("g3.model_differs", {
                                        "what": label, "baseline": ", ".join(b),
                                        "accelerated": ", ".join(a)})))
    for arm, arm_cards in cards.items():
        for i, c in enumerate(arm_cards):
            served = [str(m) for m in c["models"]] if isinstance(c["models"], list) else []
            if config.model.name not in served:
                problems.append(Problem(ProblemKind.MODEL,
                                        f"{arm} instance {i} does not serve "
                                        f"{config.model.name} (serves "
                                        f"{', '.join(served) or 'nothing'})",
                                        Reason("g3.instance_model", {
                                            "arm": arm, "instance": i,
                                            "model": config.model.name,
                                            "serves": ", ".join(served) or "—"})))
            if c["tp"] is not None and c["tp"] != layout.tp:
                problems.append(Problem(ProblemKind.LAYOUT,
                                        f"{arm} instance {i} runs tp={c['tp']}, layout "
                                        f"{layout.name} declares tp={layout.tp}",
                                        Reason("g3.instance_tp", {
                                            "arm": arm, "instance": i, "tp": str(c["tp"]),
                                            "layout": layout.name,
                                            "declared": layout.tp})))
        if len(arm_cards) != len(layout.instances):
            problems.append(Problem(ProblemKind.LAYOUT,
                                    f"{arm}: {len(arm_cards)} instances answered, layout "
                                    f"declares {len(layout.instances)}",
                                    Reason("g3.instance_count", {
                                        "arm": arm, "answered": len(arm_cards),
                                        "declared": len(layout.instances)})))
    return problems
