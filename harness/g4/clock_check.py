"""G4's `engine_clock` criterion: the soak's windows held against the engines' own counts
(harness/g4/engine_clock.py), so a soak whose window files were edited on the client
host, or whose load went to another endpoint, cannot pass. Pure.

Two things the engines know and the soak cannot change:
- a client cannot see a first token before the engine sends it, so in no window may the
  soak's mean TTFT sit below the engines' (their histogram's `_sum / _count` rise over
  the same window, the requests keyed by when their first token came);
- the engines ended the requests the soak says ended: over the windows compared, their
  e2e histogram's count lies between the soak's completed and ended requests (G3's 2 %,
  plus half a window's requests for where the gate's samples put the edges).
The first window is not compared: the warm-up's cold requests end just before it.
A disagreement is INCONCLUSIVE (which clock lies cannot be told, and neither can be
believed), never PASS. An engine with no TTFT histogram leaves the soak's clock alone: a
PASS then needs a reviewer's sign-off when the soak ran on the client host, as in G3.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.g4.judgement import Judgement
from harness.loadgen.soak_windows import Window
from harness.reasons import Reason
from harness.verdict import Verdict

# The soak's mean TTFT in a window may sit this far below the engines' (the gate's samples
# interpolate the edges: a request near one may land in the neighbour on either side).
MAX_TTFT_BELOW = 0.10
CRITERION = "engine_clock"
# The engines' request count and the soak's may differ by this share (G3's).
MAX_COUNT_DISAGREEMENT = 0.02
# At least this share of the windows must be compared (the rest not sampled).
MIN_COMPARED = 0.5


def _groups(windows: Sequence[Window]) -> list[list[Window]]:
    """Each window alone, but the windows of one sampling gap together: the engines'
    counters were read only at its ends, so only the gap as a whole can be held against
    the soak (as the devices' reads are, criteria._read_groups)."""
    groups: list[list[Window]] = []
    for w in windows:
        e = w.evidence.engine_clock
        gap = e.spread_from if e is not None else None
        last = groups[-1][-1].evidence.engine_clock if groups else None
        if gap is not None and last is not None and last.spread_from == gap:
            groups[-1].append(w)
        else:
            groups.append([w])
    return groups


def _ms(s: float) -> str:
    return f"{s * 1000:.1f}"


def engine_clock(windows: Sequence[Window], *, client_placement: bool) -> Judgement:
    """See the module docstring."""
    clocks = [w.evidence.engine_clock for w in windows]
    if not any(e is not None and e.ttft_count is not None for e in clocks):
        if client_placement:
            return Judgement(
                CRITERION, Verdict.INCONCLUSIVE, Reason("g4.client_clock_only"),
                "the engines export no TTFT histogram the gate could read: the soak's "
                "windows are measured by the client host alone (load.placement: client), "
                "with nothing to hold them against: needs sign-off", signoff=True)
        return Judgement(
            CRITERION, Verdict.PASS, Reason("g4.engine_clock_absent"),
            "the engines export no TTFT histogram: the soak's own clock alone, on the "
            "gate's machine (load.placement: local)")
    compared = 0
    seen = completed = ended = 0.0
    # the first window is left out: the warm-up's requests (every document once, cold)
    # end just before it, and the gate's samples around the soak's start cannot tell
    # their counts from the first window's
    for group in _groups(windows[1:]):
        soak_n = soak_sum = engine_sum = engine_n = 0.0
        for w in group:
            c, e = w.clock, w.evidence.engine_clock
            if c is None or e is None:
                continue
            if e.ttft_sum_s is not None and e.ttft_count is not None:
                soak_n, soak_sum = soak_n + c.first_tokens, soak_sum + c.ttft_sum_s
                engine_n, engine_sum = engine_n + e.ttft_count, engine_sum + e.ttft_sum_s
            if e.requests is not None:
                seen, completed, ended = seen + e.requests, completed + c.completed, \
                    ended + c.ended
        if soak_n <= 0 or engine_n <= 0:
            continue
        compared += len(group)
        soak, mean = soak_sum / soak_n, engine_sum / engine_n
        if soak < mean * (1 - MAX_TTFT_BELOW):
            first, last = group[0].index + 1, group[-1].index + 1
            where = str(first) if first == last else f"{first}-{last}"
            return Judgement(
                CRITERION, Verdict.INCONCLUSIVE, Reason("g4.engine_clock_ttft", {
                    "window": where, "soak": _ms(soak), "engine": _ms(mean),
                    "max": f"{MAX_TTFT_BELOW:.0%}"}),
                f"window {where}: the soak's mean TTFT {_ms(soak)} ms is below "
                f"the engines' own {_ms(mean)} ms (more than {MAX_TTFT_BELOW:.0%}): a "
                "client cannot see a first token before the engine sends it",
                group[0].index)
    if compared < MIN_COMPARED * (len(windows) - 1) or not compared:
        return Judgement(
            CRITERION, Verdict.INCONCLUSIVE, Reason("g4.engine_clock_unsampled", {
                "n": compared, "of": len(windows)}),
            f"the engines' own clock compared in {compared} of {len(windows)} windows "
            f"(< {MIN_COMPARED:.0%}): the gate could not read their /metrics around the rest")
    slack = 0.5 * ended / max(1, len(windows))
    low = completed * (1 - MAX_COUNT_DISAGREEMENT) - slack
    high = ended * (1 + MAX_COUNT_DISAGREEMENT) + slack
    if ended and not low <= seen <= high:
        return Judgement(
            CRITERION, Verdict.INCONCLUSIVE, Reason("g4.engine_clock_requests", {
                "seen": f"{seen:.0f}", "completed": f"{completed:.0f}",
                "ended": f"{ended:.0f}"}),
            f"the engines counted {seen:.0f} requests ended, the soak {completed:.0f} "
            f"completed of {ended:.0f} ended: its load did not go (only) to the engines "
            "the gate reads")
    return Judgement(
        CRITERION, Verdict.PASS, Reason("g4.engine_clock_ok", {"n": compared, "of": len(windows)}),
        f"the engines' own clock agrees with the soak in {compared} of {len(windows)} "
        "windows (TTFT, requests)")
