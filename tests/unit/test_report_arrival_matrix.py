"""The G1 host matrix never shows a plain PASS for a host with skipped or missing checks
(REVIEW-R3 F11), in English and Chinese."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pandas as pd

from harness.report.frames import RunInfo
from harness.report.i18n import translator
from harness.report.sections.arrival import matrix, planned_items


def run(status: str = "FINISHED", partial: bool = False) -> RunInfo:
    return cast(RunInfo, SimpleNamespace(status=status, partial=partial))


CHECKS = pd.DataFrame([
    {"name": "test_item", "nodeid": "test_item[gpu1-gpu]", "host": "gpu1", "outcome": "SKIPPED"},
    {"name": "test_item", "nodeid": "test_item[gpu1-nvme]", "host": "gpu1", "outcome": "PASS"},
    {"name": "test_item", "nodeid": "test_item[gpu2-nvme]", "host": "gpu2", "outcome": "PASS"},
])
FACTS = pd.DataFrame([  # the G1 suite's plan: gpu2's gpu item produced no row
    {"host": "gpu1", "key": "g1 plan", "value": {"items": ["gpu", "nvme"], "health": []}},
    {"host": "gpu2", "key": "g1 plan", "value": {"items": ["gpu", "nvme"], "health": []}},
    {"host": "gpu2", "key": "gpu serials", "value": ["1"]},
])


def rows(table: Any) -> dict[str, tuple[list[str], str]]:
    return {r[0]: (r[1:], tone) for r, tone in zip(table.rows, table.tones, strict=True)}


def test_skipped_is_no_plain_pass_and_a_planned_check_without_a_row_is_not_run() -> None:
    planned = planned_items(FACTS, "items")
    assert planned == {"gpu1": ["gpu", "nvme"], "gpu2": ["gpu", "nvme"]}
    en = rows(matrix(CHECKS, translator("en"), ("test_item",), run(), planned))
    assert en["gpu1"] == (["skipped (optional)", "PASS", "PASS (1 skipped)"], "SKIPPED")
    assert en["gpu2"] == (["not run", "PASS", "ERROR"], "ERROR")
    zh = rows(matrix(CHECKS, translator("zh"), ("test_item",), run(), planned))
    assert zh["gpu1"][0][-1] == "通过 (PASS)，1 项跳过"
    assert zh["gpu2"][0] == ["未运行 (not run)", "通过 (PASS)", "错误 (ERROR)"]
    partial = rows(matrix(CHECKS, translator("en"), ("test_item",), run(partial=True),
                          planned))
    assert partial["gpu2"][1] == "INCONCLUSIVE"  # left out on purpose: still no PASS
    growing = rows(matrix(CHECKS, translator("en"), ("test_item",), run("RUNNING"), planned))
    assert growing["gpu1"][1] == "RUNNING"  # a run in progress stays grey, "so far"
