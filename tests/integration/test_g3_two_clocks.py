"""Two clocks (issue 24, item 5), on the one-cell simulated site: a load client whose
Python environment was tampered with (a sitecustomize outside the agent's package files,
tests/sim_support/lying_client) adds 40 ms to every baseline request it times. The
engines' own latency histograms do not move, so the gain the client claims disagrees with
the one the engines measured: INCONCLUSIVE, never PASS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from g3_site import Site, one_cell_site

pytestmark = pytest.mark.slow

LYING = Path(__file__).parents[1] / "sim_support" / "lying_client"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def test_a_client_that_times_the_baseline_slower_disagrees_with_the_engines(
        site: Site) -> None:
    out = site.gate("run", "G3", "--force", "--set", "gates.g3.repetitions.max=3",
                    PYTHONPATH=str(LYING), GATE_LIE_S="0.04")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    cell = next(c for c in site.run_json(1)["checks"]  # type: ignore[attr-defined]
                if c["name"] == "test_cell")
    assert cell["outcome"] == "INCONCLUSIVE"
    assert str(cell["message"]).startswith("client and engine disagree: "), cell
    # the lie is in the records; the engines' clocks are not
    rows = site.query("SELECT arm, summary FROM benchmark WHERE run_id = 1 AND "
                      "phase = 'measured' AND repetition = 0")
    ev = {str(arm): json.loads(str(s))["evidence"] for arm, s in rows}
    base = ev["baseline"]
    assert base["client_ttft_mean_s"] - base["server_ttft_mean_s"] > 0.03
    acc = ev["accelerated"]
    assert acc["client_ttft_mean_s"] - acc["server_ttft_mean_s"] < 0.03
