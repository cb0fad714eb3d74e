"""G4's criteria over a soak's windows: each says PASS, STOP-LOSS (measured and missed,
naming the window or the drift) or INCONCLUSIVE (too little to judge). Pure.

The one a vendor's stack can fake most easily is that the accelerator kept doing the work:
an engine that fell back to recompute at hour 20 still answers every request. So every
window must show the engine's external-tier hits *and* the accelerator's devices reading
in proportion to them (G3's 50 % rule: device bytes >= min_device_share x hit tokens x
KV bytes per token), and both must stay at least `min_engaged_share` of the first
hour's; a window without that evidence is not engaged, and a soak that never engaged or
fell back is STOP-LOSS, never PASS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.g4 import clock_check
from harness.g4.judgement import Judgement
from harness.g4.trend import Drift, drift
from harness.loadgen.soak_windows import Evidence, Window
from harness.reasons import Reason
from harness.verdict import Verdict

# Every criterion a soak is judged on, in the order the report lists them.
CRITERIA = ("error_rate", "ttft_drift", "throughput_drift", "memory_growth", "restarts",
            "engaged", "engine_clock", "hardware")


@dataclass(frozen=True)
class Criteria:
    """Defaults a reviewer would sign (the soak's config section maps onto these)."""

    max_error_rate: float = 0.01  # per window
    max_ttft_drift_per_24h: float = 0.10  # upper bound of the TTFT p50 slope's interval
    max_throughput_drift_per_24h: float = 0.10  # the throughput slope's lower bound, negated
    max_memory_growth_per_24h: float = 0.02  # engine RSS, upper bound
    max_restarts: int = 0
    min_engaged_share: float = 0.5  # of the baseline's hits and device reads, per window
    min_device_share: float = 0.5  # device bytes / KV bytes the hits stand for (G3's rule)
    baseline_h: float = 1.0  # the first hour: the level drifts are shares of
    confidence: float = 0.95
    duration_h: float = 72.0  # the soak's: drifts are per 24 h, or per its length if shorter


# A drift criterion's words (reason.criterion.* in the catalogues say the same).
DRIFT_WORDS = {"ttft_drift": "TTFT p50 drift", "throughput_drift": "throughput drift",
               "memory_growth": "engine memory growth"}


def horizon_words(hours: float) -> str:
    """A drift's horizon in words: 24 h, or a short soak's own length (90 s, 5 min)."""
    seconds = hours * 3600
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:g} min"
    return f"{hours:g} h"


def _pct(x: float) -> str:
    return f"{x:.1%}"


def error_rate(windows: Sequence[Window], c: Criteria) -> Judgement:
    for w in windows:
        if w.requests and w.error_rate > c.max_error_rate:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(w.errors.items()))
            return Judgement("error_rate", Verdict.STOP_LOSS, Reason(
                "g4.error_rate", {"window": w.index + 1, "share": _pct(w.error_rate),
                                  "max": _pct(c.max_error_rate), "kinds": kinds}),
                f"window {w.index + 1}: {_pct(w.error_rate)} of requests failed "
                f"(> {_pct(c.max_error_rate)}: {kinds})", w.index)
    return Judgement("error_rate", Verdict.PASS, Reason(
        "g4.error_rate_ok", {"max": _pct(c.max_error_rate)}),
        f"every window at most {_pct(c.max_error_rate)} failed")


def _drift(name: str, d: Drift | None, limit: float, worse: float, better: float
           ) -> Judgement:
    """`worse` / `better`: the interval's pessimistic and optimistic ends as a growth (hi
    and lo for a rise, -lo and -hi for a fall). PASS needs the pessimistic end within the
    limit; STOP-LOSS needs even the optimistic end beyond it; an interval across the limit
    cannot tell (a soak too short or too noisy for its drift), never PASS."""
    words = DRIFT_WORDS[name]
    if d is None:
        return Judgement(name, Verdict.INCONCLUSIVE, Reason("g4.too_few_windows",
                                                            {"criterion": name}),
                         f"{words}: too few windows after the baseline to fit a trend")
    per = horizon_words(d.horizon_h)
    said = {"criterion": name, "value": _pct(d.change), "lo": _pct(d.lo), "hi": _pct(d.hi),
            "max": _pct(limit), "per": per}
    if better > limit:
        return Judgement(name, Verdict.STOP_LOSS, Reason("g4.drift", said),
                         f"{words}: {_pct(d.change)} per {per} [{_pct(d.lo)}, {_pct(d.hi)}] "
                         f"of the baseline's level, beyond {_pct(limit)}")
    if worse > limit:
        return Judgement(name, Verdict.INCONCLUSIVE, Reason("g4.drift_undecided", said),
                         f"{words}: {_pct(d.change)} per {per} [{_pct(d.lo)}, {_pct(d.hi)}]: "
                         f"the interval reaches past {_pct(limit)}, so the soak cannot tell "
                         "(too short or too noisy for this drift)")
    return Judgement(name, Verdict.PASS, Reason("g4.drift_ok", said),
                     f"{words}: {_pct(d.change)} per {per} [{_pct(d.lo)}, {_pct(d.hi)}], "
                     f"within {_pct(limit)}")


