"""Live progress during G3 (issue 16): a line per load phase naming gate, layout, tier,
arm, pair and phase, with requests done / total, elapsed time and, once a phase has been
measured, an ETA."""

from __future__ import annotations

import re
from pathlib import Path

from g3_site import one_cell_site


def test_g3_names_every_phase_with_elapsed_and_eta(tmp_path: Path) -> None:
    with one_cell_site(tmp_path) as site:
        # Small phases: what is tested is the lines, not the measurement.
        site.edit({"gates": {"g3": {"repetitions": {"min": 3, "max": 3}}},
                   "workload": {"min_docs": 0, "docs_per_concurrency": 2}})
        out = site.gate("run", "G3", "--force")
        again = len(site.query("SELECT id FROM event WHERE name LIKE '%measured again'"))
    assert out.returncode in (0, 1, 2), out.stderr
    lines = [line.strip() for line in out.stderr.splitlines()
             if "requests ·" in line and not line.strip().startswith("…")]
    assert re.match(r"G3 · TP8 · c=4 · (baseline|accelerated) · pair 1 · warm: 8 requests"
                    r" · 0:\d\d elapsed$", lines[0]), lines[0]
    # 1 cell x 3 pairs x 2 arms x (warm, measured), and 4 more for each pair a stall had
    # measured again (a busy machine): those are in the plan too, so the ETA holds
    assert len(lines) == 12 + 4 * again, out.stderr
    assert "ETA" not in lines[0]
    assert re.search(r"elapsed · ETA \d+:\d\d$", lines[-1]), lines[-1]
    assert "G3 · TP8 · c=4" in out.stderr  # the cell's check line, named for people
