"""The profiles' calibration targets (docs/sim.md): each runs whole calibration cells of
the engine model, both arms, in virtual time (exact, no wall clock).

Why here and not in tests/unit: a cell is a full simulated phase, a second or two each on
a busy 2-core machine, and together they were a third of the unit tests' time.
"""

from __future__ import annotations

import pytest

from harness.sim.calibrate import cell


def test_r1_matches_the_seed_at_one_gpu() -> None:
    r = cell("r1-qwen32b", tp=1, instances=1, concurrency=16)
    assert r.base.ttft_p50 == pytest.approx(37.97, rel=0.01)
    assert r.acc.ttft_p50 == pytest.approx(9.30, rel=0.01)
    assert 0.35 <= r.gain <= 0.36


@pytest.mark.parametrize(("tp", "instances", "c"), [(8, 1, 4), (8, 1, 16), (4, 2, 8)])
def test_r1_passes_in_every_demo_cell(tp: int, instances: int, c: int) -> None:
    r = cell("r1-qwen32b", tp=tp, instances=instances, concurrency=c)
    assert r.drop > 0.70
    assert 0.34 <= r.gain <= 0.37  # inside 0.29..0.40 with room for noise


def test_r2_sits_next_to_the_threshold() -> None:
    drops = [cell("r2-moe480b", tp=8, instances=1, concurrency=c).drop for c in (4, 16)]
    assert 0.25 < drops[0] < 0.28
    assert 0.30 < drops[1] < 0.34


def test_null_gains_nothing_and_broken_baseline_is_above_the_band() -> None:
    null = cell("null", tp=8, instances=1, concurrency=8)
    assert abs(null.drop) < 0.03 and abs(null.gain) < 0.03
    broken = cell("broken-baseline", tp=8, instances=1, concurrency=8)
    assert broken.gain > 0.45 and broken.drop > 0.7