_WORSE = {Verdict.PASS: 0, Verdict.INCONCLUSIVE: 1, Verdict.STOP_LOSS: 2}


def _rise(name: str, d: Drift | None, limit: float) -> Judgement:
    return _drift(name, d, limit, d.hi if d else 0.0, d.lo if d else 0.0)


def _fall(name: str, d: Drift | None, limit: float) -> Judgement:
    return _drift(name, d, limit, -d.lo if d else 0.0, -d.hi if d else 0.0)


def _both_clocks(soak: Judgement, engines: Judgement | None) -> Judgement:
    """The soak's judgement, unless the engines' own clock says worse: then theirs, said
    as theirs (a soak on the client host may have reported a flat TTFT the engines did
    not show)."""
    if engines is None or _WORSE[engines.verdict] <= _WORSE[soak.verdict]:
        return soak
    code = {"g4.drift": "g4.drift_engine",
            "g4.drift_undecided": "g4.drift_engine_undecided"}[engines.reason.code]
    return Judgement(engines.criterion, engines.verdict, Reason(code, engines.reason.params),
                     f"by the engines' own clock: {engines.text}")


def drifts(windows: Sequence[Window], c: Criteria) -> list[Judgement]:
    """TTFT and throughput on both clocks where the gate read the engines' (the worse
    counts: harness/g4/engine_clock.py); engine memory as the soak read it."""
    hours = [w.mid_h for w in windows]

    def fit(values: list[float | None]) -> Drift | None:
        return drift(hours, values, baseline_h=c.baseline_h, confidence=c.confidence,
                     horizon_h=min(24.0, c.duration_h))

    ttft = fit([w.ttft_p50_s for w in windows])
    thr = fit([w.throughput_tps if w.requests else None for w in windows])
    rss = fit([w.evidence.engine_rss_bytes for w in windows])
    clocks = [w.evidence.engine_clock for w in windows]
    e_ttft = fit([e.ttft_mean_s if e else None for e in clocks])
    e_thr = fit([e.generation_tokens / w.length_s if e and e.generation_tokens is not None
                 else None for w, e in zip(windows, clocks, strict=True)])
    return [
        _both_clocks(_rise("ttft_drift", ttft, c.max_ttft_drift_per_24h),
                     _rise("ttft_drift", e_ttft, c.max_ttft_drift_per_24h) if e_ttft
                     else None),
        _both_clocks(_fall("throughput_drift", thr, c.max_throughput_drift_per_24h),
                     _fall("throughput_drift", e_thr, c.max_throughput_drift_per_24h)
                     if e_thr else None),
        _rise("memory_growth", rss, c.max_memory_growth_per_24h),
    ]


def restarts(windows: Sequence[Window], c: Criteria) -> Judgement:
    """The larger of two counts so far: the engine's own (its metrics) and the gate's (new
    processes on the port), never their sum: both see the same restart, a window apart."""
    metrics = processes = seen = 0
    for w in windows:
        metrics += w.evidence.engine_restarts
        processes += w.evidence.engine_changes
        seen = max(metrics, processes)
        if seen > c.max_restarts:
            return Judgement("restarts", Verdict.STOP_LOSS, Reason(
                "g4.restarts", {"window": w.index + 1, "n": seen, "max": c.max_restarts}),
                f"window {w.index + 1}: the engine restarted ({seen} > {c.max_restarts})",
                w.index)
    return Judgement("restarts", Verdict.PASS, Reason("g4.restarts_ok", {"n": seen}),
                     f"{seen} engine restarts")


def engaged(windows: Sequence[Window], c: Criteria, kv_bytes_per_token: float,
            kv_volume: bool = False) -> Judgement:
    """Every window: external-tier hits, device reads >= min_device_share of the KV they
    stand for, and both >= min_engaged_share of the baseline's mean per window.
    `kv_volume`: the GPU hosts' KV volume is declared, so its reads are held to the same
    share (the storage hosts are the vendor's: theirs alone could say anything)."""
    first = [w for w in windows if w.mid_h < c.baseline_h]
    hits0 = [w.evidence.external_hit_tokens or 0.0 for w in first]
    reads0 = [w.evidence.device_read_bytes or 0.0 for w in first]
    level_hits = sum(hits0) / len(hits0) if hits0 else 0.0
    level_reads = sum(reads0) / len(reads0) if reads0 else 0.0
    for group in _read_groups(windows):
        w = _pooled(group)
        n = len(group)
        why = _not_engaged(w, c, kv_bytes_per_token, level_hits * n, level_reads * n,
                           kv_volume)
        if why is not None:
            if n > 1:  # one sampling gap's windows, judged as one: named as a range
                why = Reason(why.code, {**why.params,
                                        "window": f"{w.index + 1}-{group[-1].index + 1}"})
            return Judgement("engaged", Verdict.STOP_LOSS, why,
                             _ENGAGED_TEXT[why.code].format(**why.params), w.index)
    return Judgement("engaged", Verdict.PASS, Reason("g4.engaged", {"n": len(windows)}),
                     f"the accelerator engaged in all {len(windows)} windows")


