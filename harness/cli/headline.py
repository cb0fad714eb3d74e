"""The A/B gate's headline figures for the console: its lowest TTFT p50 drop and lowest
throughput gain over its cells, each with its interval and its cell.

Why from the store and by these rules: the console's last table must say the numbers
the report's page 1 shows, not a second computation of them. The cells are read as the
gate stored them; the worst is picked by harness.store.fleet.lowest (the rule `gate
fleet` and its report use) and formatted by harness.report.fmt (page 1's format).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.store.db import Store


def headline(store: Store, run_id: int) -> str:
    """"worst cell TP8 · c=32: TTFT p50 drop 41.2 % [38.0 %, 44.1 %], throughput gain
    33.0 % [30.2 %, 35.9 %]" (two cells named when the lowest drop and the lowest gain
    are not in the same one); "" when the run stored no cell."""
    from harness.report import fmt
    from harness.store.fleet import ABCell, lowest
    from harness.store.writer import cells

    stored = [ABCell(c.layout, c.tier, c.verdict, c.drop, c.drop_lo, c.drop_hi, c.gain,
                     c.gain_lo, c.gain_hi) for c in cells(store, run_id)]
    drop, gain = lowest(stored, "drop"), lowest(stored, "gain")
    if drop is None and gain is None:
        return ""

    def where(c: ABCell) -> str:
        return f"{c.layout} · c={c.tier}"

    parts = []
    if drop is not None:
        c = drop[1]
        parts.append((where(c), f"TTFT p50 drop {fmt.pct(drop[0])} "
                                f"{fmt.interval_pct(c.drop_lo, c.drop_hi)}"))
    if gain is not None:
        c = gain[1]
        parts.append((where(c), f"throughput gain {fmt.pct(gain[0])} "
                                f"{fmt.interval_pct(c.gain_lo, c.gain_hi)}"))
    if len({w for w, _ in parts}) == 1:
        return f"worst cell {parts[0][0]}: " + ", ".join(p for _, p in parts)
    return "worst cells: " + ", ".join(f"{p} at {w}" for w, p in parts)
