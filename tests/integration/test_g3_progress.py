"""Live progress during G3 (issue 16): a line per load phase naming gate, layout, tier,
arm, pair and phase, with requests done / total, elapsed time and, once a phase has been
measured, an ETA."""

from __future__ import annotations

import re
from pathlib import Path

from g3_site import one_cell_site


def _joined(log: str) -> list[str]:
    """A log's lines with each progress line's continuation (wrapped at the width between
    its " · " parts, 4 spaces in) put back on it."""
    out: list[str] = []
    for line in log.splitlines():
        if out and line.startswith("    ") and not line.startswith("     "):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def test_g3_names_every_phase_with_elapsed_and_eta(tmp_path: Path) -> None:
    with one_cell_site(tmp_path) as site:
        # Small phases: what is tested is the lines, not the measurement.
        site.edit({"gates": {"g3": {"repetitions": {"min": 3, "max": 3}}},
                   "workload": {"min_docs": 0, "docs_per_concurrency": 2}})
        out = site.gate("run", "G3", "--force")
        again = len(site.query("SELECT id FROM event WHERE name LIKE '%measured again'"))
        phases = int(str(site.query("SELECT count(*) FROM benchmark WHERE phase IN "
                                    "('warm', 'measured')")[0][0]))
        cell = " ".join(str(m) for (m,) in site.query(
            "SELECT message FROM \"check\" WHERE name LIKE 'test_cell%'"))
    assert out.returncode in (0, 1, 2), out.stderr
    lines = [line.strip() for line in _joined(out.stderr)
             if "requests ·" in line and not line.strip().startswith("…")]
    assert re.match(r"G3 · TP8 · c=4 · (baseline|accelerated) · pair 1 · warm: 8 requests"
                    r" · 0:\d\d elapsed$", lines[0]), lines[0]
    # one line per phase that ran: 1 cell x 3 pairs x 2 arms x (warm, measured), and 4
    # more for each pair a stall had measured again (a busy machine: those are in the
    # plan too, so the ETA holds), unless a cross-check ended the cell early (a busy
    # machine can also make the client's and the engines' clocks disagree: INCONCLUSIVE)
    assert len(lines) == phases, out.stderr
    if phases != 12 + 4 * again:
        assert phases < 12 + 4 * again and ("disagree" in cell or "saturated" in cell), \
            (cell, out.stderr)
    assert "ETA" not in lines[0]
    assert re.search(r"elapsed · ETA \d+:\d\d$", lines[-1]), lines[-1]
    assert "G3 · TP8 · c=4" in out.stderr  # the cell's check line, named for people