def _read_groups(windows: Sequence[Window]) -> list[list[Window]]:
    """Each window alone, but the windows of one sampling gap together (their device
    reads are the gap's, spread evenly: harness/g4/devices.py `spread`)."""
    groups: list[list[Window]] = []
    for w in windows:
        gap = w.evidence.spread_from
        if gap is not None and groups and groups[-1][0].evidence.spread_from == gap:
            groups[-1].append(w)
        else:
            groups.append([w])
    return groups


def _total(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


def _pooled(group: Sequence[Window]) -> Window:
    """A group of windows as one: its evidence summed (unsampled if any window was)."""
    if len(group) == 1:
        return group[0]
    first, evs = group[0], [w.evidence for w in group]
    return Window(index=first.index, start_s=first.start_s,
                  length_s=sum(w.length_s for w in group),
                  requests=sum(w.requests for w in group),
                  evidence=Evidence(
                      external_hit_tokens=_total([e.external_hit_tokens for e in evs]),
                      device_read_bytes=_total([e.device_read_bytes for e in evs]),
                      kv_volume_read_bytes=_total([e.kv_volume_read_bytes for e in evs])))


# What each g4.not_engaged_* code says (reports/i18n/en.yaml holds the same words).
_NOT = "accelerator not engaged in window {window}: "
_ENGAGED_TEXT = {
    "g4.not_engaged_unsampled": _NOT + "its external-tier hits or device reads were not "
                                       "sampled",
    "g4.not_engaged_no_hits": _NOT + "no external-tier hits",
    "g4.not_engaged_device_share": _NOT + "the devices read {read} GB, {share} of the {kv} GB "
                                          "its hits stand for (< {min})",
    "g4.not_engaged_kv_volume_share": _NOT + "the GPU hosts' KV volume read {read} GB, {share} "
                                             "of the {kv} GB its hits stand for (< {min})",
    "g4.not_engaged_hits_below": _NOT + "external-tier hits {hits} tokens, below {min} of "
                                        "the baseline's {level} per window",
    "g4.not_engaged_reads_below": _NOT + "device reads {read} GB, below {min} of the "
                                         "baseline's {level} GB per window",
}


def _not_engaged(w: Window, c: Criteria, kv_bytes_per_token: float, level_hits: float,
                 level_reads: float, kv_volume: bool) -> Reason | None:
    """Why window `w` shows no accelerator at work, or None when it does."""
    ev = w.evidence
    at = {"window": w.index + 1}  # counted from 1, as the progress line and report say
    if ev.external_hit_tokens is None or ev.device_read_bytes is None \
            or (kv_volume and ev.kv_volume_read_bytes is None):
        return Reason("g4.not_engaged_unsampled", at)
    if ev.external_hit_tokens <= 0:
        return Reason("g4.not_engaged_no_hits", at)
    kv = ev.external_hit_tokens * kv_bytes_per_token
    if ev.device_read_bytes < c.min_device_share * kv:
        return Reason("g4.not_engaged_device_share", {
            **at, "read": f"{ev.device_read_bytes / 1e9:.2f}",
            "share": f"{ev.device_read_bytes / kv:.0%}", "kv": f"{kv / 1e9:.2f}",
            "min": f"{c.min_device_share:.0%}"})
    vol = ev.kv_volume_read_bytes
    if kv_volume and vol is not None and vol < c.min_device_share * kv:
        return Reason("g4.not_engaged_kv_volume_share", {
            **at, "read": f"{vol / 1e9:.2f}", "share": f"{vol / kv:.0%}",
            "kv": f"{kv / 1e9:.2f}", "min": f"{c.min_device_share:.0%}"})
    if ev.external_hit_tokens < c.min_engaged_share * level_hits:
        return Reason("g4.not_engaged_hits_below", {
            **at, "hits": f"{ev.external_hit_tokens:.0f}", "min": f"{c.min_engaged_share:.0%}",
            "level": f"{level_hits:.0f}"})
    if ev.device_read_bytes < c.min_engaged_share * level_reads:
        return Reason("g4.not_engaged_reads_below", {
            **at, "read": f"{ev.device_read_bytes / 1e9:.2f}",
            "min": f"{c.min_engaged_share:.0%}", "level": f"{level_reads / 1e9:.2f}"})
    return None


def engine_clock(windows: Sequence[Window], client_placement: bool) -> Judgement:
    return clock_check.engine_clock(windows, client_placement=client_placement)


def judge(windows: Sequence[Window], c: Criteria, kv_bytes_per_token: float,
          kv_volume: bool = False, client_placement: bool = False) -> list[Judgement]:
    """Every criterion over the windows so far (a running soak is judged as it goes: a
    hard miss stops it early)."""
    if not windows:
        return [Judgement("windows", Verdict.ERROR, Reason("g4.no_windows"),
                          "no window was measured")]
    return [error_rate(windows, c), *drifts(windows, c), restarts(windows, c),
            engaged(windows, c, kv_bytes_per_token, kv_volume),
            engine_clock(windows, client_placement)]
