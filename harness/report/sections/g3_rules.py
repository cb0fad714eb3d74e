"""G3's decision rule in the report's language: said once per run, with a line for each
layout decided on fewer criteria, and per cell only what differs (its reason and the look
its intervals were taken at).

The gate stores each cell's rule as an English sentence (harness.stats.decision._rule);
repeated per cell it filled a page, and it could not be translated. The parts it is made
of are in the cell's details (looks, look_index, spending, level) and the run's config, so
the report says it again from the catalogue. A cell stored without those details (an older
harness) shows its stored sentence.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.config.decision import criteria_for
from harness.config.models import CRITERIA, G3Thresholds
from harness.report import fmt, reasons
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Table


def _details(cell: Any) -> dict[str, Any]:
    return cell.details if isinstance(cell.details, dict) else {}


def _looks(cell: Any) -> tuple[list[int], int] | None:
    """(the look plan, this cell's look index), or None when the cell did not store them."""
    d = _details(cell)
    looks, index = d.get("looks"), d.get("look_index")
    if not isinstance(looks, list) or not looks or not isinstance(index, int) \
            or not 0 <= index < len(looks):
        return None
    return [int(x) for x in looks], index


def interval_text(cell: Any, t: Translator) -> str:
    """How the cell's intervals were taken: level, look, pairs, spending, degrees of freedom."""
    found = _looks(cell)
    if found is None:
        return str(cell.rule or "—")
    level = _details(cell).get("level")
    level = level if isinstance(level, (int, float)) else float(cell.confidence)
    looks, index = found
    spending = str(_details(cell).get("spending") or "obrien-fleming")
    name = t(f"rules.spending_{spending.replace('-', '_')}") \
        if f"rules.spending_{spending.replace('-', '_')}" in t.messages else spending
    return t("rules.interval", {"level": fmt.pct(float(level), 2), "look": index + 1,
                                "looks": len(looks), "pairs": looks[index],
                                "spending": name, "df": looks[index] - 1})


def rule_lines(frames: RunFrames, cells: pd.DataFrame, th: G3Thresholds,
               t: Translator) -> list[str]:
    """The rule once for the run, then one line per layout judged on fewer criteria."""
    plans = [p for c in cells.itertuples(index=False) if (p := _looks(c)) is not None]
    if not plans:
        return []
    values = {"drop": fmt.pct(th.ttft_p50_drop), "gain": fmt.pct(th.throughput_gain),
              "band": fmt.pct(th.band_top), "max_pairs": max(p[0][-1] for p in plans)}
    lines = [t("rules.general", values)]
    raw = ((frames.run.config_json.get("gates") or {}).get("g3") or {}).get("criteria") or {}
    for layout in sorted(set(cells["layout"])):
        applied = criteria_for(raw, str(layout))
        if set(applied) != set(CRITERIA):
            names = ", ".join(t(f"rules.criterion_{c}") for c in applied) or "—"
            lines.append(t("rules.layout_only", {"layout": layout, "criteria": names}))
    return lines


def rules_table(cells: pd.DataFrame, t: Translator) -> Table:
    rows = [[str(c.layout), str(c.tier), reasons.cell(t, c), interval_text(c, t)]
            for c in cells.itertuples(index=False)]
    # no tones: its last column says how, not what was decided (the cells table does)
    return Table(columns=[t("col.layout"), t("col.tier"), t("col.reason"), t("col.intervals")],
                 rows=rows)
